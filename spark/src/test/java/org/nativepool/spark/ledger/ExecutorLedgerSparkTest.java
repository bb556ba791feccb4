package org.nativepool.spark.ledger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.MetricRegistry;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.metrics.source.Source;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.util.JsonProtocol;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.nativepool.spark.arrow.TaskArrowAllocators;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.config.LedgerSettings;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.events.LedgerCrossingEvent;
import org.nativepool.spark.events.StagePeaksEvent;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.memory.TaskPool;
import org.nativepool.spark.testing.EventLogs;
import org.nativepool.spark.testing.LocalSpark;
import org.nativepool.spark.testing.LogCapture;
import org.nativepool.spark.testing.SparkMetrics;

/**
 * The executor memory ledger in a real {@code local[2]} Spark 4.1 with the plugin, Native Memory
 * Tracking on (surefire's JVM runs with {@code -XX:NativeMemoryTracking=summary}), the event log
 * on and executors reporting every 200 ms: the parts and their sum, the gauges on both sides,
 * threshold crossings up and down reaching a listener loaded by class name, the log, the counter
 * and the event log, and the high-water marks per part, per task pool and per consumer, reset by
 * hand on the executor and per stage on the driver.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ExecutorLedgerSparkTest {
  private static final long MIB = 1L << 20;
  private static final String CONSUMER = "ledger-test-operator";

  @TempDir static Path eventLogDir;

  private static SparkSession spark;
  private static JavaSparkContext jsc;
  private static LogCapture log;
  private static final List<SparkListenerEvent> busEvents = new CopyOnWriteArrayList<>();

  /** The listener {@value LedgerSettings#LISTENERS} names: records what it is told. */
  public static final class Recorder implements LedgerListener {
    static final List<LedgerCrossingEvent> CROSSINGS = new CopyOnWriteArrayList<>();

    /** Spark makes it by reflection. */
    public Recorder() {}

    @Override
    public void onCrossing(LedgerCrossingEvent c) {
      CROSSINGS.add(c);
    }
  }

  @BeforeAll
  static void startSpark() {
    log = LogCapture.attach(ExecutorLedger.class.getName());
    spark =
        LocalSpark.builder("local[2]", "ExecutorLedgerSparkTest", "256m")
            .config(LocalSpark.eventLog(eventLogDir))
            .config("spark.executor.heartbeatInterval", "200ms")
            .config("spark.nativepool.chunkSize", "1m")
            .config(
                NativePoolConf.LEDGER_THRESHOLDS.key(),
                "arrow.java=24m, native.reserved=16m, total=1m, netty.shared.direct=6m")
            .config(NativePoolConf.LEDGER_HYSTERESIS.key(), "0.5")
            .config(NativePoolConf.LEDGER_LISTENERS.key(), Recorder.class.getName())
            .getOrCreate();
    jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    LocalSpark.collectOtherEvents(spark, busEvents);
  }

  @AfterAll
  static void stopSpark() {
    LocalSpark.stop(spark);
    if (log != null) {
      log.close();
    }
  }

  private static void await(String what, BooleanSupplier done) throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (!done.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "timed out waiting for " + what);
      Thread.sleep(50);
    }
  }

  /** Gauges and counters of the plugin sources that have {@code key}, by name. */
  private static Map<String, Long> metrics(String key) {
    Map<String, Long> out = new HashMap<>();
    for (Source s : SparkMetrics.pluginSources()) {
      MetricRegistry r = s.metricRegistry();
      if (r.getMetrics().containsKey(key)) {
        r.getGauges().forEach((k, g) -> out.put(k, (Long) g.getValue()));
        r.getCounters().forEach((k, c) -> out.put(k, c.getCount()));
      }
    }
    return out;
  }

  /**
   * Every part the ledger reads by reflection is there on this Spark line: Spark's netty
   * allocators (the shared ones, the RPC environment's and the block transfer service's), netty's
   * cleaner mode and Spark SQL's Arrow allocator, with this jar's Arrow. A failure would have been
   * logged at WARN at the executor's start; here it fails the test, on every line the matrix runs.
   */
  @Test
  @Order(0)
  void everyReflectiveReadFindsItsTargetOnThisSparkLine() {
    jsc.parallelize(List.of(1, 2), 2).count(); // the transport's allocators exist once used
    List<String> failed =
        LedgerReader.checkReflection().stream()
            .filter(t -> !t.startsWith(LedgerReflectionTest.TEST_ONLY)) // if run in this JVM
            .toList();
    assertEquals(List.of(), failed, "reflective reads that failed");
    assertFalse(LedgerReader.findNettyAllocators().isEmpty(), "Spark's netty allocators");
  }

  @Test
  @Order(1)
  void theLedgerSplitsTheResidentSetByOwnerAndTheGaugesServeIt() throws Exception {
    ExecutorLedger ledger = ExecutorLedger.current();
    assertNotNull(ledger, "the executor plugin installs its ledger");
    LedgerSnapshot s = ledger.readNow();
    for (String part :
        List.of(
            LedgerReader.JVM_HEAP_RESIDENT,
            LedgerReader.JVM_HEAP_COMMITTED,
            LedgerReader.JVM_HEAP_USED,
            LedgerReader.JVM_HEAP_AFTER_GC,
            LedgerReader.JVM_METASPACE,
            LedgerReader.JVM_CODE_CACHE,
            LedgerReader.JVM_THREADS,
            LedgerReader.JVM_GC,
            LedgerReader.JVM_NATIVE,
            LedgerReader.JVM_UNSAFE,
            LedgerReader.JVM_DIRECT,
            LedgerReader.JVM_MAPPED,
            LedgerReader.ARROW_JAVA,
            LedgerReader.NATIVE_RESERVED,
            LedgerReader.NATIVE_HELD,
            LedgerReader.NATIVE_SLACK,
            LedgerReader.LEAKED_RESIDENT,
            LedgerReader.NATIVE_ALLOCATED,
            LedgerReader.GO_HEAP_IN_USE,
            LedgerReader.GO_HEAP_IDLE,
            LedgerReader.GO_STACKS,
            LedgerReader.GO_GC_META,
            LedgerReader.GO_OTHER,
            LedgerReader.MALLOC_RETAINED)) {
      assertTrue(s.get(part) >= 0, part + " missing from " + s);
    }
    for (String part : List.of(LedgerReader.JVM_METASPACE, LedgerReader.JVM_THREADS, LedgerReader.GO_HEAP_IN_USE)) {
      assertTrue(s.get(part) > 0, part + " is empty in " + s);
    }
    // Spark's transport: the shared pooled allocator of the RPC environment and block transfer.
    List<String> netty =
        s.parts().keySet().stream()
            .filter(p -> p.startsWith(LedgerReader.NETTY_PREFIX) && p.endsWith(".direct"))
            .collect(Collectors.toList());
    assertFalse(netty.isEmpty(), "no netty pool in " + s.parts().keySet());
    assertEquals(s.rss(), s.explained() + s.unexplained(), "the parts and the rest sum to RSS");
    System.out.println("nativepool ledger of an idle local[2] executor: " + s.line());
    // With NMT and the heap's resident bytes, the JVM's memory is all owned: what is left is
    // small beside RSS, and every part counts resident bytes, so the parts never exceed the RSS
    // by more than the noise of one reading.
    assertEquals(LedgerSnapshot.Kind.RESIDENT, s.kind(LedgerReader.JVM_HEAP_RESIDENT));
    assertEquals(LedgerSnapshot.Kind.DETAIL, s.kind(LedgerReader.JVM_HEAP_COMMITTED));
    assertTrue(
        s.unexplained() < s.rss() / 4, "unexplained " + s.unexplained() + ": " + s.line());
    for (int i = 0; i < 10; i++) {
      LedgerSnapshot r = i == 0 ? s : ledger.readNow();
      assertTrue(
          r.unexplained() > -LedgerReader.NOISE_BYTES,
          "the parts exceed RSS by more than the noise: "
              + r.line()
              + "; heap committed "
              + Bytes.format(r.get(LedgerReader.JVM_HEAP_COMMITTED)));
      Thread.sleep(100);
    }

    await("the gauges", () -> metrics("ledger.rss").containsKey("ledger.jvm.threads"));
    Map<String, Long> g = metrics("ledger.rss");
    assertTrue(g.get("ledger.rss") > 0, g::toString);
    assertTrue(g.containsKey("ledger.unexplained"), g::toString);
    assertTrue(g.containsKey(ExecutorLedger.CROSSINGS_COUNTER), g::toString);
    await(
        "the driver's gauges of the executor's ledger",
        () -> metrics("total.executors").getOrDefault("executor.driver.ledger.rss", -1L) > 0);
    Map<String, Long> d = metrics("total.executors");
    assertTrue(d.get("total.ledger.rss") > 0, d::toString);
    assertFalse(
        d.keySet().stream().anyMatch(k -> k.contains("Peak.")),
        "part and consumer peaks are not gauges: " + d.keySet());
  }

  /**
   * One task: 30 MiB of Java Arrow buffers and a 20 MiB native reservation of {@value #CONSUMER},
   * held for a second (five polls), then freed.
   */
  private static java.util.Iterator<Long> holdMemoryForASecond(java.util.Iterator<Integer> rows)
      throws InterruptedException {
    TaskArrowAllocators arrows = TaskArrowAllocators.forCurrentTask();
    Reservation r = TaskPool.openForCurrentTask().newReservation(CONSUMER, false, null);
    try (ArrowBuf buf = arrows.producer().buffer(30 * MIB)) {
      buf.setZero(0, buf.capacity()); // resident, not just reserved
      r.grow(20 * MIB);
      Thread.sleep(1000);
    } finally {
      r.close();
    }
    return Collections.singletonList(TaskContext.get().stageId() + 0L).iterator();
  }

  @Test
  @Order(2)
  void crossingsUpAndDownReachTheListenerTheLogTheCounterAndTheEventLog() throws Exception {
    ExecutorLedger ledger = ExecutorLedger.current();
    long stage =
        jsc.parallelize(List.of(1), 1)
            .mapPartitions(ExecutorLedgerSparkTest::holdMemoryForASecond)
            .collect()
            .get(0);
    await(
        "the downward crossings",
        () ->
            Recorder.CROSSINGS.stream()
                    .filter(c -> !c.isUp())
                    .map(LedgerCrossingEvent::getPart)
                    .collect(Collectors.toSet())
                    .containsAll(List.of(LedgerReader.ARROW_JAVA, LedgerReader.NATIVE_RESERVED)));
    Map<String, List<Boolean>> byPart = new HashMap<>();
    for (LedgerCrossingEvent c : Recorder.CROSSINGS) {
      byPart.computeIfAbsent(c.getPart(), k -> new ArrayList<>()).add(c.isUp());
      assertEquals("driver", c.getExecutorId());
    }
    assertEquals(List.of(true, false), byPart.get(LedgerReader.ARROW_JAVA), byPart::toString);
    assertEquals(List.of(true, false), byPart.get(LedgerReader.NATIVE_RESERVED), byPart::toString);
    assertEquals(List.of(true), byPart.get(LedgerReader.RSS), "total=1m: up once, never down");
    for (LedgerCrossingEvent c : Recorder.CROSSINGS) {
      if (c.getPart().equals(LedgerReader.ARROW_JAVA)) {
        assertEquals(24 * MIB, c.getLevel());
        assertEquals(12 * MIB, c.getLowerLevel(), "hysteresis 0.5");
        assertTrue(c.isUp() ? c.getBytes() >= 30 * MIB : c.getBytes() < 12 * MIB, c::toString);
      }
    }
    assertEquals(
        Recorder.CROSSINGS.size(),
        (long) metrics("ledger.rss").get(ExecutorLedger.CROSSINGS_COUNTER),
        "one count per crossing");
    List<String> lines = log.messages();
    assertTrue(
        lines.stream().anyMatch(m -> m.startsWith("nativepool: executor driver ledger: arrow.java rose to 30.")),
        lines::toString);
    assertTrue(
        lines.stream().anyMatch(m -> m.contains("ledger: native.reserved fell to")), lines::toString);

    // The driver posted each crossing to the bus, and the event log replays them as ours.
    // (The RSS crossing came before this test's bus listener was added.)
    await(
        "the job's crossings on the bus",
        () ->
            busEvents.stream()
                    .filter(
                        e ->
                            e instanceof LedgerCrossingEvent c
                                && !c.getPart().equals(LedgerReader.RSS))
                    .count()
                == 4);
    await(
        "the crossings in the event log",
        () -> {
          try {
            return eventLogLines(LedgerCrossingEvent.class.getName()).size() >= 5;
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        });
    List<String> fromLog = eventLogLines(LedgerCrossingEvent.class.getName());
    LedgerCrossingEvent replayed = (LedgerCrossingEvent) JsonProtocol.sparkEventFromJson(fromLog.get(0));
    assertNotNull(replayed.getPart());

    // High-water marks: per part, per task pool, per consumer; reset by hand.
    assertTrue(ledger.peaks().get(LedgerReader.ARROW_JAVA) >= 30 * MIB, ledger.peaks()::toString);
    assertTrue(ledger.taskPoolPeak() >= 50 * MIB, "task pool peak " + ledger.taskPoolPeak());
    assertTrue(ledger.consumerPeaks().get(CONSUMER) >= 20 * MIB, ledger.consumerPeaks()::toString);
    assertTrue(
        ledger.consumerPeaks().get(TaskArrowAllocators.JAVA_CONSUMER) >= 30 * MIB,
        ledger.consumerPeaks()::toString);
    ledger.resetPeaks();
    assertTrue(ledger.peaks().get(LedgerReader.ARROW_JAVA) < 12 * MIB, ledger.peaks()::toString);
    assertEquals(0, ledger.taskPoolPeak());
    assertTrue(ledger.consumerPeaks().isEmpty());

    // Per stage on the driver: the stage's event carries the ledger's, the pool's and the
    // consumers' peaks, and the next stage starts from zero.
    await(
        "the stage's peaks event",
        () ->
            busEvents.stream()
                .anyMatch(e -> e instanceof StagePeaksEvent p && p.getStageId() == stage));
    StagePeaksEvent p =
        busEvents.stream()
            .filter(e -> e instanceof StagePeaksEvent x && x.getStageId() == stage)
            .map(e -> (StagePeaksEvent) e)
            .findFirst()
            .orElseThrow();
    assertTrue(
        p.getExecutorLedgerPeaks().get("driver").get(LedgerReader.ARROW_JAVA) >= 30 * MIB,
        p::toString);
    assertTrue(p.getTaskPoolPeak() >= 50 * MIB, p::toString);
    assertTrue(p.getConsumerPeaks().get(CONSUMER) >= 20 * MIB, p.getConsumerPeaks()::toString);
    long next = jsc.parallelize(List.of(1, 2), 2).map(x -> TaskContext.get().stageId()).collect().get(0);
    await(
        "the next stage's event",
        () ->
            busEvents.stream()
                .anyMatch(e -> e instanceof StagePeaksEvent x && x.getStageId() == next));
    StagePeaksEvent q =
        busEvents.stream()
            .filter(e -> e instanceof StagePeaksEvent x && x.getStageId() == next)
            .map(e -> (StagePeaksEvent) e)
            .findFirst()
            .orElseThrow();
    assertFalse(q.getConsumerPeaks().containsKey(CONSUMER), "reset per stage: " + q);
    assertTrue(q.getTaskPoolPeak() < 20 * MIB, q::toString);
  }

  /**
   * Netty's pools, the third question: a burst of tiny messages over eight threads holds whole
   * chunks that are almost empty. The ledger shows chunks against bytes used per pool, and a
   * threshold on the chunks notifies instead of polling.
   */
  @Test
  @Order(3)
  void nettyChunksAgainstUsedBytesAndAThresholdOnTheChunks() throws Exception {
    ExecutorLedger ledger = ExecutorLedger.current();
    io.netty.buffer.PooledByteBufAllocator shared =
        org.apache.spark.network.util.NettyUtils.getSharedPooledByteBufAllocator(true, true);
    LedgerSnapshot before = ledger.readNow();
    List<io.netty.buffer.ByteBuf> held = new CopyOnWriteArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      Thread t = new Thread(() -> held.add(shared.directBuffer(1024)), "tiny-message-" + i);
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }
    try {
      LedgerSnapshot s = ledger.readNow();
      long chunks = s.get("netty.shared.direct");
      long used = s.get("netty.shared.used");
      assertTrue(chunks >= 4 * MIB, "a chunk per arena at least: " + s.parts());
      assertTrue(chunks > before.get("netty.shared.direct") || chunks >= 6 * MIB, s::toString);
      assertTrue(used < chunks / 8, "mostly empty chunks: used " + used + " of " + chunks);
      assertTrue(ledger.peaks().get("netty.shared.direct") >= chunks);
      await(
          "the chunks' crossing",
          () ->
              Recorder.CROSSINGS.stream()
                  .anyMatch(c -> c.getPart().equals("netty.shared.direct") && c.isUp()));
    } finally {
      held.forEach(io.netty.buffer.ByteBuf::release);
    }
  }

  /** The event log's lines of events of {@code type}. */
  private static List<String> eventLogLines(String type) throws Exception {
    List<String> out = new ArrayList<>();
    for (String line : EventLogs.lines(eventLogDir)) {
      if (line.contains("\"Event\":\"" + type + "\"")) {
        out.add(line);
      }
    }
    return out;
  }
}
