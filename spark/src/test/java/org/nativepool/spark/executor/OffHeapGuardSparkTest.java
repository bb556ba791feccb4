package org.nativepool.spark.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.memory.MemoryManager;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.TaskCompletionListener;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.config.TaskSlots;
import org.nativepool.spark.events.GuardEpisodeEvent;
import org.nativepool.spark.jni.GuardEpisode;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.memory.ExecutorState;
import org.nativepool.spark.memory.SparkOffHeap;
import org.nativepool.spark.testing.GuardAwait;
import org.nativepool.spark.testing.LocalSpark;
import org.nativepool.spark.testing.UnaccountedMemory;
import org.nativepool.spark.testing.SparkTestConsumer;

/**
 * The pod guard for an executor with no native engine at all, for real: a {@code local[2]} Spark
 * with the plugin, Spark's own off-heap sort (Tungsten's {@code UnsafeExternalSorter} on off-heap
 * pages) in each task, Spark's own {@code UnifiedMemoryManager}, and this JVM's resident memory
 * against a limit the test sets (as {@link PodGuardSparkTest} does).
 *
 * <p>Each task feeds its sort half its rows, then waits: the sorters hold their pages. The test
 * takes memory outside any accounting ({@code Unsafe.allocateMemory}, every page touched) until
 * the headroom is gone. Nothing native can give way, so the guard holds Spark's free off-heap memory
 * instead, above the floor it leaves the consumers. The tasks then go on: their sorters meet no
 * room at their next page and spill, on their own threads, and what they free is held too. The
 * sorted result is right, the spill happened only because of the guard (the same job without the
 * burst does not spill), and once the burst is freed the ballast goes back to Spark.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class OffHeapGuardSparkTest {
  private static final long MIB = 1L << 20;
  private static final long OFF_HEAP = 128 * MIB;
  private static final long RESERVE = 32 * MIB;
  /**
   * The guard's limit above what the JVM holds when the guard starts. The ballast goes back once
   * the headroom can take the consumers growing into it at a reserve and a half, so the JVM may
   * grow by this less the ballast (at most the off-heap size less its floor) and 1.5 reserves
   * during the guarded job (its heap's first touches, glibc's arenas: 114 MiB seen) and still see
   * every byte back.
   */
  private static final long LIMIT_ABOVE_MIB = 320;
  private static final long STEP = 16 * MIB;
  private static final int MAX_STEPS = 30;
  private static final int ROWS_PER_PARTITION = 200_000;
  private static final StructType SCHEMA =
      new StructType()
          .add("k", DataTypes.LongType)
          .add("payload", DataTypes.StringType);

  private static SparkSession spark;
  private static final List<SparkListenerEvent> busEvents = new CopyOnWriteArrayList<>();
  private static final Map<Long, Long> spilledByTask = new ConcurrentHashMap<>();

  // Shared with the tasks, which run in this JVM (local mode).
  private static volatile CountDownLatch halfway = new CountDownLatch(0);
  private static volatile CountDownLatch goOn = new CountDownLatch(0);
  private static final Set<Thread> taskThreads = ConcurrentHashMap.newKeySet();
  private static final List<SparkTestConsumer> consumers = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void startSpark() {
    spark =
        LocalSpark.builder("local[2]", "OffHeapGuardSparkTest", Long.toString(OFF_HEAP))
            .config("spark.buffer.pageSize", "1m")
            // The hold's floor follows Spark's storage region: a quarter of 128 MiB is left to
            // execution, less than the sorters need, so that they spill under the hold.
            .config("spark.memory.storageFraction", "0.75")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.adaptive.enabled", "false")
            .getOrCreate();
    LocalSpark.collectOtherEvents(spark, busEvents);
    spark
        .sparkContext()
        .addSparkListener(
            new SparkListener() {
              @Override
              public void onTaskEnd(SparkListenerTaskEnd e) {
                if (e.taskMetrics() != null) {
                  spilledByTask.put(e.taskInfo().taskId(), e.taskMetrics().memoryBytesSpilled());
                }
              }
            });
  }

  @AfterAll
  static void stopSpark() {
    goOn.countDown();
    Natives.configureGuard(false, 0, 0, false);
    LocalSpark.stop(spark);
  }

  /**
   * A partition's rows: a pseudo-random key and a 100-byte payload, for Spark's sort. Halfway it
   * counts the latch down and waits for the test; a test consumer of the task's own holds 2 MiB of
   * Spark's off-heap memory all along, and records the thread Spark makes it spill on.
   */
  private static Iterator<Row> rows(Iterator<Integer> partition) {
    int p = partition.next();
    TaskContext tc = TaskContext.get();
    taskThreads.add(Thread.currentThread());
    SparkTestConsumer c = new SparkTestConsumer(tc.taskMemoryManager(), "side-" + p, true);
    c.take(2 * MIB);
    consumers.add(c);
    tc.addTaskCompletionListener((TaskCompletionListener) ctx -> c.giveAll());
    String payload = "x".repeat(100);
    return new Iterator<>() {
      int i;

      @Override
      public boolean hasNext() {
        return i < ROWS_PER_PARTITION;
      }

      @Override
      public Row next() {
        if (i == ROWS_PER_PARTITION / 2) {
          halfway.countDown();
          try {
            if (!goOn.await(120, TimeUnit.SECONDS)) {
              throw new IllegalStateException("the test never let the task go on");
            }
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
          }
        }
        long k = (i * 0x9E3779B97F4A7C15L) ^ p;
        i++;
        return RowFactory.create(k, payload);
      }
    };
  }

  /** A sorted partition's check: its row count, or -1 if its keys are out of order. */
  private static Iterator<Long> checkSorted(Iterator<Row> sorted) {
    long n = 0;
    long last = Long.MIN_VALUE;
    while (sorted.hasNext()) {
      long k = sorted.next().getLong(0);
      if (k < last) {
        return List.of(-1L).iterator();
      }
      last = k;
      n++;
    }
    return List.of(n).iterator();
  }

  /** Spark's off-heap sort of both partitions, checked; the rows counted per partition. */
  private static List<Long> sortJob() {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    Dataset<Row> in =
        spark.createDataFrame(
            jsc.parallelize(List.of(0, 1), 2).mapPartitions(OffHeapGuardSparkTest::rows), SCHEMA);
    return in.sortWithinPartitions("k")
        .javaRDD()
        .mapPartitions(OffHeapGuardSparkTest::checkSorted)
        .collect();
  }

  @Test
  void withNoNativeEngineABurstMakesSparksOwnSortGiveWayOnItsOwnThreads() throws Exception {
    // The same job without a burst: it does not spill, so any spill below is the guard's doing.
    spilledByTask.clear();
    assertEquals(List.of((long) ROWS_PER_PARTITION, (long) ROWS_PER_PARTITION), sortJob());
    GuardAwait.until("the control job's task metrics", () -> spilledByTask.size() >= 2);
    assertEquals(0L, spilledSum(), "without the guard holding, the sort fits: " + spilledByTask);

    MemoryManager mm = SparkEnv.get().memoryManager();
    SparkOffHeap offHeap =
        SparkOffHeap.forExecutor(null, TaskSlots.of(spark.sparkContext().conf()));
    assertNotNull(offHeap, "the executor has off-heap memory");
    assertEquals(
        OFF_HEAP / 4,
        offHeap.floor(),
        "what execution keeps beside a storage region of three quarters of 128 MiB");

    spilledByTask.clear();
    consumers.clear();
    halfway = new CountDownLatch(2);
    goOn = new CountDownLatch(1);
    CompletableFuture<List<Long>> job = CompletableFuture.supplyAsync(OffHeapGuardSparkTest::sortJob);
    UnaccountedMemory burst = new UnaccountedMemory();
    try {
      assertTrue(halfway.await(120, TimeUnit.SECONDS), "both tasks halfway");
      long used = mm.offHeapExecutionMemoryUsed();
      assertTrue(used >= 16 * MIB, "the sorters hold their pages: " + used);
      // The ledger's split of Spark's off-heap memory: Spark's own sorters hold it (the side
      // consumers are the test's, in nativepool's package, and left out).
      Map<String, Long> byEngine = ExecutorState.sparkConsumers().offHeapByEngine();
      assertTrue(
          byEngine.getOrDefault("spark", 0L) >= 16 * MIB && !byEngine.containsKey("comet"),
          byEngine::toString);

      long limit = UnaccountedMemory.residentAnonAndShmem() + LIMIT_ABOVE_MIB * MIB;
      Natives.configureGuard(true, RESERVE, limit, true, offHeap);
      GuardAwait.until(
          "the guard's first sample", () -> stat(ProcessStat.GUARD_HEADROOM) >= 2 * RESERVE);
      assertEquals(0, offHeap.held(), "nothing held before the burst");

      int steps = 0;
      while (steps < MAX_STEPS && stat(ProcessStat.GUARD_HEADROOM) >= 0) {
        burst.take(STEP);
        steps++;
        Thread.sleep(100);
      }
      assertTrue(stat(ProcessStat.GUARD_HEADROOM) < RESERVE, steps + " steps: " + Natives.processStats());
      GuardAwait.until("the guard holding Spark's free off-heap memory", () -> offHeap.held() > 0);
      long free = mm.maxOffHeapStorageMemory() - mm.offHeapStorageMemoryUsed();
      long total = mm.maxOffHeapStorageMemory() + mm.offHeapExecutionMemoryUsed();
      assertTrue(
          free <= offHeap.floor(),
          "nothing free but what the floor leaves: free " + free + ", held " + offHeap.held());
      assertTrue(
          total - mm.offHeapStorageMemoryUsed() >= offHeap.floor(),
          "the consumers keep the floor: storage " + mm.offHeapStorageMemoryUsed());

      goOn.countDown(); // the sorters go on, and meet no room at their next page
      List<Long> counts = job.get(240, TimeUnit.SECONDS);
      assertEquals(
          List.of((long) ROWS_PER_PARTITION, (long) ROWS_PER_PARTITION),
          counts,
          "sorted right, every row");
      GuardAwait.until("the guarded job's task metrics", () -> spilledByTask.size() >= 2);
      assertTrue(spilledSum() > 0, "Spark's sorters spilled: " + spilledByTask);
      assertTrue(stat(ProcessStat.GUARD_OFF_HEAP_TAKEN_BYTES) > 0, Natives.processStats()::toString);

      // Every spill() of a Spark consumer ran on its task's own thread, never on the guard's.
      Set<Thread> spillThreads = ConcurrentHashMap.newKeySet();
      for (SparkTestConsumer c : consumers) {
        spillThreads.addAll(c.spillThreads);
      }
      assertFalse(spillThreads.isEmpty(), "Spark made the side consumers spill for the sorters");
      assertTrue(taskThreads.containsAll(spillThreads), "spills on task threads: " + spillThreads);

      List<GuardEpisode> episodes = Natives.guardEpisodes();
      GuardEpisode holding =
          episodes.stream().filter(e -> e.offHeapTaken() > 0).findFirst().orElse(null);
      assertNotNull(holding, episodes::toString);
      assertTrue(holding.offHeapReactionMicros() >= 0, holding::toString);
      assertTrue(holding.offHeapPeak() > 0 && holding.offHeapPeak() <= OFF_HEAP, holding::toString);

      burst.free();
      GuardAwait.until("the off-heap ballast back to Spark", () -> offHeap.held() == 0);
      assertEquals(0, stat(ProcessStat.GUARD_OFF_HEAP_BALLAST));
      assertEquals(0, mm.offHeapStorageMemoryUsed(), "no storage memory left behind");
      GuardEpisodeEvent ev =
          GuardAwait.value(
              "the driver's event of the episode",
              () ->
                  busEvents.stream()
                      .filter(b -> b instanceof GuardEpisodeEvent g && g.getOffHeapTaken() > 0)
                      .map(b -> (GuardEpisodeEvent) b)
                      .findFirst()
                      .orElse(null));
      assertTrue(ev.describe().contains("held Spark's free off-heap memory"), ev::describe);
    } finally {
      burst.free();
      goOn.countDown();
      Natives.configureGuard(false, 0, 0, false);
    }
    assertEquals(0, offHeap.held(), "a stopped guard holds nothing");
  }

  private static long spilledSum() {
    return spilledByTask.values().stream().mapToLong(Long::longValue).sum();
  }

  private static long stat(ProcessStat s) {
    return Natives.processStats().get(s);
  }
}
