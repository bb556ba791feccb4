package org.nativepool.spark.ui;

import jakarta.servlet.http.HttpServletRequest;
import java.util.function.BiFunction;
import org.apache.spark.ui.SparkUITab;
import org.apache.spark.ui.UIUtils;
import org.apache.spark.ui.WebUIPage;
import scala.Option;
import scala.xml.NodeSeq;
import scala.xml.NodeSeq$;

/**
 * The Native Memory page of {@link NativeMemoryWeb}'s tab, its content inside Spark's header: the
 * one class of the plugin on Spark's web UI API, whose {@code WebUIPage.render} and {@code
 * UIUtils.headerSparkPage} differ per Spark line. Spark 3.5 serves its UI with {@code
 * javax.servlet}, Spark 4.x with {@code jakarta.servlet}, and Spark 4.2 added a parameter to {@code
 * headerSparkPage} ({@code useTimeline}), so no one class builds on every line: this class has a
 * copy per line where they differ, {@code src/main/webui-spark3.5}, {@code webui-spark4.0} (Spark
 * 4.0 and 4.1) and {@code webui-spark4.2}, identical but for the servlet import and that parameter.
 * The line's Maven profile picks one ({@code nativepool.webui.src}, the root pom.xml), which {@code
 * build-helper-maven-plugin} adds to the sources; {@code NativeMemoryWebPageCopiesTest} keeps the
 * copies alike: change all three.
 */
final class NativeMemoryWebPage extends WebUIPage {
  private static final String TITLE = NativeMemoryWeb.TAB_NAME;

  private final SparkUITab tab;
  private final BiFunction<String, String, String> content;

  /**
   * A page at {@code prefix} under the tab; {@code content} renders its HTML from the request's
   * {@value NativeMemoryWeb#JVM_PARAMETER} parameter and its remote user (Spark's authenticated
   * user; null without authentication).
   */
  NativeMemoryWebPage(
      SparkUITab tab, String prefix, BiFunction<String, String, String> content) {
    super(prefix);
    this.tab = tab;
    this.content = content;
  }

  /** The page: a {@code NodeSeq}, a {@code Seq<Node>} on Scala 2.12 and 2.13 alike. */
  @Override
  public NodeSeq render(HttpServletRequest request) {
    NodeSeq body =
        NativeMemoryWeb.body(
            content.apply(
                request.getParameter(NativeMemoryWeb.JVM_PARAMETER), request.getRemoteUser()));
    Option<String> noHelp = Option.empty();
    // no visualization, data tables or timeline scripts: the page has no script
    return NodeSeq$.MODULE$.fromSeq(
        UIUtils.headerSparkPage(request, TITLE, () -> body, tab, noHelp, false, false, false));
  }
}
