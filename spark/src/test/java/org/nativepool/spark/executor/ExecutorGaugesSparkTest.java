package org.nativepool.spark.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.metrics.source.Source;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.config.ReportingSettings;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.testing.LocalSpark;
import org.nativepool.spark.testing.PrometheusUi;
import org.nativepool.spark.testing.SparkMetrics;

/**
 * What watching an executor costs in native reads, counted ({@link Natives#processStatsCalls()},
 * {@link Natives#processArrowStatsCalls()}) in a {@code local[2]} SparkSession with the UI and
 * Spark's PrometheusServlet on: metrics scrapes and task ends read no native figures; only the
 * reporting thread's poll does, one {@code processStats0} and one {@code processArrowStats0} per
 * poll period. Each bound is the number of poll periods the window spanned, plus one (a poll may
 * start just before the window and finish inside it); the code before the gauges shared one reading
 * made one {@code processStats0} per gauge read (31 per scrape) and one reading per burst of task
 * ends.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ExecutorGaugesSparkTest {

  /** The poll period with Spark's default heartbeat (10 s): the most the reporter waits. */
  private static final long POLL_MILLIS = ReportingSettings.MAX_POLL_MILLIS;

  private static SparkSession spark;
  private static PrometheusUi ui;

  @BeforeAll
  static void startSpark() throws IOException {
    ui = PrometheusUi.onFreePort();
    spark =
        ui.configure(LocalSpark.builder("local[2]", "ExecutorGaugesSparkTest", "64m"))
            .getOrCreate();
  }

  @AfterAll
  static void stopSpark() {
    LocalSpark.stop(spark);
  }

  /** Reads, within a window, since {@link #open()}. */
  private record Window(long processStats, long arrowStats, long startNanos) {
    static Window open() {
      return new Window(
          Natives.processStatsCalls(), Natives.processArrowStatsCalls(), System.nanoTime());
    }

    /** The poll periods the window spanned, plus one. */
    long pollBound() {
      return (System.nanoTime() - startNanos) / (POLL_MILLIS * 1_000_000) + 2;
    }

    void assertAtMostOneReadingPerPoll(String what) {
      long bound = pollBound();
      long p = Natives.processStatsCalls() - processStats;
      long a = Natives.processArrowStatsCalls() - arrowStats;
      assertTrue(p <= bound, what + ": " + p + " processStats0 calls, at most " + bound);
      assertTrue(a <= bound, what + ": " + a + " processArrowStats0 calls, at most " + bound);
    }
  }

  /**
   * The executor plugin's metric registry (in local mode the driver's source has the same name).
   */
  private static MetricRegistry executorRegistry() {
    List<MetricRegistry> out = new ArrayList<>();
    for (Source s : SparkMetrics.pluginSources()) {
      if (s.metricRegistry().getMetrics().containsKey("heldFromSpark")) {
        out.add(s.metricRegistry());
      }
    }
    assertEquals(1, out.size(), "one executor plugin source");
    return out.get(0);
  }

  @Test
  void scrapesAndGaugeReadsCallNoStatsNative() throws Exception {
    MetricRegistry registry = executorRegistry();
    int gauges = registry.getGauges().size();
    assertTrue(
        gauges >= ExecutorGauges.GAUGES.size() + ExecutorGauges.ARROW_GAUGES.size() + 2,
        gauges + " gauges");
    Window w = Window.open();
    int scrapes = 20;
    for (int i = 0; i < scrapes; i++) {
      String body = ui.fetch("/metrics/prometheus");
      assertTrue(body.contains("NativePoolPlugin_heldFromSpark_Value"), "the executor's gauges");
      for (Gauge<?> g : registry.getGauges().values()) {
        assertNotNull(g.getValue());
      }
      Thread.sleep(50);
    }
    // Before the gauges shared one reading: 31 processStats0 and 5 processArrowStats0 per scrape
    // and per pass over the gauges.
    w.assertAtMostOneReadingPerPoll(scrapes + " scrapes and passes over " + gauges + " gauges");
  }
}
