package org.nativepool.spark.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.MetricRegistry;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.metrics.source.Source;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.jni.ArrowProcessStats;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.ProcessStats;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.testing.ArrowTask;
import org.nativepool.spark.testing.LocalSpark;
import org.nativepool.spark.testing.SparkMetrics;

/**
 * {@link TaskArrowAllocators#forCurrentTask()} inside real Spark tasks ({@code local[2]}, the
 * plugin, Spark's leak check turned into an exception): one object per task, Java and Go batches
 * charged to the task's pool, a Go batch deliberately left unreleased in every task — reported and
 * released by the completion listener before Spark's leak check, so the tasks still succeed.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ArrowTaskPluginTest {

  private static SparkSession spark;
  private static JavaSparkContext jsc;

  @BeforeAll
  static void startSpark() {
    spark =
        LocalSpark.builder("local[2]", "ArrowTaskPluginTest", "128m")
            .config("spark.nativepool.pool", "greedy_unified")
            .config("spark.nativepool.chunkSize", "0")
            .config("spark.nativepool.allocationSites", "true")
            .getOrCreate();
    jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
  }

  @AfterAll
  static void stopSpark() {
    LocalSpark.stop(spark);
    GoAllocators.configure(false);
  }

  private static Map<String, Long> gauges() {
    List<Source> sources = SparkMetrics.pluginSources();
    Map<String, Long> out = new HashMap<>();
    MetricRegistry registry = sources.get(0).metricRegistry();
    registry.getGauges().forEach((k, g) -> out.put(k, (Long) g.getValue()));
    registry.getCounters().forEach((k, c) -> out.put(k, c.getCount()));
    return out;
  }

  /** A task body: Java → Go → copy → Java, one copy left behind on purpose. */
  private static Iterator<Map<String, Long>> useArrowAndLeakOneBatch(Iterator<Integer> rows) {
    int n = 0;
    while (rows.hasNext()) {
      rows.next();
      n++;
    }
    TaskArrowAllocators arrows = TaskArrowAllocators.forCurrentTask();
    assertSame(arrows, TaskArrowAllocators.forCurrentTask(), "one per task");
    Reservation op = arrows.newNativeReservation("task-op");
    long sum;
    GoBatch kept;
    try (VectorSchemaRoot src = ArrowTask.longs(arrows.producer(), 1, 1000 + n);
        GoBatch in = GoBatch.importFrom(op, src, arrows.producer())) {
      kept = in.copy(op);
    }
    try (VectorSchemaRoot back = kept.exportTo(arrows.importer())) {
      sum = ArrowTask.sum(back);
    }
    GoBatch.importFrom(op, ArrowTask.longs(arrows.producer(), 0, 10), arrows.producer())
        .copy(op); // leaked: neither the import, nor the copy, nor the Java root is closed
    // The gauges serve the reporter's latest reading, taken every poll period (at most 1 s), at
    // the executor's start and at task ends: wait for one taken while this task holds its batches.
    Map<String, Long> sample = new HashMap<>(gauges());
    for (long deadline = System.nanoTime() + 5_000_000_000L;
        sample.getOrDefault("nativeAllocated", 0L) <= 0 && System.nanoTime() < deadline; ) {
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      sample = new HashMap<>(gauges());
    }
    sample.put("sum", sum);
    sample.put("rows", (long) n);
    sample.put("goAllocated", GoAllocators.stats(op).allocated());
    sample.put(
        "sparkFigure", TaskContext.get().taskMemoryManager().getMemoryConsumptionForThisTask());
    sample.put(
        "charged", arrows.producer().getAllocatedMemory() + GoAllocators.stats(op).allocated());
    kept.close();
    return Collections.singletonList(sample).iterator();
  }

  @Test
  void tasksGetTheirAllocatorsAndLeakedBatchesAreReportedAndReleasedAtTaskEnd() {
    ArrowProcessStats before = GoAllocators.processStats();
    List<Integer> data = IntStream.range(0, 40).boxed().collect(Collectors.toList());
    List<Map<String, Long>> samples =
        jsc.parallelize(data, 4)
            .mapPartitions(ArrowTaskPluginTest::useArrowAndLeakOneBatch)
            .collect();

    assertEquals(4, samples.size());
    for (Map<String, Long> m : samples) {
      long n = m.get("rows");
      assertEquals(ArrowTask.sumOf(1, 1000 + n), m.get("sum"), m::toString);
      assertEquals(m.get("charged"), m.get("sparkFigure"), "Java + Go charges = Spark: " + m);
      assertTrue(m.get("goAllocated") > 0, m::toString);
      assertTrue(m.get("nativeAllocated") > 0, "gauge nativeAllocated in a task: " + m);
      assertTrue(m.get("arrowLiveAllocators") > 0, m::toString);
      assertTrue(m.get("rssBytes") > 0, m::toString);
      assertTrue(m.containsKey("rssDrift"), m::toString);
      assertTrue(m.containsKey("allocationGap"), m::toString);
    }
    ArrowProcessStats after = GoAllocators.processStats();
    assertEquals(before.liveBatches(), after.liveBatches(), "leaked batches released: " + after);
    assertEquals(before.liveAllocators(), after.liveAllocators(), after::toString);
    assertEquals(before.leaks() + 4, after.leaks(), "one leak report per task: " + after);
    ProcessStats ps = Natives.processStats();
    assertEquals(0, ps.liveTasks(), ps::toString);
    assertEquals(0, ps.held(), ps::toString);
  }
}
