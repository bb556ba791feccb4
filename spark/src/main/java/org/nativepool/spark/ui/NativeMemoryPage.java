package org.nativepool.spark.ui;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.events.HeapHolder;
import org.nativepool.spark.ledger.LedgerReader;
import org.nativepool.spark.ledger.LedgerSnapshot;
import org.nativepool.spark.ui.NativeMemoryTimeline.Snapshot;

/**
 * The Native Memory page as one self-contained HTML document, from a {@link Snapshot}: per executor
 * a stacked chart of its ledger parts over time ({@link SvgChart}) with its memory limit as a line,
 * markers for threshold crossings, growth reports and its end, bands for pod guard episodes, and
 * its diagnosis; under it, where executors have off-heap memory, Spark's off-heap memory in use
 * against the off-heap budget, the one figure that budget bounds; words where an executor has
 * fewer than two samples, and where its unexplained memory is large without Native Memory
 * Tracking; then tables of the executors' ends, each JVM's heap holders (the driver's too), their
 * leak figures and the stages' native peaks. No script, no stylesheet or font from elsewhere. A
 * pure function; stateless.
 */
public final class NativeMemoryPage {
  /**
   * A part whose highest value is under this share (%) of the executor's highest total is summed
   * into {@code other}.
   */
  static final int OTHER_PERCENT = 3;

  static final int WIDTH = 960;
  static final int HEIGHT = 300;

  /** The off-heap chart's plot height: a second panel, smaller. */
  static final int OFF_HEAP_HEIGHT = 180;

  /** The off-heap chart's colours, each its own ({@link LedgerColors}' rule). */
  static final String OFF_HEAP_POOLS_COLOR = LedgerColors.OFF_HEAP_POOLS_COLOR;

  static final String OFF_HEAP_OTHERS_COLOR = LedgerColors.OFF_HEAP_OTHERS_COLOR;

  static final String OFF_HEAP_BALLAST_COLOR = LedgerColors.OFF_HEAP_BALLAST_COLOR;

  static final String OFF_HEAP_BUDGET_COLOR = "#08306b";

  /** The most parts a chart names; the smaller ones are summed as {@code other}. */
  static final int SERIES_NAMED = 9;

  /** The most samples drawn per chart. */
  static final int DRAWN = 300;

  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss 'UTC'", Locale.ROOT)
          .withZone(ZoneOffset.UTC);

  private NativeMemoryPage() {}

  /**
   * The page of {@code s} as a document of its own, titled {@code title} (e.g. the application's
   * name).
   */
  public static String render(Snapshot s, String title) {
    return "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Native memory: "
        + SvgChart.escape(title)
        + "</title></head><body style=\"font-family:sans-serif;margin:16px;color:#222\">"
        + "<h1>Native memory: "
        + SvgChart.escape(title)
        + "</h1>"
        + content(s)
        + "</body></html>";
  }

  /**
   * The page's content without a document around it, for Spark's UI, which adds its own header and
   * tabs: one {@code div}, its style scoped to it.
   */
  public static String content(Snapshot s) {
    return content(s, false);
  }

  /**
   * {@link #content(Snapshot)}, with a "who holds the heap" link per JVM when {@code actions} (the
   * live UI with the action on; the History Server has no JVM to ask).
   */
  public static String content(Snapshot s, boolean actions) {
    StringBuilder b = new StringBuilder(16_384);
    b.append("<div class=\"nativepool\"><style>")
        .append(".nativepool table{border-collapse:collapse;margin:8px 0 24px}")
        .append(".nativepool td,.nativepool th{border:1px solid #ccc;padding:3px 8px;")
        .append("text-align:left;vertical-align:top}")
        .append(".nativepool td.n{text-align:right}.nativepool .verdict{max-width:960px}")
        .append("</style>");
    if (s.executors().isEmpty()) {
      b.append("<p>No executor has reported yet.</p>");
    }
    for (Snapshot.Executor e : s.executors()) {
      executor(b, e, s.offHeapBudget());
    }
    ends(b, s.executors());
    holders(b, s, actions);
    leaks(b, s.executors());
    stages(b, s.stages());
    return b.append("</div>").toString();
  }

  private static void executor(StringBuilder b, Snapshot.Executor e, long offHeap) {
    b.append("<h2 id=\"executor-")
        .append(SvgChart.escape(e.executorId()))
        .append("\">Executor ")
        .append(SvgChart.escape(e.executorId()));
    if (e.end() != null) {
      b.append(": ").append(SvgChart.escape(e.end().cause()));
    }
    b.append("</h2>");
    if (e.end() != null) {
      b.append("<p class=\"verdict\">").append(SvgChart.escape(e.end().verdict())).append("</p>");
    }
    if (e.times().length < 2) {
      b.append("<p class=\"few\">")
          .append(e.times().length == 0 ? "No sample" : "One sample")
          .append(" of this executor so far, and a chart needs two. Executors send one at their")
          .append(" start, at task ends and every heartbeat; the event log, from which this page")
          .append(" is drawn, keeps one a minute (spark.nativepool.eventLog.sampleEvery) and those")
          .append(" of its start, task ends and stage ends, a few a minute at most.</p>");
    }
    String hint = nmtHint(e);
    if (hint != null) {
      b.append("<p class=\"nmt\">").append(SvgChart.escape(hint)).append("</p>");
    }
    b.append(SvgChart.render(chart(e), WIDTH, HEIGHT));
    if (offHeap > 0 && e.times().length >= 2) {
      b.append(SvgChart.render(offHeapChart(e, offHeap), WIDTH, OFF_HEAP_HEIGHT));
    }
  }

  /**
   * The Native Memory Tracking hint of the executor's latest sample ({@link
   * LedgerSnapshot#nmtHint}): its unexplained memory large and its ledger without NMT's parts;
   * null otherwise.
   */
  static String nmtHint(Snapshot.Executor e) {
    int n = e.times().length;
    if (n == 0) {
      return null;
    }
    long rss = 0;
    long unexplained = 0;
    boolean nmt = false;
    for (int p = 0; p < e.parts().size(); p++) {
      long v = e.values()[p][n - 1];
      rss += v;
      if (e.parts().get(p).equals(LedgerReader.UNEXPLAINED)) {
        unexplained = v;
      }
      nmt |= e.parts().get(p).equals(LedgerReader.JVM_THREADS);
    }
    String h = LedgerSnapshot.nmtHint(rss, unexplained, nmt);
    return h == null ? null : "In its latest sample, " + h + ".";
  }

  /**
   * The second chart of an executor with off-heap memory: Spark's off-heap memory in use against
   * {@code spark.memory.offHeap.size}, which bounds it (not the resident set, which holds the heap,
   * the JVM and everything else): what nativepool's pools hold of it, what the pod guard holds, and
   * the rest, Spark's own and other engines' consumers and off-heap cached blocks.
   */
  static SvgChart.Chart offHeapChart(Snapshot.Executor e, long offHeap) {
    int[] drawn = drawn(e.times().length);
    long[] held = e.offHeap().getOrDefault(LedgerReader.NATIVE_HELD, new long[e.times().length]);
    long[] ballast =
        e.offHeap().getOrDefault(LedgerReader.GUARD_OFF_HEAP_BALLAST, new long[e.times().length]);
    long[] used = e.offHeap().get(LedgerReader.SPARK_OFF_HEAP_USED);
    List<SvgChart.Series> series = new ArrayList<>();
    series.add(
        new SvgChart.Series(
            "nativepool's pools (held from Spark)", pick(held, drawn), OFF_HEAP_POOLS_COLOR));
    if (used != null) {
      long[] rest = new long[used.length];
      for (int i = 0; i < used.length; i++) {
        rest[i] = Math.max(0, used[i] - held[i] - ballast[i]);
      }
      series.add(
          new SvgChart.Series(
              "Spark's and other engines' consumers, cached blocks",
              pick(rest, drawn),
              OFF_HEAP_OTHERS_COLOR));
    }
    series.add(
        new SvgChart.Series(
            "held by the pod guard (ballast)", pick(ballast, drawn), OFF_HEAP_BALLAST_COLOR));
    return new SvgChart.Chart(
        "executor " + e.executorId() + ": Spark's off-heap memory in use",
        pick(e.times(), drawn),
        series,
        List.of(
            new SvgChart.Line(
                "off-heap budget (spark.memory.offHeap.size): bounds this chart, not the resident"
                    + " set",
                offHeap,
                OFF_HEAP_BUDGET_COLOR)),
        List.of(),
        List.of());
  }

  /**
   * The chart of one executor: its parts stacked in the order of {@link LedgerColors}, each in its
   * colour, so that every executor's chart, live or in the History Server, reads the same way;
   * those under {@value #OTHER_PERCENT}% of the highest total, and those past the {@value
   * #SERIES_NAMED} largest, are summed as {@code other}.
   */
  static SvgChart.Chart chart(Snapshot.Executor e) {
    int n = e.times().length;
    long[] total = new long[n];
    long[] max = new long[e.parts().size()];
    long[] sum = new long[e.parts().size()];
    for (int p = 0; p < e.parts().size(); p++) {
      for (int i = 0; i < n; i++) {
        long v = Math.max(0, e.values()[p][i]);
        total[i] += v;
        max[p] = Math.max(max[p], v);
        sum[p] += v;
      }
    }
    long top = 0;
    for (long t : total) {
      top = Math.max(top, t);
    }
    List<Integer> big = new ArrayList<>();
    long[] other = new long[n];
    boolean hasOther = false;
    for (int p = 0; p < e.parts().size(); p++) {
      if (max[p] * 100 >= top * OTHER_PERCENT && max[p] > 0) {
        big.add(p);
      } else if (max[p] > 0) {
        hasOther = true;
        for (int i = 0; i < n; i++) {
          other[i] += Math.max(0, e.values()[p][i]);
        }
      }
    }
    big.sort(Comparator.comparingLong((Integer p) -> -sum[p]));
    while (big.size() > SERIES_NAMED) {
      int p = big.remove(big.size() - 1);
      hasOther = true;
      for (int i = 0; i < n; i++) {
        other[i] += Math.max(0, e.values()[p][i]);
      }
    }
    int[] drawn = drawn(n);
    Map<String, long[]> named = new HashMap<>();
    for (int p : big) {
      named.put(e.parts().get(p), pick(e.values()[p], drawn));
    }
    if (hasOther) {
      named.put(LedgerColors.OTHER, pick(other, drawn));
    }
    List<SvgChart.Series> series = new ArrayList<>();
    for (String part : named.keySet().stream().sorted(LedgerColors.ORDER).toList()) {
      series.add(new SvgChart.Series(part, named.get(part), LedgerColors.color(part)));
    }
    List<SvgChart.Line> lines = new ArrayList<>();
    if (e.limit() > 0) {
      lines.add(new SvgChart.Line("memory limit (pod guard)", e.limit(), "#d62728"));
    }
    List<SvgChart.Marker> markers = new ArrayList<>();
    for (Snapshot.Mark m : e.marks()) {
      markers.add(new SvgChart.Marker(m.timeMillis(), m.kind(), m.label()));
    }
    List<SvgChart.Band> bands = new ArrayList<>();
    for (Snapshot.Band bd : e.bands()) {
      bands.add(new SvgChart.Band(bd.startMillis(), bd.endMillis(), bd.label()));
    }
    return new SvgChart.Chart(
        "executor " + e.executorId() + ": resident memory by owner",
        pick(e.times(), drawn),
        series,
        lines,
        markers,
        bands);
  }

  /**
   * The indices of the samples drawn: all of them up to {@value #DRAWN}, else {@value #DRAWN}
   * evenly spaced ones, the first and the last included (a chart {@value #WIDTH} pixels wide shows
   * no more).
   */
  static int[] drawn(int n) {
    int k = Math.min(n, DRAWN);
    int[] out = new int[k];
    for (int i = 0; i < k; i++) {
      out[i] = k == 1 ? n - 1 : (int) ((long) i * (n - 1) / (k - 1));
    }
    return out;
  }

  private static long[] pick(long[] v, int[] idx) {
    long[] out = new long[idx.length];
    for (int i = 0; i < idx.length; i++) {
      out[i] = idx[i] < v.length ? v[idx[i]] : 0;
    }
    return out;
  }

  private static void ends(StringBuilder b, List<Snapshot.Executor> executors) {
    List<Snapshot.Executor> ended = executors.stream().filter(e -> e.end() != null).toList();
    b.append("<h2>Executors that ended</h2>");
    if (ended.isEmpty()) {
      b.append("<p>None.</p>");
      return;
    }
    b.append("<table><tr><th>executor</th><th>removed</th><th>cause</th><th>exit code</th>")
        .append("<th>container</th><th>limit</th>")
        .append("<th>why</th><th>tasks lost with it</th><th>tasks failed for memory</th></tr>");
    for (Snapshot.Executor e : ended) {
      Snapshot.End d = e.end();
      b.append("<tr><td><a href=\"#executor-")
          .append(SvgChart.escape(e.executorId()))
          .append("\">")
          .append(SvgChart.escape(e.executorId()))
          .append("</a></td><td>")
          .append(TIME.format(Instant.ofEpochMilli(d.timeMillis())))
          .append("</td><td>")
          .append(SvgChart.escape(d.cause()))
          .append("</td><td class=\"n\">")
          .append(d.exitCode() == null ? "none" : d.exitCode())
          .append("</td><td>")
          .append(d.container() == null ? "" : SvgChart.escape(d.container()))
          .append("</td><td>")
          .append(d.limit() == null ? "" : SvgChart.escape(d.limit()))
          .append("</td><td class=\"verdict\">")
          .append(SvgChart.escape(d.verdict()))
          .append("</td><td>")
          .append(e.lostTasks());
      if (!e.lostStages().isEmpty()) {
        b.append(" (stages ")
            .append(SvgChart.escape(String.join(", ", e.lostStages())))
            .append(')');
      }
      b.append("</td><td>");
      for (String f : d.failedTasks()) {
        b.append(SvgChart.escape(f)).append("<br>");
      }
      b.append("</td></tr>");
    }
    b.append("</table>");
  }

  /**
   * The heap holders: per JVM (the driver first, then the executors), its last analysis, when, why
   * and what it saw, and a table of its holders: type, samples, sampled bytes, when and where they
   * were allocated, and their path from a GC root.
   */
  static void holders(StringBuilder b, Snapshot s, boolean actions) {
    b.append("<h2 id=\"heap-holders\">Heap holders</h2><p>Who holds each JVM's heap: live objects")
        .append(" from the JVM's Old Object Samples, with their paths from a GC root, as the last")
        .append(" growth report of the heap or the last analysis asked for found them. Types,")
        .append(" fields and sizes only, never values.</p>");
    Map<String, Snapshot.Holders> by = new LinkedHashMap<>();
    for (Snapshot.Holders h : s.holders()) {
      by.put(h.executorId(), h);
    }
    List<String> jvms = new ArrayList<>();
    if (actions || by.containsKey("driver")) {
      jvms.add("driver");
    }
    for (Snapshot.Executor e : s.executors()) {
      boolean shown = actions ? e.end() == null : by.containsKey(e.executorId());
      if (shown && !jvms.contains(e.executorId())) {
        jvms.add(e.executorId());
      }
    }
    for (String id : by.keySet()) {
      if (!jvms.contains(id)) {
        jvms.add(id);
      }
    }
    if (jvms.isEmpty()) {
      b.append("<p>None reported.</p>");
      return;
    }
    for (String id : jvms) {
      b.append("<h3>").append(id.equals("driver") ? "Driver" : "Executor " + SvgChart.escape(id));
      if (actions) {
        b.append(" <a class=\"action\" href=\"")
            .append(NativeMemoryWeb.HOLDERS_PATH)
            .append("/?")
            .append(NativeMemoryWeb.JVM_PARAMETER)
            .append('=')
            .append(URLEncoder.encode(id, StandardCharsets.UTF_8))
            .append("\">who holds the heap</a>");
      }
      b.append("</h3>");
      Snapshot.Holders h = by.get(id);
      if (h == null) {
        b.append("<p>No analysis yet.</p>");
        continue;
      }
      b.append("<p>")
          .append(TIME.format(Instant.ofEpochMilli(h.timeMillis())))
          .append(", ")
          .append(SvgChart.escape(h.trigger()))
          .append(": ")
          .append(SvgChart.escape(h.note()))
          .append("</p>");
      if (h.holders().isEmpty()) {
        continue;
      }
      b.append("<table><tr><th>type</th><th>samples</th><th>sampled</th><th>allocated</th>")
          .append("<th>allocated at</th><th>held by (from the objects to the GC root)</th></tr>");
      for (HeapHolder r : h.holders()) {
        b.append("<tr><td>")
            .append(SvgChart.escape(r.typeAndLength()))
            .append("</td><td class=\"n\">")
            .append(r.getSamples())
            .append("</td><td class=\"n\">")
            .append(r.getBytes() < 0 ? "?" : Bytes.format(r.getBytes()))
            .append("</td><td>")
            .append(TIME.format(Instant.ofEpochMilli(r.getFirstAllocatedMillis())));
        if (r.getLastAllocatedMillis() / 1000 != r.getFirstAllocatedMillis() / 1000) {
          b.append("<br>to ").append(TIME.format(Instant.ofEpochMilli(r.getLastAllocatedMillis())));
        }
        b.append("</td><td>");
        for (String f : r.getFrames()) {
          b.append(SvgChart.escape(f)).append("<br>");
        }
        b.append("</td><td>");
        if (r.getRoot() == null) {
          b.append("no path found");
        } else {
          for (String link : r.getChain()) {
            b.append(SvgChart.escape(link)).append(" ←<br>");
          }
          b.append("root: ").append(SvgChart.escape(r.getRoot()));
        }
        b.append("</td></tr>");
      }
      b.append("</table>");
    }
  }

  private static void leaks(StringBuilder b, List<Snapshot.Executor> executors) {
    b.append("<h2>Leaks</h2><p>Native memory still held when its task ended, as each executor")
        .append(" last reported it: leaks counted, their bytes, and what they still hold.</p>");
    b.append("<table><tr><th>executor</th><th>leaks</th><th>leaked</th>")
        .append("<th>still resident</th></tr>");
    for (Snapshot.Executor e : executors) {
      Map<String, Long> l = e.leaks();
      b.append("<tr><td>")
          .append(SvgChart.escape(e.executorId()))
          .append("</td><td class=\"n\">")
          .append(l.getOrDefault("leaks", -1L) < 0 ? "?" : l.get("leaks"))
          .append("</td><td class=\"n\">")
          .append(Bytes.format(l.getOrDefault("leakedBytes", -1L)))
          .append("</td><td class=\"n\">")
          .append(Bytes.format(l.getOrDefault("leakedResident", -1L)))
          .append("</td></tr>");
    }
    b.append("</table>");
  }

  private static void stages(StringBuilder b, List<Snapshot.Stage> stages) {
    b.append("<h2>Stage native peaks</h2>");
    if (stages.isEmpty()) {
      b.append("<p>No stage completed yet.</p>");
      return;
    }
    b.append("<table><tr><th>stage</th><th>completed</th><th>reserved, all executors</th>")
        .append("<th>held, all executors</th><th>reserved, one executor</th>")
        .append("<th>one task pool</th><th>largest consumers</th></tr>");
    for (Snapshot.Stage st : stages) {
      b.append("<tr><td>")
          .append(st.stageId())
          .append('.')
          .append(st.attempt())
          .append("</td><td>")
          .append(TIME.format(Instant.ofEpochMilli(st.timeMillis())))
          .append("</td><td class=\"n\">")
          .append(Bytes.format(st.totalReserved()))
          .append("</td><td class=\"n\">")
          .append(Bytes.format(st.totalHeld()))
          .append("</td><td class=\"n\">")
          .append(Bytes.format(st.maxExecutorReserved()))
          .append("</td><td class=\"n\">")
          .append(Bytes.format(st.taskPoolPeak()))
          .append("</td><td>");
      int k = 0;
      for (Map.Entry<String, Long> c : st.consumers().entrySet()) {
        if (k++ == 5) {
          b.append(", …");
          break;
        }
        b.append(k > 1 ? ", " : "")
            .append(SvgChart.escape(c.getKey()))
            .append(' ')
            .append(Bytes.format(c.getValue()));
      }
      b.append("</td></tr>");
    }
    b.append("</table>");
  }
}
