package org.nativepool.spark.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.metrics.source.Source;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.config.ReportingSettings;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.testing.LocalSpark;
import org.nativepool.spark.testing.SparkMetrics;

/**
 * {@code spark.nativepool.monitoring=false} in a {@code local[2]} SparkSession: the executor
 * registers none of its gauges, starts no reporting thread, and neither its polls nor its task ends
 * read the native figures ({@link Natives#processStatsCalls()}, {@link
 * Natives#processArrowStatsCalls()}) while tasks run and end, over several poll periods.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class MonitoringOffSparkTest {

  /** The names of the executor's own gauges, none of which may be registered. */
  private static List<String> executorGaugeNames() {
    List<String> names = new ArrayList<>(ExecutorGauges.GAUGES.keySet());
    names.addAll(ExecutorGauges.ARROW_GAUGES.keySet());
    names.add(ExecutorGauges.DRIFT_GAUGE);
    names.add(ExecutorGauges.GAP_GAUGE);
    return names;
  }

  private static boolean reporterRunning() {
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.isAlive() && t.getName().startsWith("nativepool-reporter")) {
        return true;
      }
    }
    return false;
  }

  @Test
  void noGaugesNoReporterAndNoNativeReads() throws Exception {
    SparkSession spark =
        LocalSpark.builder("local[2]", "MonitoringOffSparkTest", "64m")
            .config(NativePoolConf.MONITORING.key(), "false")
            .getOrCreate();
    try {
      assertFalse(reporterRunning(), "a reporting thread runs with monitoring off");
      for (Source s : SparkMetrics.pluginSources()) {
        for (String name : executorGaugeNames()) {
          assertFalse(
              s.metricRegistry().getMetrics().containsKey(name),
              "gauge " + name + " registered with monitoring off");
        }
      }

      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      long processStats = Natives.processStatsCalls();
      long arrowStats = Natives.processArrowStatsCalls();
      long start = System.nanoTime();
      // Tasks run and end (each end would send a sample and read the ledger with monitoring on),
      // across more than two poll periods.
      long window = (2 * ReportingSettings.MAX_POLL_MILLIS + 500) * 1_000_000L;
      while (System.nanoTime() - start < window) {
        assertEquals(8, jsc.parallelize(List.of(1, 2, 3, 4, 5, 6, 7, 8), 8).count());
        Thread.sleep(100);
      }
      assertEquals(0, Natives.processStatsCalls() - processStats, "processStats0 calls");
      assertEquals(0, Natives.processArrowStatsCalls() - arrowStats, "processArrowStats0 calls");
      assertFalse(reporterRunning(), "a reporting thread runs with monitoring off");
    } finally {
      LocalSpark.stop(spark);
    }
  }
}
