package org.nativepool.spark.testing;

import java.io.IOException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.SparkSession;

/**
 * Spark's web UI on a free port with its PrometheusServlet at {@code /metrics/prometheus}, for the
 * tests that scrape the metrics as a Prometheus server would.
 */
public final class PrometheusUi {
  /** The UI's port. */
  public final int port;

  private PrometheusUi(int port) {
    this.port = port;
  }

  /** A UI on a port free now (Spark may not retry another: {@code spark.port.maxRetries=0}). */
  public static PrometheusUi onFreePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return new PrometheusUi(s.getLocalPort());
    }
  }

  /** Turns the UI on at {@link #port} with the PrometheusServlet sink, and returns {@code b}. */
  public SparkSession.Builder configure(SparkSession.Builder b) {
    return b.config("spark.ui.enabled", "true")
        .config("spark.ui.port", Integer.toString(port))
        .config("spark.port.maxRetries", "0")
        .config("spark.ui.prometheus.enabled", "true")
        .config(
            "spark.metrics.conf.*.sink.prometheusServlet.class",
            "org.apache.spark.metrics.sink.PrometheusServlet")
        .config("spark.metrics.conf.*.sink.prometheusServlet.path", "/metrics/prometheus");
  }

  /** The body of a GET of {@code path} on the UI. */
  public String fetch(String path) throws IOException {
    try (InputStream in = URI.create("http://localhost:" + port + path).toURL().openStream()) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
