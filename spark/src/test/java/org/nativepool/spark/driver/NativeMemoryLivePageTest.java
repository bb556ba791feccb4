package org.nativepool.spark.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.MetricRegistry;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.ExecutorLostFailure;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.TaskInfo;
import org.apache.spark.scheduler.TaskLocality;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.LedgerSample;
import org.nativepool.spark.testing.DriverContext;
import org.nativepool.spark.ui.NativeMemoryWeb;
import scala.Option;

/**
 * The Native Memory page in the live UI: a SparkContext with its UI on a free port, the driver side
 * fed an executor's samples and its removal as in {@code ExecutorDiagnosisDriverTest}, and the page
 * fetched over HTTP from the driver.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class NativeMemoryLivePageTest {
  private static final long MIB = 1L << 20;

  @Test
  void theDriverServesThePageWithTheExecutorsChartAndEnd() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    SparkContext sc =
        new SparkContext(
            new SparkConf()
                .setMaster("local[1]")
                .setAppName("NativeMemoryLivePageTest")
                .set("spark.ui.enabled", "true")
                .set("spark.ui.port", Integer.toString(port))
                .set("spark.port.maxRetries", "0")
                .set("spark.memory.offHeap.enabled", "true")
                .set("spark.memory.offHeap.size", "128m")
                .set("spark.executor.heartbeatInterval", "1s")
                .set(NativePoolConf.EVENT_LOG_SAMPLE_EVERY.key(), "1"));
    try {
      DriverSide driver = new DriverSide();
      driver.init(sc, new DriverContext(sc.conf(), new MetricRegistry()));
      long now = System.currentTimeMillis();
      for (int i = 10; i >= 1; i--) {
        Map<String, Long> gauges = new LinkedHashMap<>();
        gauges.put("guardLimit", 1024 * MIB);
        Map<String, Long> parts = new LinkedHashMap<>();
        parts.put("jvm.heap.committed", 256 * MIB);
        parts.put("jvm.direct", (20 + 10 * (10 - i)) * MIB);
        driver.receive(
            new ExecutorSample(
                "7",
                now - i * 1000L,
                10 - i,
                gauges,
                0,
                0,
                new LedgerSample(parts, Map.of(), 0, Map.of())));
      }
      sc.listenerBus()
          .post(new SparkListenerExecutorRemoved(now, "7", "Command exited with code 1"));
      TaskInfo info =
          new TaskInfo(
              5, 0, 0, 0, now - 5000, "7", "localhost", TaskLocality.PROCESS_LOCAL(), false);
      sc.listenerBus()
          .post(
              new SparkListenerTaskEnd(
                  2,
                  0,
                  "ResultTask",
                  new ExecutorLostFailure("7", true, Option.apply("Command exited with code 1")),
                  info,
                  null,
                  null));
      sc.listenerBus().waitUntilEmpty();

      HttpResponse<String> r =
          HttpClient.newBuilder()
              .followRedirects(HttpClient.Redirect.NORMAL)
              .build()
              .send(
                  HttpRequest.newBuilder(
                          URI.create("http://localhost:" + port + NativeMemoryWeb.PATH + "/"))
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
      assertEquals(200, r.statusCode());
      String html = r.body();
      assertTrue(
          html.matches("(?s)<!DOCTYPE html>\\s*<html\\b.*</html>\\s*"),
          "one HTML document, as Spark writes a page's nodes: " + html);
      assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("text/html"));
      assertTrue(html.contains(">" + NativeMemoryWeb.TAB_NAME + "</a>"), "in Spark's tab bar");
      assertTrue(html.contains("<div class=\"nativepool\">"), "inside Spark's page");
      assertTrue(html.contains("<h2 id=\"executor-7\">Executor 7: exited by itself</h2>"), "h2");
      assertTrue(html.contains(
              "<title>off-heap budget (spark.memory.offHeap.size): bounds this chart, not the"
                  + " resident set: 128.0 MiB</title>"), "budget");
      assertTrue(html.contains("class=\"marker end\""), "the end marker");
      assertTrue(html.contains("<title>jvm.direct</title>"), "the direct buffers' series");
      assertTrue(html.contains("<td>1 (stages 2.0)</td>"), "the task lost with it");
    } finally {
      sc.stop();
    }
  }
}
