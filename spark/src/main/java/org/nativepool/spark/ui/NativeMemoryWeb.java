package org.nativepool.spark.ui;

import jakarta.servlet.http.HttpServletRequest;
import java.util.List;
import java.util.function.Supplier;
import org.apache.spark.ui.SparkUI;
import org.apache.spark.ui.SparkUITab;
import org.apache.spark.ui.UIUtils;
import org.apache.spark.ui.WebUIPage;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.xml.Node;
import scala.xml.Unparsed;

/**
 * Serves the Native Memory page as a tab of a Spark UI, live or in the History Server: the tab
 * {@value #TAB_NAME} in the tab bar, its page at {@value #PATH}{@code /} under the UI's base path
 * (e.g. {@code http://driver:4040/nativememory/}, {@code http://history:18080/history/<app
 * id>/[<attempt>/]nativememory/}), inside Spark's own header.
 *
 * <p>The one class of the plugin that touches the servlet API and Spark's web UI classes: Spark 4.x
 * uses {@code jakarta.servlet}, Spark 3.5 {@code javax.servlet}, so a build for another Spark line
 * replaces this class alone. Stateless.
 */
public final class NativeMemoryWeb {
  /** The page's path under the UI's base path. */
  public static final String PATH = "/nativememory";

  /** The tab's name in Spark's tab bar. */
  public static final String TAB_NAME = "Native Memory";

  private NativeMemoryWeb() {}

  /**
   * Attaches the tab to {@code ui}; {@code content} renders the page's content (HTML, {@link
   * NativeMemoryPage#content}) on each request.
   */
  public static void attach(SparkUI ui, Supplier<String> content) {
    ui.attachTab(new Tab(ui, content));
  }

  /** The tab, with its one page. */
  private static final class Tab extends SparkUITab {
    Tab(SparkUI ui, Supplier<String> content) {
      super(ui, PATH.substring(1));
      attachPage(new Page(this, content));
    }

    @Override
    public String name() {
      return TAB_NAME;
    }
  }

  /** The page: the content inside Spark's header. */
  private static final class Page extends WebUIPage {
    private final Tab tab;
    private final Supplier<String> content;

    Page(Tab tab, Supplier<String> content) {
      super("");
      this.tab = tab;
      this.content = content;
    }

    @Override
    public Seq<Node> render(HttpServletRequest request) {
      Seq<Node> body =
          CollectionConverters.asScala(List.<Node>of(new Unparsed(content.get()))).toList();
      return UIUtils.headerSparkPage(
          request, TAB_NAME, () -> body, tab, Option.empty(), false, false);
    }
  }
}
