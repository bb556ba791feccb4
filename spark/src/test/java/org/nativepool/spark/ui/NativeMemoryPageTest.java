package org.nativepool.spark.ui;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.events.ExecutorDiagnosisEvent;
import org.nativepool.spark.events.ExecutorDiagnosisEvent.Cause;
import org.nativepool.spark.events.ExecutorSampleEvent;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.events.GuardEpisodeEvent;
import org.nativepool.spark.events.HeapHolder;
import org.nativepool.spark.events.HeapHoldersEvent;
import org.nativepool.spark.events.LedgerCrossingEvent;
import org.nativepool.spark.events.StagePeaksEvent;

/**
 * {@link NativeMemoryTimeline} fed the plugin's events as the listener bus delivers them, and
 * {@link NativeMemoryPage} rendering it; no Spark and no library needed.
 */
class NativeMemoryPageTest {
  private static final long MIB = 1L << 20;
  private static final long T0 = 1_700_000_000_000L;

  private static ExecutorSampleEvent sample(String id, long t, long direct) {
    Map<String, Long> f = new LinkedHashMap<>();
    f.put("reserved", 64 * MIB);
    f.put("guardLimit", 2048 * MIB);
    f.put("leaks", 2L);
    f.put("leakedBytes", 3 * MIB);
    f.put("leakedResident", MIB);
    f.put("ledger.jvm.heap.resident", 900 * MIB);
    f.put("ledger.jvm.heap.committed", 1024 * MIB);
    f.put("ledger.jvm.heap.used", 500 * MIB);
    f.put("ledger.jvm.direct", direct);
    f.put("ledger.go.stacks", MIB);
    f.put("ledger.native.reserved", 64 * MIB);
    f.put("ledger.rss", 2000 * MIB);
    f.put("ledger.unexplained", 40 * MIB);
    return new ExecutorSampleEvent(id, t, t / 1000, f);
  }

  private static NativeMemoryTimeline timeline() {
    NativeMemoryTimeline tl = new NativeMemoryTimeline();
    tl.setOffHeapBudget(256 * MIB);
    for (int i = 0; i < 60; i++) {
      tl.accept(sample("7", T0 + i * 1000L, 100 * MIB + i * 10 * MIB));
    }
    tl.accept(sample("8", T0, 50 * MIB));
    tl.accept(
        new LedgerCrossingEvent(
            "7", T0 + 20_000, "jvm.direct", 256 * MIB, true, 300 * MIB, 230 * MIB));
    tl.accept(
        new GrowthReportEvent(
            "7", T0 + 30_000, "jvm.direct", 100 * MIB, 400 * MIB, 100, 300, List.of()));
    tl.accept(
        new GuardEpisodeEvent(
            "7",
            1,
            T0 + 40_000,
            T0 + 41_000,
            2048 * MIB,
            40 * MIB,
            2010 * MIB,
            2040 * MIB,
            1500 * MIB,
            1900 * MIB,
            64 * MIB,
            3_000,
            1_000_000,
            0,
            1,
            false,
            Map.of("jvm.direct", 300 * MIB),
            Map.of("sort (task 3)", 64 * MIB)));
    tl.accept(
        new ExecutorDiagnosisEvent(
            "7",
            T0 + 60_500,
            "Command exited with code 137",
            137,
            Cause.CONTAINER_KILLED,
            null,
            "exit code 137 is a SIGKILL, and the last sample <0.5 s before> was at 99%",
            2048 * MIB,
            "the pod guard's",
            T0 + 59_000,
            2000 * MIB,
            2030 * MIB,
            500 * MIB,
            1024 * MIB,
            60_000,
            Map.of("jvm.direct", 590 * MIB),
            null,
            null,
            null,
            null,
            1));
    tl.taskLost("7", 3, 0);
    tl.taskLost("7", 3, 0);
    tl.taskLost("7", 4, 1);
    tl.accept(
        new StagePeaksEvent(
            3,
            0,
            T0 + 50_000,
            Map.of("7", 64 * MIB, "8", 32 * MIB),
            Map.of("7", 64 * MIB),
            96 * MIB,
            96 * MIB,
            null,
            40 * MIB,
            Map.of("sort", 40 * MIB)));
    return tl;
  }

  @Test
  void eachExecutorGetsItsChartAndDiagnosisAndTheTablesFollow() {
    String html = NativeMemoryPage.render(timeline().snapshot(), "app <1>");
    assertTrue(html.startsWith("<!DOCTYPE html>"));
    assertTrue(html.contains("<h1>Native memory: app &lt;1&gt;</h1>"), "h1");
    assertTrue(
        html.contains(
            "<h2 id=\"executor-7\">Executor 7: killed by its container&#39;s memory limit</h2>"),
        "h2");
    assertTrue(html.contains("the last sample &lt;0.5 s before&gt; was at 99%"), "escaped");
    assertEquals(
        3,
        html.split("<svg ", -1).length - 1,
        "executor 7: its ledger and its off-heap memory; executor 8, one sample: words");
    assertTrue(html.contains("<title>memory limit (pod guard): 2.0 GiB</title>"));
    assertTrue(
        html.contains(
            "<title>off-heap budget (spark.memory.offHeap.size): bounds this chart, not the"
                + " resident set: 256.0 MiB</title>"));
    assertTrue(html.contains("One sample of this executor so far, and a chart needs two."), html);
    assertTrue(html.contains("class=\"marker crossing\""));
    assertTrue(html.contains("class=\"marker growth\""));
    assertTrue(html.contains("class=\"marker end\""));
    assertTrue(html.contains("class=\"band\""));
    assertTrue(html.contains("<h2>Executors that ended</h2>"));
    assertTrue(html.contains("<td class=\"n\">137</td>"));
    assertTrue(html.contains("<td>3 (stages 3.0, 4.1)</td>"), "tasks lost with it");
    assertTrue(
        html.contains(
            "<td class=\"n\">2</td><td class=\"n\">3.0 MiB</td><td class=\"n\">1.0 MiB</td>"),
        "leaks");
    assertTrue(html.contains("<td>3.0</td>"), "the stage");
    assertTrue(html.contains("sort 40.0 MiB"));
    assertFalse(html.contains("<script"));
    assertFalse(
        html.replace("http://www.w3.org/2000/svg", "").contains("http"), "nothing from elsewhere");
  }

  @Test
  void theLivePageOffersWhoHoldsTheHeapPerLiveJvmAndShowsTheLastHolders() {
    NativeMemoryTimeline tl = timeline();
    HeapHolder h =
        new HeapHolder(
            "byte[]",
            104857600,
            1,
            100 * MIB,
            T0,
            T0,
            List.of("$line14.$read$$iw.<init>:1"),
            List.of("$line14.$read$$iw.res0", "static $line14.$read$.INSTANCE"),
            "Threads / Handle Area");
    tl.accept(
        new HeapHoldersEvent("driver", T0 + 40_000, "on demand by alice", 0, "n", List.of(h)));
    String live = NativeMemoryPage.content(tl.snapshot(), true);
    assertTrue(
        live.contains("<h3>Driver <a class=\"action\" href=\"holders/?jvm=driver\">"), live);
    assertTrue(live.contains("<h3>Executor 8 <a class=\"action\" href=\"holders/?jvm=8\">"));
    assertFalse(live.contains("href=\"holders/?jvm=7\""), "executor 7 ended: nothing to ask");
    assertTrue(live.contains("on demand by alice"));
    assertTrue(live.contains("<td>byte[104857600]</td>"));
    assertTrue(
        live.contains("$line14.$read$$iw.res0 ←<br>static $line14.$read$.INSTANCE ←<br>"), live);
    String history = NativeMemoryPage.content(tl.snapshot(), false);
    assertFalse(history.contains("who holds the heap</a>"), "the History Server has no action");
    assertTrue(history.contains("<td>byte[104857600]</td>"));
  }

  @Test
  void theChartStacksResidentPartsOnlyAndSumsTheSmallOnes() {
    NativeMemoryTimeline.Snapshot.Executor e = timeline().snapshot().executors().get(0);
    assertEquals(
        List.of("jvm.heap.resident", "jvm.direct", "go.stacks", "unexplained"),
        e.parts(),
        "no rss, accounting or detail parts");
    SvgChart.Chart c = NativeMemoryPage.chart(e);
    assertEquals(
        List.of("jvm.heap.resident", "jvm.direct", "other"),
        c.stacked().stream().map(SvgChart.Series::name).toList(),
        "in the ledger's order; go.stacks and unexplained are under 3% of the highest total");
    assertEquals(2048 * MIB, e.limit());
  }

  private static ExecutorSampleEvent ledgerSample(String id, Map<String, Long> parts) {
    Map<String, Long> f = new LinkedHashMap<>();
    parts.forEach((part, mib) -> f.put("ledger." + part, mib * MIB));
    return new ExecutorSampleEvent(id, T0, T0 / 1000, f);
  }

  /**
   * Two executors whose parts rank differently by size: each part has one colour in both charts,
   * and both stack (so list in their legends) the parts in the same order, the ledger's.
   */
  @Test
  void everyExecutorsChartGivesEachPartOneColourAndOneOrder() {
    NativeMemoryTimeline tl = new NativeMemoryTimeline();
    tl.accept(
        ledgerSample(
            "1",
            Map.of(
                "jvm.heap.resident", 900L,
                "jvm.direct", 100L,
                "go.heapInUse", 300L,
                "unexplained", 200L)));
    tl.accept(
        ledgerSample(
            "2",
            Map.of(
                "unexplained", 300L,
                "go.heapInUse", 200L,
                "jvm.direct", 900L,
                "jvm.heap.resident", 100L)));
    List<String> order = List.of("jvm.heap.resident", "jvm.direct", "go.heapInUse", "unexplained");
    List<String> colours = List.of("#4e79a7", "#b07aa1", "#59a14f", "#c8c8c8");
    for (NativeMemoryTimeline.Snapshot.Executor e : tl.snapshot().executors()) {
      SvgChart.Chart c = NativeMemoryPage.chart(e);
      assertEquals(
          order, c.stacked().stream().map(SvgChart.Series::name).toList(), e.executorId());
      assertEquals(
          colours, c.stacked().stream().map(SvgChart.Series::color).toList(), e.executorId());
    }
  }

  /**
   * A job shorter than one sampling period may leave an executor one sample: its chart says so in
   * words instead of drawing nothing, and the page says why.
   */
  @Test
  void anExecutorWithOneSampleGetsWordsNotAnEmptyChart() {
    NativeMemoryTimeline tl = new NativeMemoryTimeline();
    tl.accept(sample("3", T0, MIB));
    String html = NativeMemoryPage.content(tl.snapshot());
    assertTrue(html.contains("data-samples=\"1\""), html);
    assertTrue(html.contains("one sample so far, at 22:13:20 UTC: a chart needs two"), html);
    assertTrue(html.contains("Executors send one at their start, at task ends"), html);
    assertFalse(html.contains("<polygon"), "nothing drawn with no span");
  }

  /**
   * The off-heap budget bounds Spark's off-heap memory, not the resident set: it is drawn over its
   * own chart of what nativepool's pools, the pod guard and everyone else hold of it, and no longer
   * across the stack of the whole resident set.
   */
  @Test
  void theOffHeapBudgetIsDrawnAgainstSparksOffHeapMemoryNotTheResidentSet() {
    NativeMemoryTimeline tl = new NativeMemoryTimeline();
    tl.setOffHeapBudget(256 * MIB);
    for (int i = 0; i < 3; i++) {
      ExecutorSampleEvent s = sample("5", T0 + i * 1000L, MIB);
      Map<String, Long> f = new LinkedHashMap<>(s.getFigures());
      f.put("ledger.native.held", 64 * MIB);
      f.put("ledger.guard.offHeapBallast", 16 * MIB);
      f.put("ledger.spark.offHeapUsed", 200 * MIB);
      tl.accept(new ExecutorSampleEvent("5", s.getTimeMillis(), s.getSequence(), f));
    }
    NativeMemoryTimeline.Snapshot.Executor e = tl.snapshot().executors().get(0);
    assertTrue(
        NativeMemoryPage.chart(e).lines().stream().noneMatch(l -> l.name().contains("off-heap")),
        "no budget line across the resident set");
    SvgChart.Chart o = NativeMemoryPage.offHeapChart(e, 256 * MIB);
    assertEquals(
        List.of(
            "nativepool's pools (held from Spark)",
            "Spark's and other engines' consumers, cached blocks",
            "held by the pod guard (ballast)"),
        o.stacked().stream().map(SvgChart.Series::name).toList());
    assertEquals(64 * MIB, o.stacked().get(0).values()[2]);
    assertEquals(120 * MIB, o.stacked().get(1).values()[2], "200 in use - 64 pools - 16 ballast");
    assertEquals(256 * MIB, o.lines().get(0).value());
  }

  /**
   * Without Native Memory Tracking the JVM's own native memory is unexplained: where that is large,
   * the page says what NMT would split and what it costs; with NMT on, it does not.
   */
  @Test
  void largeUnexplainedMemoryWithoutNmtGetsTheHintAndWithNmtDoesNot() {
    NativeMemoryTimeline tl = new NativeMemoryTimeline();
    for (int i = 0; i < 2; i++) {
      tl.accept(
          ledgerSample("1", Map.of("jvm.heap.resident", 400L, "unexplained", 120L)));
      tl.accept(
          ledgerSample(
              "2", Map.of("jvm.heap.resident", 400L, "jvm.threads", 20L, "unexplained", 120L)));
    }
    String html = NativeMemoryPage.content(tl.snapshot());
    int one = html.indexOf("id=\"executor-1\"");
    int two = html.indexOf("id=\"executor-2\"");
    String first = html.substring(one, two);
    assertTrue(first.contains("unexplained is 23% of RSS with Native Memory Tracking off"), first);
    assertTrue(first.contains("-XX:NativeMemoryTracking=summary"), first);
    assertFalse(html.substring(two).contains("NativeMemoryTracking=summary"), "NMT on: no hint");
  }

  @Test
  void aLongLifeKeepsAtMostTheBoundAndStillCoversItsStart() {
    NativeMemoryTimeline tl = new NativeMemoryTimeline();
    for (int i = 0; i < 10_000; i++) {
      tl.accept(sample("1", T0 + i * 1000L, MIB));
    }
    long[] t = tl.snapshot().executors().get(0).times();
    assertTrue(t.length <= NativeMemoryTimeline.POINTS_KEPT, "kept " + t.length);
    assertTrue(t.length >= NativeMemoryTimeline.POINTS_KEPT / 2, "kept " + t.length);
    assertEquals(T0, t[0]);
    assertEquals(T0 + 9_999_000, t[t.length - 1], "the newest");
    for (int i = 1; i < t.length; i++) {
      long gap = t[i] - t[i - 1];
      assertTrue(gap > 0 && gap <= 32_000, "no gap wider than the stride: " + gap);
    }
  }

  @Test
  void aChartDrawsAtMostItsWidthsWorthOfSamplesWithTheFirstAndLast() {
    assertEquals(
        List.of(0, 1, 2), java.util.Arrays.stream(NativeMemoryPage.drawn(3)).boxed().toList());
    int[] d = NativeMemoryPage.drawn(600);
    assertEquals(NativeMemoryPage.DRAWN, d.length);
    assertEquals(0, d[0]);
    assertEquals(599, d[d.length - 1]);
    assertEquals(0, NativeMemoryPage.drawn(0).length);
  }

  @Test
  void theSnapshotSurvivesJacksonAsTheHistoryServersStoreKeepsIt() throws Exception {
    NativeMemoryTimeline.Snapshot s = timeline().snapshot();
    ObjectMapper m = new ObjectMapper();
    String json = m.writeValueAsString(s);
    NativeMemoryTimeline.Snapshot back = m.readValue(json, NativeMemoryTimeline.Snapshot.class);
    assertEquals(NativeMemoryPage.render(s, "a"), NativeMemoryPage.render(back, "a"));
  }

  /** A YARN executor's end shows its container and the limit YARN enforced, with its figures. */
  @Test
  void aYarnKillShowsTheContainerAndTheLimitYarnEnforced() {
    NativeMemoryTimeline tl = new NativeMemoryTimeline();
    tl.accept(
        new ExecutorDiagnosisEvent(
            "2",
            T0,
            "Container killed by YARN for exceeding physical memory limits. 1.2 GB of 1.1 GB"
                + " physical memory used.",
            null,
            Cause.CONTAINER_KILLED,
            null,
            "killed by YARN's memory check (exit status -104, KILLED_EXCEEDED_PMEM)",
            1152 * MIB,
            "the pod guard's",
            -1,
            -1,
            -1,
            -1,
            -1,
            0,
            null,
            null,
            null,
            null,
            null,
            1,
            "container_1765000000000_0001_01_000002",
            1181116006,
            1288490189,
            null));
    String html = NativeMemoryPage.render(tl.snapshot(), "app");
    assertTrue(html.contains("<th>container</th><th>limit</th>"), "the columns");
    assertTrue(
        html.contains(
            "<td>container_1765000000000_0001_01_000002</td><td>1.1 GiB, enforced by YARN (1.2 GiB"
                + " in use)</td>"),
        html);
  }
}
