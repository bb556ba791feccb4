package org.nativepool.spark.ledger;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Finds ledger parts that grow and never come back. It is given one reading per task boundary
 * ({@link #sample}); per part it keeps the floor (least value) of each window of {@code window}
 * readings, and reports a part once its last {@code windows} window floors each rose above the
 * one before (each step at least a quarter of their average step) and together by at least {@code
 * minBytes}.
 *
 * <p>Why floors and consecutive windows: a part's value at a task boundary includes whatever the
 * tasks still running hold, and garbage not yet collected; its floor over a window is what stays
 * when they are gone. Warm-up (classes loaded, code compiled, pools filled) raises floors early
 * and then slows down and stops, so it fails "every window higher by at least a quarter of the
 * average step" or "by at least minBytes in all"; a leak raises the floor by about the same amount
 * every window, forever. A reported part is reported again only after
 * its floor rose by another {@code minBytes}. Not thread-safe: {@link ExecutorLedger} calls it on
 * one thread.
 */
final class GrowthDetector {
  /**
   * What {@link #sample} found: a part, its floors at the start and the end, the tasks, and when
   * the first of those floors was read (epoch ms; 0 for readings given without a time): the growth
   * began after it.
   */
  record Growth(String part, long fromBytes, long toBytes, long tasks, long sinceMillis) {
    Growth(String part, long fromBytes, long toBytes, long tasks) {
      this(part, fromBytes, toBytes, tasks, 0);
    }
  }

  private final int window;
  private final int windows;
  private final long minBytes;
  private final java.util.function.Predicate<String> slow;
  private final Map<String, PartState> parts = new HashMap<>();
  private long samples;

  GrowthDetector(int window, int windows, long minBytes) {
    this(window, windows, minBytes, part -> false);
  }

  /**
   * @param slow the parts that need twice {@code windows} rising windows: the JVM's own, which
   *     warms up for longer than native memory does (JIT compilation, class data, GC structures
   *     sized to the heap it has seen)
   */
  GrowthDetector(
      int window, int windows, long minBytes, java.util.function.Predicate<String> slow) {
    if (window < 1 || windows < 1 || minBytes < 1) {
      throw new IllegalArgumentException(
          "window " + window + ", windows " + windows + ", minBytes " + minBytes + ": each >= 1");
    }
    this.window = window;
    this.windows = windows;
    this.minBytes = minBytes;
    this.slow = slow;
  }

  /** Task boundaries seen so far. */
  long samples() {
    return samples;
  }

  /**
   * Takes one reading (part → bytes, negative values ignored) and returns the parts that now
   * qualify as growing, in the order of {@code reading}.
   */
  List<Growth> sample(Map<String, Long> reading) {
    return sample(reading, 0);
  }

  /** {@link #sample(Map)} of a reading taken at {@code timeMillis} (epoch ms). */
  List<Growth> sample(Map<String, Long> reading, long timeMillis) {
    samples++;
    List<Growth> out = new ArrayList<>();
    for (Map.Entry<String, Long> e : reading.entrySet()) {
      long v = e.getValue();
      if (v < 0) {
        continue;
      }
      PartState s = parts.computeIfAbsent(e.getKey(), k -> new PartState());
      int need = slow.test(e.getKey()) ? 2 * windows : windows;
      if (s.count == 0 || v < s.min) {
        s.min = v;
        s.minMillis = timeMillis;
      }
      if (++s.count < window) {
        continue;
      }
      s.floors.addLast(s.min);
      s.floorMillis.addLast(s.minMillis);
      s.count = 0;
      if (s.floors.size() > need + 1) {
        s.floors.removeFirst();
        s.floorMillis.removeFirst();
      }
      if (s.floors.size() < need + 1) {
        continue;
      }
      long from = s.floors.getFirst();
      long to = s.floors.getLast();
      // Every step up, and none much smaller than the average step: warm-up decelerates (its
      // last steps are small), a leak does not.
      long minStep = Math.max(1, (to - from) / (4L * need));
      long prev = Long.MIN_VALUE;
      boolean rising = true;
      for (long f : s.floors) {
        if (prev != Long.MIN_VALUE && f - prev < minStep) {
          rising = false;
          break;
        }
        prev = f;
      }
      if (rising && to - from >= minBytes && to - s.reportedAt >= minBytes) {
        s.previousReportedAt = s.reportedAt;
        s.reportedAt = to;
        out.add(new Growth(e.getKey(), from, to, (long) need * window, s.floorMillis.getFirst()));
      }
    }
    return out;
  }

  /**
   * Takes back the last report of {@code part}, which its caller found was not growth after all (a
   * rise of the heap that was garbage): the part qualifies again as soon as it does by the rule,
   * not only after another {@code minBytes}.
   */
  void withdraw(String part) {
    PartState s = parts.get(part);
    if (s != null) {
      s.reportedAt = s.previousReportedAt;
    }
  }

  private static final class PartState {
    final ArrayDeque<Long> floors = new ArrayDeque<>();
    /** When each floor was read. */
    final ArrayDeque<Long> floorMillis = new ArrayDeque<>();
    long min;
    long minMillis;
    int count;
    /** The floor when last reported (a new report needs minBytes more); none yet = MIN_VALUE/2. */
    long reportedAt = Long.MIN_VALUE / 2;

    /** {@link #reportedAt} before the last report, for {@link #withdraw}. */
    long previousReportedAt = Long.MIN_VALUE / 2;
  }
}
