package org.nativepool.spark.driver;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.events.GuardEpisodeEvent;
import org.nativepool.spark.events.HeapHoldersEvent;
import org.nativepool.spark.events.LedgerCrossingEvent;
import org.nativepool.spark.events.ReservedThresholdEvent;
import org.nativepool.spark.jni.ArrowProcessStat;
import org.nativepool.spark.jni.ProcessStat;

/**
 * What the driver keeps of one executor's recent past, to say why it ended ({@link
 * ExecutorDiagnosis}): its samples, downsampled, and its last pod guard episodes, threshold
 * crossings, growth reports and tasks that failed for lack of memory.
 *
 * <p><b>Bounds.</b> Samples are kept as {@link Point}s of a few figures ({@link #FIGURES}) and the
 * ledger's parts: at most one per {@value #FINE_STEP_MILLIS} ms over the last {@value
 * #FINE_SPAN_MILLIS} ms before the newest (the newest sample always replaces a kept one closer than
 * that), and one per {@value #COARSE_STEP_MILLIS} ms over the {@value #COARSE_SPAN_MILLIS} ms
 * before it; older ones are dropped. That is at most 81 points of about 40 figures each, some 30 KB
 * per executor whatever its heartbeat interval. Of the rest it keeps the last {@value
 * #EPISODES_KEPT} guard episodes, {@value #CROSSINGS_KEPT} crossings, {@value #GROWTH_KEPT} growth
 * reports and {@value #FAILURES_KEPT} memory failures, each as one line. Safe for concurrent use.
 */
final class ExecutorEvidence {
  /** The span kept at full resolution before the newest sample, ms. */
  static final long FINE_SPAN_MILLIS = 60_000;

  /** The least spacing of points within {@link #FINE_SPAN_MILLIS}, ms. */
  static final long FINE_STEP_MILLIS = 1_000;

  /** The whole span kept before the newest sample, ms. */
  static final long COARSE_SPAN_MILLIS = 600_000;

  /** The least spacing of points older than {@link #FINE_SPAN_MILLIS}, ms. */
  static final long COARSE_STEP_MILLIS = 30_000;

  static final int EPISODES_KEPT = 4;
  static final int CROSSINGS_KEPT = 8;
  static final int GROWTH_KEPT = 4;
  static final int FAILURES_KEPT = 8;

  /** The gauges a point keeps besides the ledger's parts ({@code ledger.<part>}). */
  static final List<String> FIGURES =
      List.of(
          ProcessStat.GUARD_LIMIT.gaugeName(),
          ProcessStat.GUARD_UNRECLAIMABLE.gaugeName(),
          ProcessStat.GUARD_RESERVE.gaugeName(),
          ProcessStat.GUARD_HEADROOM.gaugeName(),
          ProcessStat.RESERVED.gaugeName(),
          ProcessStat.HELD.gaugeName(),
          ArrowProcessStat.RSS.gaugeName());

  /**
   * One kept sample: when it was read and its figures, by name ({@link #FIGURES} and {@code
   * ledger.<part>}). Consecutive points with the same names share one names array.
   */
  static final class Point {
    final long timeMillis;
    private final String[] names;
    private final long[] values;

    Point(long timeMillis, String[] names, long[] values) {
      this.timeMillis = timeMillis;
      this.names = names;
      this.values = values;
    }

    /** The figure {@code name}, or {@code otherwise} if the sample had none. */
    long figure(String name, long otherwise) {
      for (int i = 0; i < names.length; i++) {
        if (names[i].equals(name)) {
          return values[i];
        }
      }
      return otherwise;
    }

    /** The ledger part {@code part} ({@code ledger.<part>}), or {@code otherwise}. */
    long part(String part, long otherwise) {
      return figure(ExecutorSample.LEDGER_PREFIX + part, otherwise);
    }

    /** The names of the ledger parts it has, in the sample's order. */
    List<String> parts() {
      List<String> out = new ArrayList<>();
      for (String n : names) {
        if (n.startsWith(ExecutorSample.LEDGER_PREFIX)) {
          out.add(n.substring(ExecutorSample.LEDGER_PREFIX.length()));
        }
      }
      return out;
    }
  }

  /** Oldest first. Guarded by this. */
  private final ArrayDeque<Point> points = new ArrayDeque<>();

  private final ArrayDeque<String> episodes = new ArrayDeque<>();
  private final ArrayDeque<GuardEpisodeEvent> episodeEvents = new ArrayDeque<>();
  private final ArrayDeque<String> crossings = new ArrayDeque<>();
  private final ArrayDeque<String> growth = new ArrayDeque<>();
  private final ArrayDeque<TaskFailure> failures = new ArrayDeque<>();
  private String container;

  /** The last heap holders it reported (a growth report's or an on-demand analysis); or null. */
  private HeapHoldersEvent heapHolders;

  /**
   * A task that failed on the executor for lack of memory.
   *
   * @param timeMillis when it ended (epoch ms)
   * @param line e.g. {@code task 12 (3.0) in stage 4.0: java.lang.OutOfMemoryError: Java heap
   *     space}
   * @param jvm true for {@code java.lang.OutOfMemoryError}, false for Spark's {@code
   *     SparkOutOfMemoryError}
   */
  record TaskFailure(long timeMillis, String line, boolean jvm) {}

  /** Adds a sample as the newest point and thins the older ones (see the class comment). */
  synchronized void add(ExecutorSample s) {
    Map<String, Long> f = s.figures();
    List<String> names = new ArrayList<>();
    List<Long> values = new ArrayList<>();
    for (String n : FIGURES) {
      Long v = f.get(n);
      if (v != null) {
        names.add(n);
        values.add(v);
      }
    }
    for (Map.Entry<String, Long> e : s.ledger().parts().entrySet()) {
      names.add(ExecutorSample.LEDGER_PREFIX + e.getKey());
      values.add(e.getValue());
    }
    String[] n = names.toArray(new String[0]);
    Point newest = points.peekLast();
    if (newest != null && Arrays.equals(newest.names, n)) {
      n = newest.names; // one array for a run of samples with the same figures
    }
    long[] v = new long[values.size()];
    for (int i = 0; i < v.length; i++) {
      v[i] = values.get(i);
    }
    if (newest != null && s.timeMillis() < newest.timeMillis) {
      return; // out of order: the newer one is kept
    }
    points.addLast(new Point(s.timeMillis(), n, v));
    thin(s.timeMillis());
  }

  /** Drops points past the coarse span, and thins those past the fine span to the coarse step. */
  private void thin(long now) {
    while (!points.isEmpty() && now - points.peekFirst().timeMillis > COARSE_SPAN_MILLIS) {
      points.removeFirst();
    }
    long lastKept = Long.MIN_VALUE;
    Iterator<Point> it = points.iterator();
    while (it.hasNext()) {
      Point p = it.next();
      if (now - p.timeMillis <= FINE_SPAN_MILLIS) {
        // the newest (the last) always stays
        if (lastKept != Long.MIN_VALUE
            && p.timeMillis - lastKept < FINE_STEP_MILLIS
            && it.hasNext()) {
          it.remove();
          continue;
        }
      } else if (lastKept != Long.MIN_VALUE && p.timeMillis - lastKept < COARSE_STEP_MILLIS) {
        it.remove();
        continue;
      }
      lastKept = p.timeMillis;
    }
  }

  /** Keeps the episode's summary and figures (the last {@value #EPISODES_KEPT}). */
  synchronized void add(GuardEpisodeEvent g) {
    push(episodeEvents, g, EPISODES_KEPT);
    push(episodes, g.summary().replaceFirst("^nativepool: executor \\S+ had ", ""), EPISODES_KEPT);
  }

  /** Keeps a ledger crossing's line (the last {@value #CROSSINGS_KEPT} crossings). */
  synchronized void add(LedgerCrossingEvent c) {
    push(
        crossings,
        c.describe().replaceFirst("^nativepool: executor \\S+ ledger: ", ""),
        CROSSINGS_KEPT);
  }

  /** Keeps a crossing of a reserved-bytes threshold as a line, with the ledger's crossings. */
  synchronized void add(ReservedThresholdEvent c) {
    push(
        crossings,
        "reserved "
            + (c.isUp() ? "rose to " : "fell to ")
            + Bytes.format(c.getReserved())
            + (c.isUp() ? ", crossing " : ", below ")
            + Bytes.format(c.getLevel()),
        CROSSINGS_KEPT);
  }

  /**
   * Keeps a growth report's line (the last {@value #GROWTH_KEPT}), without its heap holders, which
   * are kept as the last known ones.
   */
  synchronized void add(GrowthReportEvent g) {
    String line = g.describe().replaceFirst("^nativepool: executor \\S+ ledger: ", "");
    int holders = line.indexOf("; heap holders: ");
    push(growth, holders < 0 ? line : line.substring(0, holders), GROWTH_KEPT);
    HeapHoldersEvent h = g.heapHoldersEvent();
    if (h != null) {
      heapHolders = h;
    }
  }

  /** Keeps an analysis of the heap's holders as the last known one. */
  synchronized void add(HeapHoldersEvent h) {
    if (!h.getHolders().isEmpty() || heapHolders == null) {
      heapHolders = h; // a refusal (no holders) does not hide holders known before
    }
  }

  /** Keeps a task failure for lack of memory (the last {@value #FAILURES_KEPT}). */
  synchronized void add(TaskFailure f) {
    push(failures, f, FAILURES_KEPT);
  }

  private static <T> void push(ArrayDeque<T> q, T item, int max) {
    q.addLast(item);
    while (q.size() > max) {
      q.removeFirst();
    }
  }

  /**
   * The container the executor runs in, as the cluster manager names it (YARN's {@code
   * container_…}, from the executor's attributes when Spark added it).
   */
  synchronized void container(String id) {
    container = id;
  }

  /** A copy of what is kept, for one diagnosis. */
  synchronized Snapshot snapshot() {
    return new Snapshot(
        List.copyOf(points),
        List.copyOf(episodeEvents),
        List.copyOf(episodes),
        List.copyOf(crossings),
        List.copyOf(growth),
        List.copyOf(failures),
        container,
        heapHolders);
  }

  /**
   * What an executor's evidence held at one moment.
   *
   * @param points kept samples, oldest first
   * @param episodeEvents the last guard episodes, oldest first
   * @param episodes their summaries, oldest first
   * @param crossings the last crossings' lines, oldest first
   * @param growth the last growth reports' lines, oldest first
   * @param failures the last memory failures, oldest first
   * @param container the executor's container, as the cluster manager names it; null if unknown
   * @param heapHolders the last heap holders it reported; null if none
   */
  record Snapshot(
      List<Point> points,
      List<GuardEpisodeEvent> episodeEvents,
      List<String> episodes,
      List<String> crossings,
      List<String> growth,
      List<TaskFailure> failures,
      String container,
      HeapHoldersEvent heapHolders) {
    /** Nothing known. */
    static final Snapshot EMPTY =
        new Snapshot(
            List.of(), List.of(), List.of(), List.of(), List.of(), List.of(), null, null);

    /** The newest point, or null. */
    Point last() {
      return points.isEmpty() ? null : points.get(points.size() - 1);
    }
  }
}
