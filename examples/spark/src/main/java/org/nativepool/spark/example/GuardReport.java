package org.nativepool.spark.example;

import java.util.List;
import java.util.Locale;
import org.nativepool.spark.jni.GuardEpisode;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.jni.ProcessStats;

/**
 * The report's lines on the burst ({@link Burst}) and the pod guard: the burst's shape and
 * timeline, and what the guard did during the measured run — the limit it kept, each episode (how
 * far memory outside native grew, who spilled what into ballast, the reaction and recovery times),
 * its refusals, and the ballast that went back to Spark. The figures go to report.properties too:
 *
 * <ul>
 *   <li>{@code burst.bytes}, {@code burst.startedMs}, {@code burst.fullMs}, {@code burst.freedMs}
 *       (-1: did not happen), {@code burst.failure};
 *   <li>{@code guard.limit} (-1: no limit kept), {@code guard.reserve}, {@code guard.episodes},
 *       {@code guard.spilled}, {@code guard.reactionMicrosMax}, {@code guard.recoveryMicrosMax}
 *       (-1: no episode), {@code guard.waits} (borrows that waited for room), {@code
 *       guard.admittedShort} (admitted when the wait ran out), {@code guard.refusedNow} (borrows
 *       for growth a consumer can do without, refused at once for want of room), {@code
 *       guard.released}, {@code guard.ballastPeak}, {@code guard.nothingLeft} (episodes that found
 *       nothing native to give), {@code guard.offHeapTaken} (Spark's free off-heap memory the guard
 *       held as ballast, taken as it became free), {@code guard.offHeapPeak} (the most held at
 *       once), {@code guard.offHeapReactionMicrosMax} (-1: none taken).
 * </ul>
 */
final class GuardReport {
  private GuardReport() {}

  /** Appends the lines to {@code b} and the figures to {@code r}. */
  static void add(
      SortDemo.Result r,
      StringBuilder b,
      Burst.Plan plan,
      Burst burst,
      ProcessStats before,
      ProcessStats after,
      List<GuardEpisode> episodes,
      long ballastPeak) {
    r.put("burst.bytes", plan.bytes());
    r.put("burst.startedMs", burst.startedMs());
    r.put("burst.fullMs", burst.fullMs());
    r.put("burst.freedMs", burst.freedMs());
    r.put("burst.failure", burst.failure() == null ? "" : burst.failure().toString());
    if (plan.any()) {
      String when =
          burst.startedMs() < 0
              ? "did not start (the run ended first, or the native pools never held memory)"
              : String.format(
                  Locale.ROOT,
                  "began at %.1f s, full at %s, freed at %s",
                  burst.startedMs() / 1000.0,
                  burst.fullMs() < 0
                      ? "never"
                      : String.format(Locale.ROOT, "%.1f s", burst.fullMs() / 1000.0),
                  burst.freedMs() < 0
                      ? "the end of the run"
                      : String.format(Locale.ROOT, "%.1f s", burst.freedMs() / 1000.0));
      SortDemo.line(
          b,
          "burst",
          plan.describe()
              + ": "
              + when
              + (burst.failure() == null ? "" : "; " + SortDemo.red("failed: " + burst.failure())));
    }

    long limit = after.get(ProcessStat.GUARD_LIMIT);
    long reserve = after.get(ProcessStat.GUARD_RESERVE);
    long waits = after.get(ProcessStat.GUARD_WAITS) - before.get(ProcessStat.GUARD_WAITS);
    long short_ =
        after.get(ProcessStat.GUARD_ADMITTED_SHORT) - before.get(ProcessStat.GUARD_ADMITTED_SHORT);
    long refusedNow =
        after.get(ProcessStat.GUARD_REFUSED_NOW) - before.get(ProcessStat.GUARD_REFUSED_NOW);
    long released =
        after.get(ProcessStat.GUARD_RELEASED_BYTES) - before.get(ProcessStat.GUARD_RELEASED_BYTES);
    long gathered =
        after.get(ProcessStat.GUARD_OFF_HEAP_GATHERED_BYTES)
            - before.get(ProcessStat.GUARD_OFF_HEAP_GATHERED_BYTES);
    long spilled = 0, reactionMax = -1, recoveryMax = -1, nothingLeft = 0;
    long offHeapTaken = 0, offHeapPeak = 0, offHeapReactionMax = -1;
    for (GuardEpisode e : episodes) {
      spilled += e.spilled();
      offHeapTaken += e.offHeapTaken();
      offHeapPeak = Math.max(offHeapPeak, e.offHeapPeak());
      offHeapReactionMax = Math.max(offHeapReactionMax, e.offHeapReactionMicros());
      reactionMax = Math.max(reactionMax, e.reactionMicros());
      recoveryMax = Math.max(recoveryMax, e.recoveryMicros());
      nothingLeft += e.nothingLeft() ? 1 : 0;
    }
    r.put("guard.limit", limit);
    r.put("guard.reserve", reserve);
    r.put("guard.episodes", episodes.size());
    r.put("guard.spilled", spilled);
    r.put("guard.reactionMicrosMax", reactionMax);
    r.put("guard.recoveryMicrosMax", recoveryMax);
    r.put("guard.waits", waits);
    r.put("guard.admittedShort", short_);
    r.put("guard.refusedNow", refusedNow);
    r.put("guard.released", released);
    r.put("guard.ballastPeak", ballastPeak);
    r.put("guard.nothingLeft", nothingLeft);
    r.put("guard.offHeapTaken", offHeapTaken);
    r.put("guard.offHeapPeak", offHeapPeak);
    r.put("guard.offHeapGathered", gathered);
    r.put("guard.offHeapReactionMicrosMax", offHeapReactionMax);
    if (reserve == 0) {
      SortDemo.line(b, "pod guard", "off");
      return;
    }
    if (limit < 0) {
      SortDemo.line(b, "pod guard", "standing by: no memory limit found (no cgroup limit)");
      return;
    }
    SortDemo.line(
        b,
        "pod guard",
        String.format(
            Locale.ROOT,
            "keeps %s free under the %s limit: %d episode%s in the run, %s spilled by native"
                + " consumers (pool ballast peak %s), %s of Spark's free off-heap memory held as"
                + " ballast (peak %s), %s back to Spark; %d borrow%s waited for room (%d admitted"
                + " short), %d it could do without refused at once; %s of the pools' ballast lent"
                + " to borrows Spark granted short",
            SortDemo.size(reserve),
            SortDemo.mib(limit),
            episodes.size(),
            episodes.size() == 1 ? "" : "s",
            SortDemo.size(spilled),
            SortDemo.size(ballastPeak),
            SortDemo.size(offHeapTaken),
            SortDemo.size(offHeapPeak),
            SortDemo.size(released),
            waits,
            waits == 1 ? "" : "s",
            short_,
            refusedNow,
            SortDemo.size(gathered)));
    for (GuardEpisode e : episodes) {
      StringBuilder who = new StringBuilder();
      for (GuardEpisode.Spill s : e.spills()) {
        who.append(who.length() == 0 ? "" : ", ")
            .append(s.consumer())
            .append(' ')
            .append(SortDemo.size(s.bytes()));
      }
      SortDemo.line(
          b,
          "  episode " + e.id(),
          String.format(
                  Locale.ROOT,
                  "outside native memory grew %s (unreclaimable %s → peak %s); spilled %s%s;"
                      + " reaction %s; Spark's off-heap memory held %s at most (%s taken, the"
                      + " first after %s); recovered in %s%s",
                  SortDemo.size(e.grewOutsideNative()),
                  SortDemo.mib(e.startUnreclaimable()),
                  SortDemo.mib(e.peakUnreclaimable()),
                  SortDemo.size(e.spilled()),
                  who.length() == 0 ? "" : " (" + who + ")",
                  e.reactionMicros() < 0
                      ? "none"
                      : String.format(Locale.ROOT, "%.1f ms", e.reactionMicros() / 1000.0),
                  SortDemo.size(e.offHeapPeak()),
                  SortDemo.size(e.offHeapTaken()),
                  e.offHeapReactionMicros() < 0
                      ? "none"
                      : String.format(
                          Locale.ROOT, "%.1f ms", e.offHeapReactionMicros() / 1000.0),
                  String.format(Locale.ROOT, "%.1f ms", e.recoveryMicros() / 1000.0),
                  e.open() ? " (still open at the end)" : "")
              + (e.nothingLeft()
                  ? "; " + SortDemo.red("nothing native was left to give: the kernel decided")
                  : ""));
    }
  }
}
