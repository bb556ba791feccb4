package org.nativepool.spark.ui;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.function.Supplier;
import org.apache.spark.ui.JettyUtils;
import org.apache.spark.ui.SparkUI;

/**
 * Serves the Native Memory page in a Spark UI, live or in the History Server, at {@value #PATH}
 * under the UI's base path (e.g. {@code http://driver:4040/nativememory/}, {@code
 * http://history:18080/history/<app id>/<attempt>/nativememory/}).
 *
 * <p>The one class of the plugin that touches the servlet API and Spark's Jetty handlers: Spark 4.x
 * uses {@code jakarta.servlet}, Spark 3.5 {@code javax.servlet}, so a build for another Spark line
 * replaces this class alone. Stateless.
 */
public final class NativeMemoryWeb {
  /** The page's path under the UI's base path. */
  public static final String PATH = "/nativememory";

  private NativeMemoryWeb() {}

  /** Attaches the page to {@code ui}; {@code page} renders it (HTML) on each request. */
  public static void attach(SparkUI ui, Supplier<String> page) {
    ui.attachHandler(JettyUtils.createServletHandler(PATH, new Page(page), ui.basePath()));
  }

  /** Answers every GET with the page. */
  private static final class Page extends HttpServlet {
    private static final long serialVersionUID = 1L;

    private final transient Supplier<String> page;

    Page(Supplier<String> page) {
      this.page = page;
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
      byte[] body = page.get().getBytes(StandardCharsets.UTF_8);
      resp.setContentType("text/html;charset=utf-8");
      resp.setContentLength(body.length);
      resp.getOutputStream().write(body);
    }
  }
}
