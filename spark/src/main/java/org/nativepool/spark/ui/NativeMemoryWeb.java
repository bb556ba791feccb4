package org.nativepool.spark.ui;

import java.util.function.BiFunction;
import java.util.function.Supplier;
import org.apache.spark.ui.SparkUI;
import org.apache.spark.ui.SparkUITab;
import scala.xml.NodeSeq;
import scala.xml.Unparsed;

/**
 * Serves the Native Memory page as a tab of a Spark UI, live or in the History Server: the tab
 * {@value #TAB_NAME} in the tab bar, its page at {@value #PATH}{@code /} under the UI's base path
 * (e.g. {@code http://driver:4040/nativememory/}, {@code http://history:18080/history/<app
 * id>/[<attempt>/]nativememory/}), inside Spark's own header.
 *
 * <p>The page itself, {@link NativeMemoryWebPage}, is the one class of the plugin on Spark's web UI
 * API, which differs per Spark line (the servlet API: {@code jakarta.servlet} on Spark 4.x, {@code
 * javax.servlet} on Spark 3.5; {@code UIUtils.headerSparkPage}'s parameters on 4.2): it has a copy
 * per line. This class and everything it names build unchanged on every line, Scala 2.12 and 2.13.
 * Stateless.
 */
public final class NativeMemoryWeb {
  /** The page's path under the UI's base path. */
  public static final String PATH = "/nativememory";

  /** The tab's name in Spark's tab bar. */
  public static final String TAB_NAME = "Native Memory";

  /**
   * The path of the "who holds the heap" action under the page ({@code
   * /nativememory/holders/?jvm=<id>}).
   */
  public static final String HOLDERS_PATH = "holders";

  /** The action's parameter: the JVM, an executor's id or {@code driver}. */
  public static final String JVM_PARAMETER = "jvm";

  private NativeMemoryWeb() {}

  /**
   * Attaches the tab to {@code ui}; {@code content} renders the page's content (HTML, {@link
   * NativeMemoryPage#content}) on each request.
   */
  public static void attach(SparkUI ui, Supplier<String> content) {
    attach(ui, content, null);
  }

  /**
   * Attaches the tab to {@code ui} with the "who holds the heap" action at {@value #HOLDERS_PATH}
   * (none if {@code action} is null): {@code action} takes the JVM asked for and the request's
   * remote user, and returns what the user is told (plain text).
   */
  public static void attach(
      SparkUI ui, Supplier<String> content, BiFunction<String, String, String> action) {
    ui.attachTab(new Tab(ui, content, action));
  }

  /**
   * The page's content as one node that Spark's page writes out as it is: an {@link Unparsed} is a
   * {@code Node}, hence a {@code NodeSeq} and a {@code Seq<Node>} on Scala 2.12 and 2.13 alike.
   */
  static NodeSeq body(String content) {
    return new Unparsed(content);
  }

  /** The action's answer as the page's content: its text and a link back to the page. */
  static String actionContent(String answer) {
    return "<div class=\"nativepool\"><p>"
        + SvgChart.escape(answer)
        + "</p><p><a href=\"../\">Back to the Native Memory page</a></p></div>";
  }

  /** The tab, with its page and the action's. */
  private static final class Tab extends SparkUITab {
    Tab(SparkUI ui, Supplier<String> content, BiFunction<String, String, String> action) {
      super(ui, PATH.substring(1));
      attachPage(new NativeMemoryWebPage(this, "", (jvm, user) -> content.get()));
      if (action != null) {
        attachPage(
            new NativeMemoryWebPage(
                this, HOLDERS_PATH, (jvm, user) -> actionContent(action.apply(jvm, user))));
      }
    }

    @Override
    public String name() {
      return TAB_NAME;
    }
  }
}
