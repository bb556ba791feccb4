package org.nativepool.spark.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import java.util.regex.Pattern;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.memory.TaskMemoryManager;
import org.apache.spark.metrics.source.Source;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.util.JsonProtocol;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.events.GuardEpisodeEvent;
import org.nativepool.spark.jni.GuardEpisode;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.ledger.ExecutorLedger;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.memory.TaskPool;
import org.nativepool.spark.testing.EventLogs;
import org.nativepool.spark.testing.GuardAwait;
import org.nativepool.spark.testing.LocalSpark;
import org.nativepool.spark.testing.UnaccountedMemory;
import org.nativepool.spark.testing.LogCapture;
import org.nativepool.spark.testing.SparkMetrics;

/**
 * The pod guard for real, no mocks: a {@code local[1]} Spark with the plugin, Spark's own {@code
 * TaskMemoryManager}, the real library, and this JVM's own resident memory against a limit the test
 * sets (no cgroup needed: the guard keeps a configured limit against the process's {@code RssAnon +
 * RssShmem}, the tighter one if the test runs in a cgroup with a limit too).
 *
 * <p>A task holds 64 MiB in a spillable native reservation whose spiller frees them. The test then
 * sets the guard's limit to this JVM's resident memory + {@value #LIMIT_ABOVE_MIB} MiB with a 32
 * MiB reserve, and takes 16 MiB at a time outside any accounting ({@code Unsafe.allocateMemory},
 * every page touched), ten times a second, until the headroom is gone (about 160 MiB): it falls
 * under the reserve, the guard spills the task's native consumer on a thread of its own, and the
 * freed bytes stay held from Spark (ballast) while the burst lasts. Once the burst is freed the
 * episode ends, the ballast goes back to Spark, the executor logs its WARN line and the driver gets
 * the episode's event.
 *
 * <p>Timing on a busy machine is never asserted: every expectation is awaited with a generous
 * deadline. The burst is freed and the guard stopped whatever happens.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class PodGuardSparkTest {
  private static final long MIB = 1L << 20;
  private static final long HELD = 64 * MIB;
  private static final long RESERVE = 32 * MIB;
  private static final long LIMIT_ABOVE_MIB = 160;
  private static final int MAX_STEPS = 24;
  private static final long STEP = 16 * MIB;
  private static final String CONSUMER = "guard-test-sort";

  @TempDir static Path eventLogDir;

  private static SparkSession spark;
  private static JavaSparkContext jsc;
  private static LogCapture log;
  private static final List<SparkListenerEvent> busEvents = new CopyOnWriteArrayList<>();

  // Shared with the task, which runs in this JVM (local mode).
  private static final CountDownLatch holding = new CountDownLatch(1);
  private static final CountDownLatch release = new CountDownLatch(1);
  private static final AtomicInteger spillCalls = new AtomicInteger();
  private static final Set<Thread> spillThreads = ConcurrentHashMap.newKeySet();
  private static volatile TaskMemoryManager taskMemory;
  private static volatile Thread taskThread;
  private static volatile long taskAttempt;
  private static volatile Reservation reservation;

  @BeforeAll
  static void startSpark() {
    log = LogCapture.attach(ExecutorReporter.class.getName());
    spark =
        LocalSpark.builder("local[1]", "PodGuardSparkTest", "256m")
            .config(LocalSpark.eventLog(eventLogDir))
            .getOrCreate();
    jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    LocalSpark.collectOtherEvents(spark, busEvents);
  }

  @AfterAll
  static void stopSpark() {
    release.countDown();
    Natives.configureGuard(false, 0, 0, false);
    LocalSpark.stop(spark);
    if (log != null) {
      log.close();
    }
  }

  /**
   * The task: 64 MiB in a spillable native reservation, held until the test releases it. Its
   * spiller frees everything and records the thread it was called on.
   */
  private static Iterator<Long> holdUntilReleased(Iterator<Integer> rows) throws Exception {
    while (rows.hasNext()) {
      rows.next();
    }
    TaskContext tc = TaskContext.get();
    TaskPool pool = TaskPool.openForCurrentTask();
    Reservation[] r = new Reservation[1];
    r[0] =
        pool.newReservation(
            CONSUMER,
            true,
            target -> {
              spillCalls.incrementAndGet();
              spillThreads.add(Thread.currentThread());
              long n = r[0].size();
              r[0].shrink(n);
              return n;
            });
    r[0].grow(HELD);
    reservation = r[0];
    taskMemory = tc.taskMemoryManager();
    taskThread = Thread.currentThread();
    taskAttempt = tc.taskAttemptId();
    holding.countDown();
    if (!release.await(240, TimeUnit.SECONDS)) {
      throw new IllegalStateException("the test never released the task");
    }
    long left = r[0].size();
    r[0].close();
    return List.of(left).iterator();
  }

  @Test
  void aBurstOutsideNativeMemoryMakesTheGuardSpillIntoBallastUntilItIsFreed() throws Exception {
    CompletableFuture<List<Long>> job =
        CompletableFuture.supplyAsync(
            () ->
                jsc.parallelize(List.of(1), 1)
                    .mapPartitions(PodGuardSparkTest::holdUntilReleased)
                    .collect());
    UnaccountedMemory burst = new UnaccountedMemory();
    try {
      assertTrue(holding.await(120, TimeUnit.SECONDS), "the task holds its reservation");
      assertTrue(consumption() >= HELD, "Spark counts the task's 64 MiB: " + consumption());
      // The episode's growth is measured from the ledger's last calm reading: the first one comes
      // a poll period after the plugin's start, which a fast start (Spark 3.5) may not wait for.
      GuardAwait.until(
          "a ledger reading before the burst",
          () -> ExecutorLedger.current() != null && ExecutorLedger.current().latest() != null);

      long releasedBefore = stat(ProcessStat.GUARD_RELEASED_BYTES);
      long limit = UnaccountedMemory.residentAnonAndShmem() + LIMIT_ABOVE_MIB * MIB;
      Natives.configureGuard(true, RESERVE, limit, true);
      GuardAwait.until(
          "the guard's first sample at the test's limit",
          () -> stat(ProcessStat.GUARD_HEADROOM) >= 2 * RESERVE);
      assertEquals(RESERVE, stat(ProcessStat.GUARD_RESERVE));
      long keptLimit = stat(ProcessStat.GUARD_LIMIT);
      assertTrue(keptLimit > 0 && keptLimit <= limit, "the tighter limit: " + keptLimit);
      assertEquals(List.of(), Natives.guardEpisodes(), "calm before the burst");

      // About 160 MiB, until the headroom is gone: the guard's reactions return some of the
      // process's free memory (the Go heap, malloc's arenas), which the burst then makes up for.
      int steps = 0;
      while (steps < MAX_STEPS && stat(ProcessStat.GUARD_HEADROOM) >= 0) {
        burst.take(STEP);
        steps++;
        Thread.sleep(100);
      }
      assertTrue(stat(ProcessStat.GUARD_HEADROOM) < 0, steps + " steps: " + Natives.processStats());

      // With the headroom gone an episode lasts. (The headroom may have dipped under the reserve a
      // step earlier and come back after the guard's first reaction: an earlier episode.)
      GuardEpisode lasting =
          GuardAwait.value(
              "an episode lasting with the whole burst taken",
              () -> {
                List<GuardEpisode> eps = Natives.guardEpisodes();
                GuardEpisode last = eps.isEmpty() ? null : eps.get(eps.size() - 1);
                return last != null && last.open() ? last : null;
              });
      GuardEpisode spilling =
          GuardAwait.value(
              "an episode that spilled the task's 64 MiB",
              () -> find(Natives.guardEpisodes(), x -> x.spilled() >= HELD));
      assertTrue(spilling.reactionMicros() >= 0, spilling::toString);
      GuardEpisode.Spill spill =
          find(spilling.spills(), x -> x.consumer().startsWith(CONSUMER) && x.bytes() >= HELD);
      assertNotNull(spill, spilling.spills()::toString);
      assertTrue(spill.consumer().endsWith(" (task " + taskAttempt + ")"), spill::toString);

      // The guard's own thread called the spiller: neither the test's nor the task's.
      assertTrue(spillCalls.get() >= 1);
      assertFalse(spillThreads.contains(Thread.currentThread()), spillThreads::toString);
      assertFalse(spillThreads.contains(taskThread), spillThreads::toString);
      assertEquals(0, reservation.size(), "the spiller freed the reservation");

      // Ballast: the freed bytes stay held from Spark while the pressure lasts, all but what the
      // guard gives back once the headroom is over two reserves (after a spill the runtimes may
      // return enough memory for that: the Go heap, malloc's arenas). Polled, since the guard
      // frees to Spark before it counts the bytes it released.
      LongSupplier givenBack = () -> stat(ProcessStat.GUARD_RELEASED_BYTES) - releasedBefore;
      GuardAwait.until(
          "Spark still counting the spilled bytes, but for ballast given back",
          () -> consumption() + givenBack.getAsLong() >= HELD);
      GuardAwait.until(
          "the spilled bytes in ballast, but for what was given back",
          () -> stat(ProcessStat.GUARD_BALLAST) + givenBack.getAsLong() >= HELD);
      long back = givenBack.getAsLong();
      assertTrue(back < HELD, "some ballast is still held; given back: " + back);
      // Held a while, so that the reporter's ledger readings see the whole burst.
      Thread.sleep(1000);
      GuardAwait.until(
          "Spark still counting them while the burst lasts, but for ballast given back",
          () -> consumption() + givenBack.getAsLong() >= HELD);
      assertTrue(
          find(Natives.guardEpisodes(), x -> same(x, lasting) && x.open()) != null,
          "the episode lasts as long as the burst");

      burst.free();
      GuardEpisode ended =
          GuardAwait.value(
              "the episode's end",
              () -> find(Natives.guardEpisodes(), x -> same(x, lasting) && !x.open()));
      // The ballast goes back as the headroom allows (two reserves kept), over a sample or two.
      GuardAwait.until(
          "the ballast back to Spark",
          () -> consumption() < HELD / 2 && stat(ProcessStat.GUARD_BALLAST) == 0);
      assertTrue(stat(ProcessStat.GUARD_RELEASED_BYTES) >= HELD);
      assertTrue(stat(ProcessStat.GUARD_SPILLED_BYTES) >= HELD);
      List<GuardEpisode> episodes = Natives.guardEpisodes();
      assertTrue(stat(ProcessStat.GUARD_EPISODES) >= episodes.size(), episodes::toString);
      assertTrue(episodes.stream().noneMatch(GuardEpisode::open), episodes::toString);

      // The executor's WARN lines: one per episode, naming what the operator needs.
      for (GuardEpisode x : episodes) {
        String mark = "pod guard episode " + x.id() + ": the headroom fell";
        GuardAwait.value(
            "the WARN line of " + x, () -> find(log.messages(), m -> m.contains(mark)));
      }
      String line = lineOf(spilling);
      assertTrue(
          line.startsWith("nativepool: executor driver: pod guard episode " + spilling.id()), line);
      assertTrue(
          line.contains(
              "under the 32.0 MiB reserve of the " + Bytes.mib(spilling.limit()) + " limit"),
          line);
      assertTrue(
          line.contains("; unreclaimable " + Bytes.mib(spilling.startUnreclaimable())), line);
      assertTrue(line.contains("; grew outside native memory: "), line);
      assertTrue(
          line.contains("(" + spill.consumer() + " " + Bytes.format(spill.bytes())),
          "who spilled what: " + line);
      assertTrue(Pattern.compile("; reaction \\d+\\.\\d ms").matcher(line).find(), line);
      String lastLine = lineOf(ended);
      assertTrue(
          Pattern.compile("; (recovered in|still short after) \\d+\\.\\d ms")
              .matcher(lastLine)
              .find(),
          lastLine);
      if (ended.nothingLeft()) {
        assertTrue(lastLine.contains("nothing native"), lastLine);
      }

      // The driver: an event per episode on the bus, its gauges, the event log replaying them.
      for (GuardEpisode x : episodes) {
        GuardAwait.value(
            "the event of " + x,
            () ->
                find(
                    busEvents,
                    b ->
                        b instanceof GuardEpisodeEvent g
                            && g.getEpisodeId() == x.id()
                            && g.getStartMillis() == x.startMillis()));
      }
      GuardEpisodeEvent ev = eventOf(ended);
      assertEquals("driver", ev.getExecutorId());
      assertFalse(ev.isOpen());
      assertEquals(ended.recoveryMicros(), ev.getRecoveryMicros());
      // The ledger saw the burst in the lasting episode: some resident part (jvm.unsafe with
      // Native Memory Tracking, else the unexplained remainder) grew from the last calm reading,
      // taken with the reserve still free, so at least two steps before the headroom was gone.
      // (One of the episodes: on a loaded machine the burst may straddle two.)
      long grew = 0;
      StringBuilder seen = new StringBuilder();
      for (GuardEpisode x : episodes) {
        Map<String, Long> parts = eventOf(x).getGrownParts();
        seen.append(x.id()).append(": ").append(parts).append("; ");
        grew = Math.max(grew, parts.values().stream().mapToLong(Long::longValue).max().orElse(0));
      }
      assertTrue(grew >= STEP / 2, "grown parts of the episodes " + seen);
      assertEquals(
          spilling.spills().stream().mapToLong(GuardEpisode.Spill::bytes).sum(),
          eventOf(spilling).getSpills().values().stream().mapToLong(v -> v).sum());
      Map<String, Long> driver = driverGauges();
      assertTrue(driver.get("guard.episodes") >= episodes.size(), driver::toString);
      assertTrue(driver.get("guard.spilledBytes") >= HELD, driver::toString);
      assertTrue(driver.containsKey("guard.lastReactionMillis"), driver::toString);
      spark.sparkContext().listenerBus().waitUntilEmpty();
      String logged =
          GuardAwait.value(
              "the episode in the event log",
              () ->
                  find(
                      eventLogLines(),
                      l ->
                          l.contains(GuardEpisodeEvent.class.getName())
                              && l.contains("\"startMillis\":" + ended.startMillis())));
      assertEquals(ev, JsonProtocol.sparkEventFromJson(logged), "replayed as it was posted");

      for (GuardEpisode x : episodes) {
        String mark = "pod guard episode " + x.id() + ": the headroom fell";
        assertEquals(
            1,
            log.messages().stream().filter(m -> m.contains(mark)).count(),
            "one executor line per episode, also after it ended: " + x);
      }
    } finally {
      burst.free();
      release.countDown();
      Natives.configureGuard(false, 0, 0, false);
    }
    assertEquals(List.of(0L), job.get(60, TimeUnit.SECONDS), "the task closed its reservation");
  }

  /** Whether two listings are of the same episode. */
  private static boolean same(GuardEpisode a, GuardEpisode b) {
    return a.id() == b.id() && a.startMillis() == b.startMillis();
  }

  /** The executor's WARN line of an episode. */
  private static String lineOf(GuardEpisode e) {
    String mark = "pod guard episode " + e.id() + ": the headroom fell";
    String line = find(log.messages(), m -> m.contains(mark));
    assertNotNull(line, () -> "no line for " + e + " in " + log.messages());
    return line;
  }

  /** The event the driver posted for an episode. */
  private static GuardEpisodeEvent eventOf(GuardEpisode e) {
    for (SparkListenerEvent b : busEvents) {
      if (b instanceof GuardEpisodeEvent g
          && g.getEpisodeId() == e.id()
          && g.getStartMillis() == e.startMillis()) {
        return g;
      }
    }
    throw new AssertionError("no event for " + e + " in " + busEvents);
  }

  /** The task's memory as Spark's TaskMemoryManager counts it. */
  private static long consumption() {
    return taskMemory.getMemoryConsumptionForThisTask();
  }

  private static long stat(ProcessStat s) {
    return Natives.processStats().get(s);
  }

  /** The driver side's gauges: the plugin source that has {@code total.reserved}. */
  private static Map<String, Long> driverGauges() {
    List<Source> sources = SparkMetrics.pluginSources();
    for (Source s : sources) {
      if (s.metricRegistry().getMetrics().containsKey("total.reserved")) {
        Map<String, Long> out = new java.util.HashMap<>();
        s.metricRegistry().getGauges().forEach((k, g) -> out.put(k, (Long) g.getValue()));
        return out;
      }
    }
    throw new AssertionError("no driver source among " + sources);
  }

  private static List<String> eventLogLines() {
    return EventLogs.lines(eventLogDir);
  }

  private static <T> T find(List<T> items, java.util.function.Predicate<T> p) {
    return items.stream().filter(p).findFirst().orElse(null);
  }
}
