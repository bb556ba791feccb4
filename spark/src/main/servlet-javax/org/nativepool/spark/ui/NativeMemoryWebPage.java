package org.nativepool.spark.ui;

import java.util.function.Supplier;
import javax.servlet.http.HttpServletRequest;
import org.apache.spark.ui.SparkUITab;
import org.apache.spark.ui.UIUtils;
import org.apache.spark.ui.WebUIPage;
import scala.Option;
import scala.xml.NodeSeq;
import scala.xml.NodeSeq$;

/**
 * The Native Memory page of {@link NativeMemoryWeb}'s tab: its content inside Spark's header.
 *
 * <p>The one class of the plugin on the servlet API: Spark's {@code WebUIPage.render} takes the
 * request of the servlet API the line's Spark serves its UI with, {@code jakarta.servlet} from
 * Spark 4.0 on and {@code javax.servlet} on Spark 3.5, and no one class can override both. So it
 * comes in two copies, identical but for the servlet import: {@code src/main/servlet-jakarta}
 * (Spark 4.x) and {@code src/main/servlet-javax} (Spark 3.5); the line's Maven profile picks one
 * ({@code nativepool.servlet.api}), which {@code build-helper-maven-plugin} adds to the sources. A
 * test keeps the two copies identical but for that import: change both. Everything else about the
 * page is in {@link NativeMemoryWeb} and {@link NativeMemoryPage}.
 */
final class NativeMemoryWebPage extends WebUIPage {
  private final SparkUITab tab;
  private final Supplier<String> content;

  NativeMemoryWebPage(SparkUITab tab, Supplier<String> content) {
    super("");
    this.tab = tab;
    this.content = content;
  }

  /** The page: a {@code NodeSeq}, a {@code Seq<Node>} on Scala 2.12 and 2.13 alike. */
  @Override
  public NodeSeq render(HttpServletRequest request) {
    NodeSeq body = NativeMemoryWeb.body(content);
    return NodeSeq$.MODULE$.fromSeq(
        UIUtils.headerSparkPage(
            request, NativeMemoryWeb.TAB_NAME, () -> body, tab, Option.empty(), false, false));
  }
}
