package org.nativepool.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.MetricRegistry;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.SparkException;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.metrics.source.Source;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.config.PoolSettings;
import org.nativepool.spark.executor.ExecutorGauges;
import org.nativepool.spark.jni.LibraryLoader;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.PoolStats;
import org.nativepool.spark.jni.ProcessStats;
import org.nativepool.spark.memory.ExecutorState;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.memory.TaskPool;
import org.nativepool.spark.testing.LocalSpark;
import org.nativepool.spark.testing.SparkMemory;
import org.nativepool.spark.testing.SparkMetrics;
import org.nativepool.spark.testing.SparkTestConsumer;

/**
 * The plugin in a {@code local[2]} SparkSession with Spark's leak check turned into an exception:
 * tasks open their pools through the plugin, grow and shrink, leave reservations open for the
 * completion listener, and finish without a leak; the plugin's gauges are non-zero while they run.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class NativePoolPluginTest {
  private static final long MIB = SparkMemory.MIB;

  private static SparkSession spark;
  private static JavaSparkContext jsc;

  @BeforeAll
  static void startSpark() {
    spark =
        LocalSpark.builder("local[2]", "NativePoolPluginTest", "128m")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.nativepool.pool", "fair_unified")
            .config("spark.nativepool.chunkSize", "1m")
            .config("spark.nativepool.task.reservedThresholds", "16m,1g")
            .config("spark.nativepool.goMemoryLimit", "300m")
            .getOrCreate();
    jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
  }

  @AfterAll
  static void stopSpark() {
    LocalSpark.stop(spark);
  }

  @AfterEach
  void everyTaskReturnedEverything() {
    ProcessStats s = Natives.processStats();
    assertEquals(0, s.liveTasks(), s::toString);
    assertEquals(0, s.held(), s::toString);
    assertEquals(0, s.reserved(), s::toString);
  }

  /** The executor plugin's gauges, read from Spark's metrics system on this executor. */
  static Map<String, Long> gauges() {
    // In local mode the driver side's source has the same name; the executor's has "reserved".
    List<Source> sources =
        SparkMetrics.pluginSources()
            .stream()
            .filter(src -> src.metricRegistry().getMetrics().containsKey("reserved"))
            .collect(Collectors.toList());
    assertEquals(
        1, sources.size(), "executor plugin metric sources named " + SparkMetrics.PLUGIN_SOURCE);
    MetricRegistry registry = sources.get(0).metricRegistry();
    Map<String, Long> out = new HashMap<>();
    registry.getGauges().forEach((k, g) -> out.put(k, (Long) g.getValue()));
    registry.getCounters().forEach((k, c) -> out.put(k, c.getCount()));
    return out;
  }

  /**
   * One task: opens the pool twice through the plugin (the second open joins the same pool),
   * grows 16 MiB in 1 MiB steps, samples the gauges, shrinks 4 MiB, and leaves everything open.
   */
  private static Iterator<Map<String, Long>> growAndLeaveOpen(Iterator<Integer> rows) {
    TaskPool p = TaskPool.openForCurrentTask();
    TaskPool joined = TaskPool.openForCurrentTask();
    Reservation r = p.newReservation("job-" + TaskContext.getPartitionId(), true, null);
    Reservation r2 = joined.newReservation("joined", false, null);
    int n = 0;
    while (rows.hasNext()) {
      rows.next();
      n++;
    }
    for (int i = 0; i < 16; i++) {
      if (!r.tryGrow(MIB)) {
        r.grow(MIB);
      }
    }
    r2.grow(3 * MIB);
    // The gauges are served from the reporting thread's latest reading (one per poll, at most a
    // second apart): wait for a reading taken while this task holds its bytes.
    Map<String, Long> sample = new HashMap<>(gauges());
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (sample.getOrDefault("reserved", 0L) == 0 && System.nanoTime() < deadline) {
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      sample = new HashMap<>(gauges());
    }
    PoolStats s = p.stats();
    sample.put("task.reserved", s.reserved());
    sample.put("task.held", s.held());
    sample.put("task.joinedReserved", joined.stats().reserved());
    sample.put(
        "task.sparkFigure",
        TaskContext.get().taskMemoryManager().getMemoryConsumptionForThisTask());
    sample.put("rows", (long) n);
    r.shrink(4 * MIB);
    return Collections.singletonList(sample).iterator();
  }

  @Test
  void tasksOpenPoolsThroughThePluginAndTheirEndGivesBackAndCountsWhatWasLeftOpen()
      throws InterruptedException {
    ProcessStats before = Natives.processStats();
    List<Integer> data = IntStream.range(0, 40).boxed().collect(Collectors.toList());
    List<Map<String, Long>> samples =
        jsc.parallelize(data, 4).mapPartitions(NativePoolPluginTest::growAndLeaveOpen).collect();

    assertEquals(4, samples.size());
    for (Map<String, Long> m : samples) {
      assertEquals(10L, m.get("rows"));
      assertEquals(19 * MIB, m.get("task.reserved"), m::toString);
      assertEquals(19 * MIB, m.get("task.joinedReserved"), "same task, same pool: " + m);
      assertEquals(m.get("task.held"), m.get("task.sparkFigure"), m::toString);
      for (String g : ExecutorGauges.GAUGES.keySet()) {
        assertTrue(m.containsKey(g), "gauge " + g + " missing: " + m);
      }
      for (String g :
          Arrays.asList("reserved", "heldFromSpark", "peak", "liveTasks", "upstreamCalls")) {
        assertTrue(m.get(g) > 0, "gauge " + g + " is zero inside a task: " + m);
      }
    }
    ProcessStats after = Natives.processStats();
    // Each task left its two reservations open (12 MiB and 3 MiB): the listener gave Spark every
    // byte back, and counted each as one leak of what its user still reserved (a reservation's
    // leak is its size(), whatever the pool held for it), so every leak names its owner once.
    assertEquals(before.leaks() + 8, after.leaks(), "two open reservations per task: " + after);
    assertEquals(before.leakedBytes() + 4 * 15 * MIB, after.leakedBytes(), after::toString);
    assertTrue(after.upstreamCalls() > before.upstreamCalls());
    Map<String, Long> idle = gauges();
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (idle.get("liveTasks") != 0 && System.nanoTime() < deadline) {
      Thread.sleep(50); // the gauges show the reporting thread's latest poll
      idle = gauges();
    }
    assertEquals(0L, idle.get("liveTasks"));
    assertEquals(0L, idle.get("heldFromSpark"));
  }

  private static Iterator<Long> growThenFail(Iterator<Integer> rows) {
    Reservation r = TaskPool.openForCurrentTask().newReservation("doomed", false, null);
    r.grow(8 * MIB);
    throw new IllegalStateException("task body failed on purpose after growing 8 MiB");
  }

  @Test
  void aFailedTaskStillReturnsEverythingToSpark() {
    List<Integer> data = Arrays.asList(1, 2);
    SparkException e =
        assertThrows(
            SparkException.class,
            () ->
                jsc.parallelize(data, 1).mapPartitions(NativePoolPluginTest::growThenFail).count());
    assertTrue(
        String.valueOf(e.getMessage()).contains("task body failed on purpose after growing 8 MiB"),
        e.getMessage());
  }

  /**
   * Inside a real task: a Spark-side consumer of the task asks for memory the native pool holds,
   * and Spark makes the native consumer's spiller give it back.
   */
  private static Iterator<Long> sparkSpillsNativeInsideATask(Iterator<Integer> rows) {
    TaskPool p = TaskPool.openForCurrentTask();
    AtomicReference<Reservation> self = new AtomicReference<>();
    Reservation nat =
        p.newReservation(
            "native-sort",
            true,
            target -> {
              long freed = self.get().size();
              self.get().shrink(freed);
              return freed;
            });
    self.set(nat);
    nat.grow(100 * MIB);
    SparkTestConsumer other =
        new SparkTestConsumer(TaskContext.get().taskMemoryManager(), "spark-side", false);
    long got = other.take(64 * MIB);
    long natSize = nat.size();
    PoolStats s = p.stats();
    other.giveAll();
    return Arrays.asList(got, natSize, s.spillRequests(), s.spillBytesFreed()).iterator();
  }

  @Test
  void sparkSpillsANativeConsumerInsideARealTask() {
    List<Long> out =
        jsc.parallelize(Arrays.asList(1), 1)
            .mapPartitions(NativePoolPluginTest::sparkSpillsNativeInsideATask)
            .collect();
    assertEquals(64 * MIB, out.get(0), "Spark-side consumer's grant: " + out);
    assertEquals(0L, out.get(1), "native consumer spilled: " + out);
    assertTrue(out.get(2) >= 1, "spill requests: " + out);
    assertTrue(out.get(3) >= 36 * MIB, "spill bytes freed: " + out);
  }

  /**
   * The plugin passes its process-memory settings to Go: the Go runtime's soft limit is the
   * configured 300 MiB, glibc's mmap threshold is the default 128 KiB (unless the environment set
   * MALLOC_MMAP_THRESHOLD_, which wins), and the process peaks are reported.
   */
  @Test
  void thePluginSetsTheGoMemoryLimitAndTheMmapThresholdAndReportsPeaks() {
    ProcessStats s = Natives.processStats();
    assertEquals(300 * MIB, s.goMemoryLimit(), s::toString);
    long expected = System.getenv("MALLOC_MMAP_THRESHOLD_") == null ? 128 << 10 : 0;
    assertEquals(expected, s.mallocMmapThreshold(), s::toString);
    assertTrue(s.goBaseline() > 0, s::toString);
    assertTrue(s.goPeak() >= s.goMapped() && s.goMapped() > 0, s::toString);
    assertTrue(s.vmHWM() > 0, s::toString);
    Map<String, Long> g = gauges();
    assertEquals(300 * MIB, g.get("goMemoryLimit"));
    assertTrue(g.get("vmHWM") >= g.get("goPeak"), g::toString);
  }

  @Test
  void pluginSettingsMatchTheConf() {
    PoolSettings s = ExecutorState.settings();
    assertEquals(PoolKind.FAIR_UNIFIED, s.kind());
    assertEquals(MIB, s.chunkSize());
    assertEquals(128 * MIB, s.poolSize());
    assertEquals(Arrays.toString(new long[] {16 * MIB, 1L << 30}), Arrays.toString(s.taskThresholds()));
    assertTrue(LibraryLoader.isLoaded());
  }
}
