package org.nativepool.spark.ledger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.events.HeapHolder;
import org.nativepool.spark.testing.LocalSpark;

/**
 * An executor-side heap leak against a real {@code local[2]} Spark with the plugin and the real
 * JDK Flight Recorder: tasks that each add a 2 MiB record to a static list get the executor's
 * growth report of {@value LedgerReader#JVM_HEAP_AFTER_GC}, naming the record's type and a path
 * that ends at the static field; the same tasks keeping nothing get no report of the heap. The
 * detector's windows are made short (5 tasks, 2 windows: 25 task ends for a {@code jvm.*} part)
 * so that the test takes seconds.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class HeapHoldersSparkTest {
  /** The leak: records kept for ever. Guarded by itself. */
  static final List<LeakedRecord> LEAK = new ArrayList<>();

  /**
   * One leaked element: 2 MiB of longs, so that the leak's rise outruns what the young collections
   * promote of the tasks' garbage in a JVM the other test classes share.
   */
  static final class LeakedRecord {
    final long[] values = new long[256 * 1024];
  }

  /** Leaky tasks per round; a round is followed by up to 10 s of waiting for the report. */
  private static final int TASKS_PER_ROUND = 20;

  private static SparkSession spark;
  private static JavaSparkContext jsc;
  private static final List<SparkListenerEvent> events = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void startSpark() {
    spark =
        LocalSpark.builder("local[2]", "HeapHoldersSparkTest", "64m")
            .config("spark.nativepool.ledger.growth.window", "5")
            .config("spark.nativepool.ledger.growth.windows", "2")
            .getOrCreate();
    jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    LocalSpark.collectOtherEvents(spark, events);
  }

  @AfterAll
  static void stopSpark() {
    LocalSpark.stop(spark);
    synchronized (LEAK) {
      LEAK.clear();
    }
  }

  /**
   * A task: 24 MiB of garbage, and a record kept if {@code leak}. The garbage makes young
   * collections happen, as a real task's does: the JVM writes only the samples that lived through
   * a collection.
   */
  private static int task(boolean leak) {
    List<byte[]> garbage = new ArrayList<>();
    for (int i = 0; i < 24 * 16; i++) {
      garbage.add(new byte[64 * 1024]);
      if (garbage.size() > 64) {
        garbage = new ArrayList<>();
      }
    }
    LeakedRecord r = new LeakedRecord();
    if (leak) {
      synchronized (LEAK) {
        LEAK.add(r);
      }
    }
    return r.values.length + garbage.size();
  }

  /** Runs {@code n} one-row tasks, one after the other in two slots. */
  private static void runTasks(int n, boolean leak) {
    List<Integer> out =
        jsc.parallelize(IntStream.range(0, n).boxed().collect(Collectors.toList()), n)
            .map(i -> task(leak))
            .collect();
    assertEquals(n, out.size());
  }

  private static List<GrowthReportEvent> heapReports() {
    List<GrowthReportEvent> out = new ArrayList<>();
    for (SparkListenerEvent e : events) {
      if (e instanceof GrowthReportEvent g
          && g.getPart().equals(LedgerReader.JVM_HEAP_AFTER_GC)
          && g.getBoundary().equals(GrowthReportEvent.TASK)) {
        out.add(g);
      }
    }
    return out;
  }

  @Test
  void tasksFillingAStaticListAreNamedWithTheElementTypeAndThePathToTheStaticField()
      throws Exception {
    ExecutorLedger ledger = ExecutorLedger.current();
    assertNotNull(ledger);
    runTasks(40, false);
    Thread.sleep(500);
    assertEquals(List.of(), heapReports(), "clean tasks reported the heap");

    // The JVM is shared with the test classes before this one: their garbage in the old
    // generation, freed by a concurrent cycle in the middle of the leaky tasks, would make the
    // heap's floor fall once and start the detector's rising windows over. A full collection
    // frees it first.
    System.gc();
    long before = ledger.taskBoundaries();
    GrowthReportEvent found = null;
    List<String> rounds = new ArrayList<>();
    for (int i = 0; i < 8 && found == null; i++) {
      runTasks(TASKS_PER_ROUND, true);
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (found == null && System.nanoTime() < deadline) {
        List<GrowthReportEvent> r = heapReports();
        found = r.isEmpty() ? null : r.get(0);
        Thread.sleep(100);
      }
      rounds.add(
          (ledger.taskBoundaries() - before)
              + " task ends: afterGc "
              + LedgerReader.heapAfterGc() / (1 << 20)
              + " MiB");
    }
    assertNotNull(
        found,
        "no report of the heap after "
            + rounds.size() * TASKS_PER_ROUND
            + " leaky tasks: "
            + rounds
            + "; "
            + events);
    System.out.println(
        "nativepool executor heap report after "
            + (found.getTaskCount() - before)
            + " leaky tasks: "
            + found.describe());
    HeapHolder h = found.getHeapHolders().isEmpty() ? null : found.getHeapHolders().get(0);
    assertNotNull(h, found.describe());
    assertEquals("long[]", h.getType(), h.describe());
    assertEquals(
        LeakedRecord.class.getName() + ".values", h.getChain().get(0), "the element type: " + h);
    assertEquals(
        "static " + HeapHoldersSparkTest.class.getName() + ".LEAK",
        h.getChain().get(h.getChain().size() - 1),
        "the path ends at the static field: " + h);
    assertNotNull(h.getRoot(), h.describe());
    assertTrue(h.getFirstAllocatedMillis() >= found.getTimeMillis() - 600_000, h.describe());
    assertTrue(Collections.frequency(h.getChain(), "java.lang.Object[] element") == 1, h.path());
  }
}
