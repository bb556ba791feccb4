package org.nativepool.spark.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.memory.MemoryManager;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.config.TaskSlots;
import org.nativepool.spark.jni.GuardEpisode;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.memory.SparkOffHeap;
import org.nativepool.spark.memory.TaskPool;
import org.nativepool.spark.testing.GuardAwait;
import org.nativepool.spark.testing.LocalSpark;
import org.nativepool.spark.testing.SparkTestConsumer;
import org.nativepool.spark.testing.UnaccountedMemory;

/**
 * A task that cannot spill is not failed by memory another task's pool keeps as ballast, for real:
 * a {@code local[2]} Spark with the plugin and 64 MiB of off-heap memory, Spark's own {@code
 * TaskMemoryManager}s and {@code UnifiedMemoryManager}, and the guard holding Spark's off-heap
 * memory through the plugin's {@link SparkOffHeap}.
 *
 * <p>One task ("the merging task") holds its whole share of Spark's off-heap memory, half of it,
 * in a consumer that cannot spill (as Spark's hash aggregation holds its maps); the other ("the
 * spilling task") holds the other half in a spillable native reservation. A burst of memory nobody
 * accounts for makes the guard spill that reservation into its pool's ballast: Spark still counts
 * the bytes against the spilling task, and nothing of its off-heap memory is free. The merging
 * task's native merge then needs a page it cannot spill for. Spark grants it nothing: the task is
 * at its per-task limit and nothing is free. The guard makes it up: the spilling task's ballast
 * goes back to Spark and into the guard's hold at once, and is lent to the merge. Without that,
 * the borrow is refused ("only got 0 bytes from upstream") and the task fails.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class BallastLentAcrossTasksSparkTest {
  private static final long MIB = 1L << 20;
  private static final long OFF_HEAP = 64 * MIB;
  /** Each task's share: Spark's per-task limit with two tasks. */
  private static final long SHARE = OFF_HEAP / 2;
  private static final long PAGE = MIB;
  private static final long RESERVE = 32 * MIB;
  private static final long LIMIT_ABOVE_MIB = 160;
  private static final long STEP = 16 * MIB;
  private static final int MAX_STEPS = 24;
  private static final String SORTER = "ballast-test-sort";

  private static SparkSession spark;

  // Shared with the tasks, which run in this JVM (local mode).
  private static final CountDownLatch sideHeld = new CountDownLatch(1);
  private static final CountDownLatch sorting = new CountDownLatch(1);
  private static final CountDownLatch merge = new CountDownLatch(1);
  private static final CountDownLatch merged = new CountDownLatch(1);
  private static final CountDownLatch finish = new CountDownLatch(1);
  private static volatile boolean mergeGrew;
  private static volatile String mergeRefusal;
  private static volatile long mergeSize;

  @BeforeAll
  static void startSpark() {
    spark =
        LocalSpark.builder("local[2]", "BallastLentAcrossTasksSparkTest", Long.toString(OFF_HEAP))
            .getOrCreate();
  }

  @AfterAll
  static void stopSpark() {
    finish.countDown();
    merge.countDown();
    Natives.configureGuard(false, 0, 0, false);
    LocalSpark.stop(spark);
  }

  private static void await(CountDownLatch latch, String what) throws InterruptedException {
    if (!latch.await(240, TimeUnit.SECONDS)) {
      throw new IllegalStateException("the test never " + what);
    }
  }

  /**
   * Partition 1, the merging task: a consumer that cannot spill takes the task's whole share, then
   * on the test's word a native merge asks for a page; partition 0, the spilling task: a spillable
   * native reservation holds the other half until the test ends.
   */
  private static Iterator<Long> task(Iterator<Integer> partition) throws Exception {
    int p = partition.next();
    TaskContext tc = TaskContext.get();
    if (p == 1) {
      SparkTestConsumer maps = new SparkTestConsumer(tc.taskMemoryManager(), "maps", false);
      long got = maps.take(SHARE);
      sideHeld.countDown();
      try {
        await(merge, "asked for the merge");
        TaskPool pool = TaskPool.openForCurrentTask(); // closed at the task's end
        try (Reservation r = pool.newReservation("merge", false, null)) {
          mergeGrew = r.tryGrow(PAGE);
          mergeRefusal = r.lastRefusal();
          mergeSize = r.size();
          merged.countDown();
          await(finish, "let the tasks finish");
        }
      } finally {
        maps.giveAll();
      }
      return List.of(got).iterator();
    }
    await(sideHeld, "saw the merging task's share taken");
    TaskPool pool = TaskPool.openForCurrentTask();
    Reservation[] r = new Reservation[1];
    r[0] =
        pool.newReservation(
            SORTER,
            true,
            target -> {
              long n = r[0].size();
              r[0].shrink(n);
              return n;
            });
    r[0].tryGrowOrThrow(SHARE);
    sorting.countDown();
    await(finish, "let the tasks finish");
    long left = r[0].size();
    r[0].close();
    return List.of(left).iterator();
  }

  @Test
  void aMergeSparkGrantsNothingIsLentAnotherTasksBallast() throws Exception {
    MemoryManager mm = SparkEnv.get().memoryManager();
    SparkOffHeap offHeap =
        SparkOffHeap.forExecutor(null, TaskSlots.of(spark.sparkContext().conf()));
    assertNotNull(offHeap, "the executor has off-heap memory");
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    CompletableFuture<List<Long>> job =
        CompletableFuture.supplyAsync(
            () ->
                jsc.parallelize(List.of(0, 1), 2)
                    .mapPartitions(BallastLentAcrossTasksSparkTest::task)
                    .collect());
    UnaccountedMemory burst = new UnaccountedMemory();
    try {
      await(sorting, "saw the spilling task hold its share");
      assertEquals(
          OFF_HEAP, mm.offHeapExecutionMemoryUsed(), "the two tasks hold all of Spark's off-heap");

      long limit = UnaccountedMemory.residentAnonAndShmem() + LIMIT_ABOVE_MIB * MIB;
      Natives.configureGuard(true, RESERVE, limit, true, offHeap);
      GuardAwait.until(
          "the guard's first sample", () -> stat(ProcessStat.GUARD_HEADROOM) >= 2 * RESERVE);
      int steps = 0;
      while (steps < MAX_STEPS && stat(ProcessStat.GUARD_HEADROOM) >= 0) {
        burst.take(STEP);
        steps++;
        Thread.sleep(100);
      }
      assertTrue(stat(ProcessStat.GUARD_HEADROOM) < 0, steps + " steps: " + Natives.processStats());
      // The episode that spilled the sorter may have ended already and another begun (the burst
      // is still held, so one lasts).
      GuardAwait.value(
          "an episode that spilled the sorter into its pool's ballast",
          () ->
              find(
                  Natives.guardEpisodes(),
                  e ->
                      e.spills().stream()
                          .anyMatch(s -> s.consumer().startsWith(SORTER) && s.bytes() >= SHARE)));
      GuardAwait.value(
          "an episode lasting with the burst held",
          () -> find(Natives.guardEpisodes(), GuardEpisode::open));
      GuardAwait.until(
          "the sorter's share in ballast, Spark still counting it",
          () -> stat(ProcessStat.GUARD_BALLAST) >= SHARE);
      assertEquals(
          OFF_HEAP,
          mm.offHeapExecutionMemoryUsed(),
          "nothing of Spark's off-heap memory is free: " + offHeap);
      assertEquals(0, offHeap.held(), "the guard holds none of it (the floor)");

      merge.countDown();
      await(merged, "saw the merge ask");
      assertNull(mergeRefusal, "the merge got its page");
      assertTrue(mergeGrew);
      assertEquals(PAGE, mergeSize);
      // The page came from the spilling task's ballast, now in the guard's hold, lent.
      assertTrue(offHeap.held() >= PAGE, offHeap::toString);
      assertTrue(
          stat(ProcessStat.GUARD_OFF_HEAP_GATHERED_BYTES) >= PAGE,
          Natives.processStats()::toString);
      assertEquals(offHeap.held(), mm.offHeapStorageMemoryUsed(), "the hold is all of storage");
      assertTrue(
          stat(ProcessStat.GUARD_BALLAST) <= SHARE - PAGE,
          "the ballast the hold took: " + Natives.processStats());
      assertEquals(
          OFF_HEAP,
          mm.offHeapExecutionMemoryUsed() + mm.offHeapStorageMemoryUsed(),
          "Spark counts the same bytes: moved, not added");
    } finally {
      burst.free();
      finish.countDown();
      merge.countDown();
    }
    List<Long> left = job.get(120, TimeUnit.SECONDS);
    assertEquals(List.of(0L, SHARE), left, "the sorter spilled everything; the maps kept theirs");
    GuardAwait.until("the hold back to Spark once the loan is repaid", () -> offHeap.held() == 0);
    Natives.configureGuard(false, 0, 0, false);
    assertEquals(0, mm.offHeapStorageMemoryUsed(), "no storage memory left behind");
    assertEquals(0, mm.offHeapExecutionMemoryUsed(), "nothing left charged");
  }

  private static long stat(ProcessStat s) {
    return Natives.processStats().get(s);
  }

  private static <T> T find(List<T> items, java.util.function.Predicate<T> p) {
    return items.stream().filter(p).findFirst().orElse(null);
  }
}
