package org.nativepool.spark.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.codahale.metrics.MetricRegistry;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.metrics.source.Source;
import org.apache.spark.resource.ExecutorResourceRequest;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.util.JsonProtocol;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.config.SparkLine;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.ExecutorSampleEvent;
import org.nativepool.spark.events.ReservedThresholdEvent;
import org.nativepool.spark.events.StagePeaksEvent;
import org.nativepool.spark.executor.ExecutorGauges;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.memory.SparkTaskUpstream;
import org.nativepool.spark.memory.TaskPool;
import org.nativepool.spark.testing.EventLogs;
import org.nativepool.spark.testing.LocalSpark;
import org.nativepool.spark.testing.LogCapture;
import org.nativepool.spark.testing.PrometheusUi;
import org.nativepool.spark.testing.SparkMemory;
import org.nativepool.spark.testing.SparkMetrics;
import org.nativepool.spark.testing.SparkTestConsumer;

/**
 * The driver side of the plugin in a {@code local[2]} SparkSession with the UI, the
 * PrometheusServlet and the event log on, and executors reporting every 200 ms: the driver's gauges
 * per executor and in total, served at {@code /metrics/prometheus}; native spills in the tasks'
 * spill metrics; stage peaks reset at stage end; the executor summary line; the events in the event
 * log file, readable by Spark's replay; autoOverhead in the default ResourceProfile.
 *
 * <p>One job does the work the assertions look at ({@link #runSpillingJob()}, once): two tasks each
 * hold 8 MiB in a native reservation for a while, then a Spark consumer of the same task asks for
 * the task's whole share, so Spark spills the native consumer; its spiller reports half of what it
 * frees as written to disk.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class DriverSideTest {
  private static final long MIB = SparkMemory.MIB;

  @TempDir static Path eventLogDir;

  private static SparkSession spark;
  private static JavaSparkContext jsc;
  private static PrometheusUi ui;
  private static LogCapture log;
  private static final List<SparkListenerTaskEnd> taskEnds = new CopyOnWriteArrayList<>();
  private static final List<SparkListenerEvent> otherEvents = new CopyOnWriteArrayList<>();
  private static List<long[]> jobResult;
  private static int spillStageId = -1;

  @BeforeAll
  static void startSpark() throws Exception {
    ui = PrometheusUi.onFreePort();
    log = LogCapture.attach("org.nativepool.spark.executor.ExecutorReporter");
    spark =
        ui.configure(LocalSpark.builder("local[2]", "DriverSideTest", "128m"))
            .config(LocalSpark.eventLog(eventLogDir))
            .config("spark.executor.heartbeatInterval", "200ms")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.nativepool.chunkSize", "1m")
            .config("spark.nativepool.executor.reservedThresholds", "4m")
            .config("spark.nativepool.goMemoryLimit", "300m")
            .config(NativePoolConf.LOG_INTERVAL.key(), "300ms")
            .config(NativePoolConf.EVENT_LOG_SAMPLE_EVERY.key(), "1")
            // Refused where it cannot take effect (Spark 3.5, 4.0: PluginFailureTest).
            .config(
                NativePoolConf.AUTO_OVERHEAD.key(),
                Boolean.toString(SparkLine.current().autoOverheadTakesEffect()))
            .getOrCreate();
    jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    LocalSpark.collectOtherEvents(spark, otherEvents);
    spark
        .sparkContext()
        .addSparkListener(
            new SparkListener() {
              @Override
              public void onTaskEnd(SparkListenerTaskEnd event) {
                taskEnds.add(event);
              }
            });
    runSpillingJob();
  }

  @AfterAll
  static void stopSpark() {
    LocalSpark.stop(spark);
    if (log != null) {
      log.close();
    }
  }

  /** Runs the job of the class comment once, and waits until Spark's listeners have seen it. */
  private static void runSpillingJob() throws Exception {
    jsc.setJobGroup("spill", "native spill", false);
    jobResult =
        jsc.parallelize(Arrays.asList(0, 1), 2)
            .mapPartitions(DriverSideTest::holdThenGetSpilled)
            .collect();
    spark.sparkContext().listenerBus().waitUntilEmpty();
    spillStageId = taskEnds.get(0).stageId();
    // The stage's peaks are posted two heartbeats after its end; then every queue (the event
    // log's too) has had them.
    await("the stage peaks of the spilling stage", () -> stagePeaks(spillStageId) != null);
    spark.sparkContext().listenerBus().waitUntilEmpty();
  }

  /** The stage peaks event of {@code stageId} seen by the test's listener, or null. */
  private static StagePeaksEvent stagePeaks(int stageId) {
    return otherEvents.stream()
        .filter(e -> e instanceof StagePeaksEvent s && s.getStageId() == stageId)
        .map(e -> (StagePeaksEvent) e)
        .findFirst()
        .orElse(null);
  }

  /**
   * One task: 8 MiB in a spillable native reservation, held for 1 s (several samples), then a Spark
   * consumer of the task asks for the whole 128 MiB budget, which makes Spark spill the native
   * consumer. Returns {granted to the Spark consumer, native memoryBytesSpilled, native
   * diskBytesSpilled}.
   */
  private static Iterator<long[]> holdThenGetSpilled(Iterator<Integer> rows) throws Exception {
    while (rows.hasNext()) {
      rows.next();
    }
    TaskContext tc = TaskContext.get();
    TaskPool p = TaskPool.openForCurrentTask();
    Reservation[] r = new Reservation[1];
    r[0] =
        p.newReservation(
            "holder-" + tc.partitionId(),
            true,
            target -> {
              long n = r[0].size();
              r[0].shrink(n);
              p.reportSpill(0, n / 2); // as if half of it went to a run file
              return n;
            });
    r[0].grow(8 * MIB);
    Thread.sleep(1000);
    SparkTestConsumer other = new SparkTestConsumer(tc.taskMemoryManager(), "other", false);
    // The whole off-heap budget: more than the task can get without our 8 MiB whether or not the
    // other task is running (with 64 MiB, a task that ran alone, its sibling already finished,
    // got all of it from the free pool and Spark never spilled the native consumer).
    long got = other.take(128 * MIB);
    other.giveAll();
    SparkTaskUpstream up = p.upstream();
    return List.of(new long[] {got, up.memoryBytesSpilled(), up.diskBytesSpilled()}).iterator();
  }

  private static void await(String what, BooleanSupplier done) throws InterruptedException {
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (!done.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(100);
    }
  }

  /** The driver side's gauges: the plugin source that has {@code total.reserved}. */
  private static Map<String, Long> driverGauges() {
    List<Source> sources = SparkMetrics.pluginSources();
    Map<String, Long> out = new HashMap<>();
    for (Source s : sources) {
      MetricRegistry registry = s.metricRegistry();
      if (!registry.getMetrics().containsKey("total.reserved")) {
        continue;
      }
      registry.getGauges().forEach((k, g) -> out.put(k, (Long) g.getValue()));
      registry.getCounters().forEach((k, c) -> out.put(k, c.getCount()));
    }
    return out;
  }

  @Test
  void bothSidesRegisterTheirSourceInLocalModeWithoutACollision() {
    List<Source> sources = SparkMetrics.pluginSources();
    assertEquals(
        2,
        sources.size(),
        "the executor's and the driver's source, both named " + SparkMetrics.PLUGIN_SOURCE);
    long executorSide =
        sources.stream()
            .filter(s -> s.metricRegistry().getMetrics().containsKey("reserved"))
            .count();
    assertEquals(1, executorSide);
  }

  @Test
  void driverGaugesAppearPerExecutorAndInTotal() throws Exception {
    await(
        "the driver's gauges of executor 'driver'",
        () -> driverGauges().containsKey("executor.driver.reserved"));
    Map<String, Long> g = driverGauges();
    for (String figure : ExecutorGauges.GAUGES.keySet()) {
      assertTrue(g.containsKey("executor.driver." + figure), figure + " in " + g.keySet());
    }
    for (String figure : ExecutorRegistry.TOTALS) {
      assertTrue(g.containsKey("total." + figure), "total." + figure);
    }
    assertEquals(1L, g.get("total.executors"));
    assertEquals(g.get("executor.driver.goBaseline"), Natives.processStats().goBaseline());
    assertTrue(g.get("executor.driver.upstreamCalls") > 0, g::toString);
    assertTrue(g.get("total.sparkSpillRequests") >= 2, "two tasks were spilled: " + g);
  }

  @Test
  void prometheusServletServesTheDriverGauges() throws Exception {
    await("the driver's gauges", () -> driverGauges().containsKey("executor.driver.reserved"));
    String appId = spark.sparkContext().applicationId().replaceAll("[^a-zA-Z0-9]", "_");
    String prefix = "metrics_" + appId + "_driver_plugin_org_nativepool_spark_NativePoolPlugin_";
    String body = ui.fetch("/metrics/prometheus");
    for (String name :
        List.of(
            "executor_driver_reserved",
            "executor_driver_heldFromSpark",
            "executor_driver_rssBytes",
            "executor_driver_stagePeakReserved",
            "total_reserved",
            "total_executors",
            "total_stagePeakReserved",
            "total_stagePeakHeld")) {
      Pattern p =
          Pattern.compile(
              "^" + Pattern.quote(prefix + name + "_Value{type=\"gauges\"}") + " (-?\\d+)$",
              Pattern.MULTILINE);
      Matcher m = p.matcher(body);
      assertTrue(m.find(), prefix + name + "_Value not served:\n" + grep(body, "nativepool"));
    }
    // The executor side's own gauges, beside the driver's: in local mode its source is registered
    // before spark.app.id is set, so Spark names it without the application and executor ids.
    assertTrue(
        Pattern.compile(
                "^metrics_plugin_org_nativepool_spark_NativePoolPlugin_reserved_Value"
                    + Pattern.quote("{type=\"gauges\"}")
                    + " \\d+$",
                Pattern.MULTILINE)
            .matcher(body)
            .find(),
        grep(body, "NativePoolPlugin_reserved"));
    Matcher executors =
        Pattern.compile(
                "^" + Pattern.quote(prefix + "total_executors_Value{type=\"gauges\"}") + " 1$",
                Pattern.MULTILINE)
            .matcher(body);
    assertTrue(executors.find(), grep(body, "total_executors"));
  }

  private static String grep(String body, String word) {
    return Arrays.stream(body.split("\n"))
        .filter(l -> l.contains(word))
        .collect(Collectors.joining("\n"));
  }

  @Test
  void aSparkRequestedNativeSpillCountsInTheTasksSpillMetrics() {
    assertEquals(2, jobResult.size());
    for (long[] r : jobResult) {
      assertTrue(r[1] >= 8 * MIB, "native memoryBytesSpilled " + r[1]);
      assertEquals(r[1] / 2, r[2], "the spiller reported half as written to disk");
    }
    List<SparkListenerTaskEnd> ends =
        taskEnds.stream().filter(e -> e.stageId() == spillStageId).toList();
    assertEquals(2, ends.size());
    for (SparkListenerTaskEnd e : ends) {
      assertTrue(
          e.taskMetrics().memoryBytesSpilled() >= 8 * MIB,
          "memoryBytesSpilled " + e.taskMetrics().memoryBytesSpilled());
      assertTrue(
          e.taskMetrics().diskBytesSpilled() >= 4 * MIB,
          "diskBytesSpilled " + e.taskMetrics().diskBytesSpilled());
    }
  }

  @Test
  void stagePeaksArePostedAtStageEndAndTheGaugesStartAgain() throws Exception {
    StagePeaksEvent spillStage = stagePeaks(spillStageId);
    assertNotNull(spillStage, () -> "no stage peaks event in " + otherEvents);
    assertTrue(spillStage.getTotalPeakReserved() >= 8 * MIB, spillStage::toString);
    assertTrue(
        spillStage.getExecutorPeakReserved().getOrDefault("driver", 0L) >= 8 * MIB,
        spillStage::toString);
    assertTrue(
        spillStage.getTotalPeakHeld() >= spillStage.getTotalPeakReserved() / 2,
        spillStage::toString);

    // Two quiet heartbeats (their interval peaks are 0), then a stage without native memory.
    Thread.sleep(600);
    int before = taskEnds.size();
    long rows = jsc.parallelize(Arrays.asList(1, 2, 3), 2).count();
    assertEquals(3, rows);
    spark.sparkContext().listenerBus().waitUntilEmpty();
    Map<String, Long> g = driverGauges();
    assertEquals(0L, g.get("total.stagePeakReserved"), "reset at the stage's end: " + g);
    assertEquals(0L, g.get("executor.driver.stagePeakReserved"), g::toString);
    int quietStage = taskEnds.get(before).stageId();
    await("the quiet stage's peaks", () -> stagePeaks(quietStage) != null);
    StagePeaksEvent quiet = stagePeaks(quietStage);
    assertEquals(0L, quiet.getTotalPeakReserved(), quiet::toString);
    assertEquals(0L, quiet.getExecutorPeakReserved().getOrDefault("driver", 0L), quiet::toString);
  }

  /** One task: 2 MiB reserved for 20 ms, far shorter than the executor's 200 ms poll. */
  private static Iterator<Integer> holdBriefly(Iterator<Integer> rows) throws Exception {
    TaskPool p = TaskPool.openForCurrentTask();
    Reservation r = p.newReservation("brief", false, null);
    r.grow(2 * MIB);
    Thread.sleep(20);
    r.close();
    return rows;
  }

  @Test
  void aStageShorterThanThePollStillShowsItsTasksPeaks() throws Exception {
    int before = taskEnds.size();
    assertEquals(
        1, jsc.parallelize(Arrays.asList(1), 1).mapPartitions(DriverSideTest::holdBriefly).count());
    spark.sparkContext().listenerBus().waitUntilEmpty();
    int stage = taskEnds.get(before).stageId();
    await("the brief stage's peaks", () -> stagePeaks(stage) != null);
    StagePeaksEvent brief = stagePeaks(stage);
    assertTrue(brief.getTotalPeakReserved() >= 2 * MIB, brief::toString);
    assertTrue(
        brief.getExecutorPeakReserved().getOrDefault("driver", 0L) >= 2 * MIB, brief::toString);
  }

  @Test
  void theExecutorLogsItsSummaryLineAtTheInterval() throws Exception {
    await("a summary line", () -> log.messages().stream().anyMatch(m -> m.contains(" memory: ")));
    String line =
        log.messages().stream().filter(m -> m.contains(" memory: ")).findFirst().orElseThrow();
    assertTrue(
        Pattern.matches(
            "nativepool: executor driver memory: reserved \\S+ \\S+, allocated \\S+ \\S+, held \\S+"
                + " \\S+ \\(slack \\S+ \\S+\\), RSS \\S+ \\S+ \\(Go runtime \\S+ \\S+, limit"
                + " 300\\.0 MiB\\), \\d+ task pools, peak \\S+ \\S+, spills \\d+ \\(\\S+ \\S+"
                + " freed\\); ledger: RSS \\S+ \\S+ = jvm\\.heap\\.(resident|committed) .* \\+"
                + " unexplained .*",
            line),
        line);
  }

  @Test
  void eventsReachTheEventLogAndReplayAsTheirClasses() throws Exception {
    // Rolled from Spark 4.0 on, one file on 3.5 (EventLogs reads both; compression is off here).
    List<String> lines = EventLogs.lines(eventLogDir);
    assertFalse(lines.isEmpty(), "no event log under " + eventLogDir);
    ObjectMapper json = new ObjectMapper();
    Map<String, List<JsonNode>> byType = new HashMap<>();
    for (String line : lines) {
      JsonNode n = json.readTree(line);
      String type = n.get("Event").asText();
      if (type.startsWith("org.nativepool.")) {
        byType.computeIfAbsent(type, k -> new ArrayList<>()).add(n);
        // What the History Server does with each line.
        SparkListenerEvent replayed = JsonProtocol.sparkEventFromJson(line);
        assertEquals(type, replayed.getClass().getName());
      }
    }
    List<JsonNode> samples = byType.get(ExecutorSampleEvent.class.getName());
    assertNotNull(samples, "sample events in " + byType.keySet());
    JsonNode s = samples.get(0);
    assertEquals("driver", s.get("executorId").asText());
    assertTrue(s.get("figures").has("reserved"), s::toString);
    assertTrue(s.get("figures").has(ExecutorSample.INTERVAL_PEAK_RESERVED), s::toString);

    List<JsonNode> crossings = byType.get(ReservedThresholdEvent.class.getName());
    assertNotNull(crossings, "threshold events in " + byType.keySet());
    assertTrue(
        crossings.stream()
            .anyMatch(c -> c.get("up").asBoolean() && c.get("level").asLong() == 4 * MIB),
        crossings::toString);
    assertTrue(
        crossings.stream().anyMatch(c -> !c.get("up").asBoolean()), "back under 4m after the job");

    List<JsonNode> stages = byType.get(StagePeaksEvent.class.getName());
    assertNotNull(stages, "stage peak events in " + byType.keySet());
    assertTrue(
        stages.stream()
            .anyMatch(
                st ->
                    st.get("stageId").asInt() == spillStageId
                        && st.get("totalPeakReserved").asLong() >= 8 * MIB),
        stages::toString);
  }

  @Test
  void autoOverheadSetsTheDefaultResourceProfilesMemoryOverhead() {
    assumeTrue(
        SparkLine.current().autoOverheadTakesEffect(),
        "Spark " + SparkLine.current().sparkVersion() + " refuses it (PluginFailureTest)");
    SparkContext sc = spark.sparkContext();
    // 1g executor memory: max(384m, 0.10 × 1024m) + 16m + 10% of 128m (12.8m, rounded up) = 413m.
    assertEquals("413m", sc.conf().get("spark.executor.memoryOverhead"));
    ExecutorResourceRequest req =
        sc.resourceProfileManager()
            .defaultResourceProfile()
            .executorResources()
            .get("memoryOverhead")
            .get();
    assertEquals(
        413L, req.amount(), "the default ResourceProfile was built after the driver plugin's init");
  }

  @Test
  void autoOverheadNeverLowersTheUsersOverhead() {
    SparkConf conf =
        new SparkConf(false)
            .set("spark.executor.memory", "8g")
            .set("spark.memory.offHeap.enabled", "true")
            .set("spark.memory.offHeap.size", "2g");
    // Spark's own overhead, max(0.10 × 8192m = 819.2m, truncated as Spark does: 819m; 384m)
    // + 16m + 10% of 2048m (204.8m, rounded up: 205m) = 1040m.
    assertEquals(1040L, AutoOverhead.choose(conf).overheadMib());
    assertTrue(AutoOverhead.choose(conf).changes());
    conf.set("spark.executor.memoryOverhead", "2g");
    AutoOverhead.Choice kept = AutoOverhead.choose(conf);
    assertEquals(2048L, kept.overheadMib());
    assertFalse(kept.changes());
    conf.set("spark.executor.memoryOverhead", "512m");
    assertEquals(1040L, AutoOverhead.choose(conf).overheadMib(), "raised, never lowered");
    conf.remove("spark.executor.memoryOverhead").set("spark.memory.offHeap.enabled", "false");
    // Off-heap not in the container: 1040m + 2048m.
    assertEquals(3088L, AutoOverhead.choose(conf).overheadMib());
    conf.set("spark.executor.minMemoryOverhead", "1500m");
    assertEquals(
        (SparkLine.current().hasMinMemoryOverhead() ? 1500L : 819L) + 16 + 205 + 2048,
        AutoOverhead.choose(conf).overheadMib(),
        "Spark's minMemoryOverhead is read where Spark has it (not on 3.5)");
  }
}
