package org.nativepool.spark.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.MetricRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.SecurityManager;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.deploy.history.FsHistoryProvider;
import org.apache.spark.deploy.history.HistoryServer;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.LedgerSample;
import org.nativepool.spark.testing.DriverContext;
import org.nativepool.spark.ui.NativeMemoryWeb;
import scala.Option;

/**
 * The Native Memory page in Spark's History Server, from the event log alone: an application (a
 * SparkContext with its event log on, the driver side fed an executor's samples and its removal)
 * runs and stops; then a History Server is started in this JVM on that log directory, with the
 * plugin found on the classpath as a deployment puts the jar there, and the page is fetched from
 * it.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 180, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class NativeMemoryHistoryServerTest {
  private static final long MIB = 1L << 20;

  @TempDir Path logDir;

  private String runApplication() throws Exception {
    SparkContext sc =
        new SparkContext(
            new SparkConf()
                .setMaster("local[1]")
                .setAppName("NativeMemoryHistoryServerTest")
                .set("spark.ui.enabled", "false")
                .set("spark.eventLog.enabled", "true")
                .set("spark.eventLog.dir", logDir.toUri().toString())
                .set("spark.eventLog.compress", "false")
                .set("spark.memory.offHeap.enabled", "true")
                .set("spark.memory.offHeap.size", "64m")
                .set("spark.executor.heartbeatInterval", "1s")
                .set(NativePoolConf.EVENT_LOG_SAMPLE_EVERY.key(), "1"));
    try {
      DriverSide driver = new DriverSide();
      driver.init(sc, new DriverContext(sc.conf(), new MetricRegistry()));
      long now = System.currentTimeMillis();
      for (int i = 10; i >= 1; i--) {
        Map<String, Long> gauges = new LinkedHashMap<>();
        gauges.put("guardLimit", 1024 * MIB);
        gauges.put("guardUnreclaimable", (1000 - i) * MIB);
        Map<String, Long> parts = new LinkedHashMap<>();
        parts.put("jvm.heap.committed", 256 * MIB);
        parts.put("jvm.direct", (700 - 10 * i) * MIB);
        driver.receive(
            new ExecutorSample(
                "3",
                now - i * 1000L,
                10 - i,
                gauges,
                0,
                0,
                new LedgerSample(parts, Map.of(), 0, Map.of())));
      }
      sc.listenerBus()
          .post(new SparkListenerExecutorRemoved(now, "3", "Command exited with code 137"));
      sc.listenerBus().waitUntilEmpty();
      return sc.applicationId();
    } finally {
      sc.stop();
    }
  }

  private static HttpResponse<String> get(HttpClient http, String url) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void theHistoryServerDrawsThePageFromTheEventLog() throws Exception {
    String appId = runApplication();
    SparkConf conf =
        new SparkConf()
            .set("spark.history.fs.logDirectory", logDir.toUri().toString())
            .set("spark.history.fs.update.interval", "1s")
            .set("spark.history.ui.port", "0");
    FsHistoryProvider provider = new FsHistoryProvider(conf);
    SecurityManager security =
        new SecurityManager(
            conf,
            Option.empty(),
            org.apache.spark.internal.config.package$.MODULE$.AUTH_SECRET_FILE());
    HistoryServer server = new HistoryServer(conf, provider, security, 0);
    server.bind();
    provider.start();
    try {
      HttpClient http = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL).build();
      String base = "http://localhost:" + server.boundPort();
      long deadline = System.currentTimeMillis() + 60_000;
      while (!get(http, base + "/api/v1/applications").body().contains(appId)) {
        assertTrue(System.currentTimeMillis() < deadline, "the History Server lists " + appId);
        Thread.sleep(200);
      }
      HttpResponse<String> r = get(http, base + "/history/" + appId + NativeMemoryWeb.PATH + "/");
      assertEquals(200, r.statusCode(), r::body);
      String html = r.body();
      assertTrue(html.contains(">" + NativeMemoryWeb.TAB_NAME + "</a>"), html);
      assertTrue(
          html.contains(
              "<h2 id=\"executor-3\">Executor 3: killed by its container&#39;s memory"
                  + " limit</h2>"),
          "the diagnosis, replayed");
      assertTrue(html.contains(
              "<title>off-heap budget (spark.memory.offHeap.size): bounds this chart, not the"
                  + " resident set: 64.0 MiB</title>"), "from the environment");
      assertTrue(html.contains("<title>jvm.direct</title>"), "the samples, replayed");
    } finally {
      server.stop();
      provider.stop();
    }
  }
}
