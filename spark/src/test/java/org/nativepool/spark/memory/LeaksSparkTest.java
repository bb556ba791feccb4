package org.nativepool.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.arrow.GoBatch;
import org.nativepool.spark.arrow.TaskArrowAllocators;
import org.nativepool.spark.jni.LeakKind;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.ProcessStats;
import org.nativepool.spark.ledger.LiveNative;
import org.nativepool.spark.testing.LocalSpark;
import org.nativepool.spark.testing.LogCapture;

/**
 * Leaks that name their owner, in real Spark tasks ({@code local[1]}, the plugin, allocation sites
 * on, Spark's leak check turned into an exception): every kind of leak at a task's end is counted
 * once in the {@code leaks}/{@code leakedBytes} figures, logged at WARN and listed by {@link
 * Leaks#recent()} with its consumer and the Java caller that reserved or allocated it; what a
 * leak leaves allocated stays in {@code leakedResident} until it is freed. Each task still
 * succeeds: the task's end gives Spark every byte back before Spark's own check.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class LeaksSparkTest {
  private static final long MIB = 1L << 20;

  /**
   * What tasks leave behind on purpose for the test to release later (local mode: one JVM, so the
   * driver's test code can release what a task leaked).
   */
  private static final List<VectorSchemaRoot> HELD = new CopyOnWriteArrayList<>();

  /** An allocator outside any task, holding Go batches exported past their task's end. */
  private static RootAllocator outside;

  private static SparkSession spark;
  private static JavaSparkContext jsc;

  @BeforeAll
  static void startSpark() {
    spark =
        LocalSpark.builder("local[1]", "LeaksSparkTest", "256m")
            .config("spark.nativepool.allocationSites", "true")
            .getOrCreate();
    jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    outside = new RootAllocator();
  }

  @AfterAll
  static void stopSpark() {
    for (VectorSchemaRoot r : HELD) {
      r.close();
    }
    HELD.clear();
    if (outside != null) {
      outside.close();
    }
    LocalSpark.stop(spark);
    ExecutorState.setAllocationSites(false);
  }

  /** Runs {@code body} as one Spark task and returns what it returned. */
  private static List<Long> runTask(
      org.apache.spark.api.java.function.FlatMapFunction<Iterator<Integer>, Long> body) {
    return jsc.parallelize(List.of(1), 1).mapPartitions(body).collect();
  }

  /**
   * The leaks of task {@code task} recorded since {@code before} was read (task attempt ids start
   * over with each SparkContext of the test JVM, so the id alone may match an older test's task).
   */
  private static List<Leaks.Leak> leaksOf(long task, List<Leaks.Leak> before) {
    List<Leaks.Leak> now = new ArrayList<>(Leaks.recent());
    for (Leaks.Leak old : before) {
      now.remove(old);
    }
    return now.stream().filter(l -> l.taskAttemptId() == task).collect(Collectors.toList());
  }

  /** A one-column batch of {@code rows} longs made by {@code alloc}. */
  private static VectorSchemaRoot longs(BufferAllocator alloc, int rows) {
    BigIntVector v = new BigIntVector("v", alloc);
    v.allocateNew(rows);
    for (int i = 0; i < rows; i++) {
      v.set(i, i);
    }
    v.setValueCount(rows);
    VectorSchemaRoot root = VectorSchemaRoot.of(v);
    root.setRowCount(rows);
    return root;
  }

  /** A task that reserves 10 MiB and never closes the reservation. */
  private static Iterator<Long> leakTenMiB(Iterator<Integer> rows) {
    TaskPool pool = TaskPool.openForCurrentTask();
    Reservation r = pool.newReservation("leaky-10mib", false, null);
    assertTrue(r.tryGrow(10 * MIB), r::lastRefusal);
    return Collections.singletonList(TaskContext.get().taskAttemptId()).iterator();
  }

  @Test
  void anUnclosedReservationIsOneLeakOfItsBytesNamedWithItsConsumerAndCreator() {
    ProcessStats before = Natives.processStats();
    List<Leaks.Leak> seen = Leaks.recent();
    List<String> warnings;
    long task;
    try (LogCapture log = LogCapture.attach("org.nativepool.bridge")) {
      task = runTask(LeaksSparkTest::leakTenMiB).get(0);
      warnings = log.messages();
    }
    ProcessStats after = Natives.processStats();
    assertEquals(before.leaks() + 1, after.leaks(), after::toString);
    assertEquals(before.leakedBytes() + 10 * MIB, after.leakedBytes(), after::toString);
    assertEquals(before.leakedResident(), after.leakedResident(), "accounting only: " + after);
    assertEquals(0, after.liveTasks());
    assertEquals(0, after.held(), "the task's end gave the 10 MiB back to Spark");

    List<Leaks.Leak> leaks = leaksOf(task, seen);
    assertEquals(1, leaks.size(), leaks::toString);
    Leaks.Leak l = leaks.get(0);
    assertEquals("leaky-10mib", l.consumer());
    assertEquals(LeakKind.RESERVATION, l.kind());
    assertEquals(10 * MIB, l.bytes());
    assertEquals(0, l.resident());
    assertTrue(
        l.site().startsWith("org.nativepool.spark.memory.LeaksSparkTest.leakTenMiB (LeaksSparkTest.java:"),
        "the Java caller that created the reservation: " + l.site());

    List<String> lines =
        warnings.stream()
            .filter(m -> m.contains("leak at task end: leaky-10mib"))
            .collect(Collectors.toList());
    assertEquals(1, lines.size(), warnings::toString);
    String line = lines.get(0);
    assertTrue(line.contains("task " + task), line);
    assertTrue(line.contains("bytes=" + 10 * MIB), line);
    assertTrue(line.contains("LeaksSparkTest.leakTenMiB"), line);
  }

  /**
   * A task that imports a Java batch, copies it into Go (copyBatch0, entered from Java) and leaks
   * the copy; returns its task id, then the live native owners' bytes seen in the task for its
   * consumer.
   */
  private static Iterator<Long> copyAndLeak(Iterator<Integer> rows) {
    TaskArrowAllocators arrows = TaskArrowAllocators.forCurrentTask();
    Reservation op = arrows.newNativeReservation("copy-op");
    GoBatch copy;
    try (VectorSchemaRoot src = longs(arrows.producer(), 4096);
        GoBatch in = GoBatch.importFrom(op, src, arrows.producer())) {
      copy = in.copy(op); // leaked: never closed
    }
    assertNotNull(copy);
    List<Long> out = new ArrayList<>();
    out.add(TaskContext.get().taskAttemptId());
    for (LiveNative.Owner o : LiveNative.top(100)) {
      if (o.consumer().equals("copy-op")
          && o.site().startsWith("org.nativepool.spark.memory.LeaksSparkTest.copyAndLeak (")) {
        out.add(o.bytes());
      }
    }
    return out.iterator();
  }

  @Test
  void aGoCopyEnteredFromJavaAndLeakedNamesItsJavaCallerNotOurCopyFunction() {
    ProcessStats before = Natives.processStats();
    List<Leaks.Leak> seen = Leaks.recent();
    List<Long> got = runTask(LeaksSparkTest::copyAndLeak);
    long task = got.get(0);
    assertEquals(2, got.size(), "LiveNative.top named the copy's Java caller in the task: " + got);
    assertTrue(got.get(1) >= 4096 * 8, got::toString);

    ProcessStats after = Natives.processStats();
    assertEquals(before.leaks() + 1, after.leaks(), "the Go allocator's leak, once: " + after);
    List<Leaks.Leak> leaks = leaksOf(task, seen);
    assertEquals(1, leaks.size(), leaks::toString);
    Leaks.Leak l = leaks.get(0);
    assertEquals("copy-op", l.consumer());
    assertEquals(LeakKind.ARROW, l.kind());
    assertEquals(after.leakedBytes() - before.leakedBytes(), l.bytes());
    assertTrue(l.bytes() >= 4096 * 8, l::toString);
    assertTrue(
        l.site().startsWith("org.nativepool.spark.memory.LeaksSparkTest.copyAndLeak (LeaksSparkTest.java:"),
        "the Java caller of the copy: " + l.site());
    assertFalse(l.site().contains("copyRecordBatch"), l.site());
    assertEquals(0, l.resident(), "the task's end released the leaked batch");
    assertEquals(before.leakedResident(), after.leakedResident());
  }

  /** A task that exports a Go batch into an allocator outside the task and keeps it. */
  private static Iterator<Long> exportAndHold(Iterator<Integer> rows) {
    TaskArrowAllocators arrows = TaskArrowAllocators.forCurrentTask();
    Reservation op = arrows.newNativeReservation("exporter");
    try (VectorSchemaRoot src = longs(arrows.producer(), 8192);
        GoBatch in = GoBatch.importFrom(op, src, arrows.producer());
        GoBatch copy = in.copy(op)) {
      HELD.add(copy.exportTo(outside)); // Java still holds it at the task's end
    }
    return Collections.singletonList(TaskContext.get().taskAttemptId()).iterator();
  }

  @Test
  void aGoBatchJavaStillHoldsAtTaskEndIsALeakResidentUntilJavaReleasesIt() {
    ProcessStats before = Natives.processStats();
    List<Leaks.Leak> seen = Leaks.recent();
    long task = runTask(LeaksSparkTest::exportAndHold).get(0);

    ProcessStats after = Natives.processStats();
    assertEquals(before.leaks() + 1, after.leaks(), after::toString);
    List<Leaks.Leak> leaks = leaksOf(task, seen);
    assertEquals(1, leaks.size(), leaks::toString);
    Leaks.Leak l = leaks.get(0);
    assertEquals("exporter", l.consumer());
    assertEquals(LeakKind.EXPORT, l.kind());
    assertTrue(l.resident() >= 8192 * 8, l::toString);
    assertEquals(before.leakedResident() + l.resident(), after.leakedResident(), after::toString);
    assertTrue(
        LiveNative.top(100).stream().anyMatch(o -> o.consumer().equals("exporter")),
        "what Java holds is still live native memory");

    VectorSchemaRoot held = HELD.remove(HELD.size() - 1);
    held.close(); // Java releases the export: Go frees the buffers
    ProcessStats freed = Natives.processStats();
    assertEquals(before.leakedResident(), freed.leakedResident(), freed::toString);
    assertEquals(after.leaks(), freed.leaks(), "the leak stays counted");
    assertTrue(LiveNative.top(100).stream().noneMatch(o -> o.consumer().equals("exporter")));
  }

  /** A task that allocates a Java Arrow batch from its producer and never closes it. */
  private static Iterator<Long> leakJavaBatch(Iterator<Integer> rows) {
    TaskArrowAllocators arrows = TaskArrowAllocators.forCurrentTask();
    HELD.add(longs(arrows.producer(), 16384));
    return Collections.singletonList(TaskContext.get().taskAttemptId()).iterator();
  }

  @Test
  void aJavaArrowBufferLeakIsCountedAndResidentUntilItsLateRelease() {
    ProcessStats before = Natives.processStats();
    List<Leaks.Leak> seen = Leaks.recent();
    long task = runTask(LeaksSparkTest::leakJavaBatch).get(0);

    ProcessStats after = Natives.processStats();
    assertEquals(before.leaks() + 1, after.leaks(), after::toString);
    List<Leaks.Leak> leaks = leaksOf(task, seen);
    assertEquals(1, leaks.size(), leaks::toString);
    Leaks.Leak l = leaks.get(0);
    assertEquals(TaskArrowAllocators.JAVA_CONSUMER, l.consumer());
    assertEquals(LeakKind.JAVA_ARROW, l.kind());
    assertTrue(l.bytes() >= 16384 * 8, l::toString);
    assertEquals(l.bytes(), l.resident());
    assertEquals(before.leakedBytes() + l.bytes(), after.leakedBytes());
    assertEquals(before.leakedResident() + l.bytes(), after.leakedResident(), after::toString);
    assertTrue(
        l.site().startsWith("org.nativepool.spark.memory.LeaksSparkTest.leakJavaBatch ("),
        "where the task's Java allocators were opened: " + l.site());

    VectorSchemaRoot held = HELD.remove(HELD.size() - 1);
    held.close(); // a late release: the leaked buffers are freed
    assertEquals(before.leakedResident(), Natives.processStats().leakedResident());
  }
}
