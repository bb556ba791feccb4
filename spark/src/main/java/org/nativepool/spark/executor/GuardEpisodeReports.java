package org.nativepool.spark.executor;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.nativepool.spark.events.GuardEpisodeEvent;
import org.nativepool.spark.jni.GuardEpisode;
import org.nativepool.spark.ledger.ExecutorLedger;
import org.nativepool.spark.ledger.LedgerHistory;
import org.nativepool.spark.ledger.LedgerSnapshot;

/**
 * The executor's reports of its pod guard's episodes, made from what {@code
 * Natives.guardEpisodes()} returns each time the reporting thread polls it ({@link #poll}, every
 * {@value #POLL_MILLIS} ms).
 *
 * <ul>
 *   <li>While an episode lasts, each poll takes a reading of the executor memory ledger (so at most
 *       one per poll), and the episode keeps each resident ledger part's highest reading. Its
 *       baseline is the ledger's last calm reading before the episode started: the last one taken
 *       outside every episode the guard lists ({@link LedgerHistory#lastBefore(long,
 *       java.util.function.Predicate)}), so that an episode closely following another is measured
 *       from before the pressure, as the guard measures its own figure outside native memory from
 *       its last calm sample. An episode that started and ended between two polls gets the readings
 *       the ledger took meanwhile.
 *   <li>When an episode has ended, or is first seen still lasting with nothing native left to give
 *       (the kernel may kill the executor before it ends), one WARN line describes it ({@link
 *       GuardEpisodeEvent#describe()}): once per episode, also when several end within one poll.
 *   <li>When an episode has ended, a {@link GuardEpisodeEvent} goes to the driver.
 *   <li>An episode that disappears while it lasts (the guard was stopped or replaced) is reported
 *       as it was last seen.
 * </ul>
 *
 * <p>Episodes are told apart by their number and start, so a replaced guard, which numbers its
 * episodes from 1 again, is reported in full. Not safe for concurrent use: the reporting thread
 * alone calls it.
 */
final class GuardEpisodeReports {
  /** How often the reporting thread polls the guard's episodes, in ms. */
  static final long POLL_MILLIS = 250;

  private final String executorId;
  private final ExecutorLedger ledger;
  private final Consumer<String> warn;
  private final Consumer<GuardEpisodeEvent> toDriver;

  /** The episodes of the last poll and those still being followed, by {@link #key}. */
  private final Map<String, Tracked> tracked = new LinkedHashMap<>();

  /** One episode as these reports follow it. */
  private static final class Tracked {
    /** The episode as last seen. */
    GuardEpisode last;

    /** The resident figures of the last calm ledger reading before it started; null if none. */
    Map<String, Long> baseline;

    /** Each resident figure's highest reading during it. */
    final Map<String, Long> peaks = new LinkedHashMap<>();

    /** The time of the newest ledger reading merged into {@link #peaks}. */
    long mergedUpTo = Long.MIN_VALUE;

    /** Whether its WARN line was logged, and whether it is over (event sent). */
    boolean warned;

    boolean done;
  }

  /**
   * @param executorId the executor, for the lines and events
   * @param ledger the executor's ledger: read while an episode lasts, its history for baselines
   * @param warn logs one WARN line
   * @param toDriver sends an event to the driver side (never throws)
   */
  GuardEpisodeReports(
      String executorId,
      ExecutorLedger ledger,
      Consumer<String> warn,
      Consumer<GuardEpisodeEvent> toDriver) {
    this.executorId = executorId;
    this.ledger = ledger;
    this.warn = warn;
    this.toDriver = toDriver;
  }

  /** Takes the guard's episodes as listed now (oldest first) and reports what is due. */
  void poll(List<GuardEpisode> episodes) {
    boolean lasting = false;
    for (GuardEpisode e : episodes) {
      Tracked t = tracked.get(key(e));
      lasting |= e.open() && (t == null || !t.done);
    }
    if (lasting) {
      ledger.readNow(); // lands in the ledger's history, merged below
    }
    Set<String> present = new HashSet<>();
    for (GuardEpisode e : episodes) {
      String key = key(e);
      present.add(key);
      Tracked t = tracked.get(key);
      if (t == null) {
        t = new Tracked();
        LedgerSnapshot before =
            ledger.history().lastBefore(e.startMillis(), s -> calm(s.timeMillis(), episodes));
        t.baseline = before == null ? null : LedgerHistory.residentFigures(before);
        tracked.put(key, t);
      }
      if (t.done) {
        continue;
      }
      t.last = e;
      merge(t, e.startMillis(), e.open() ? Long.MAX_VALUE : e.endMillis());
      if (!e.open()) {
        finish(t, null);
      } else if (e.nothingLeft() && !t.warned) {
        t.warned = true;
        warn.accept(event(t).describe());
      }
    }
    for (Iterator<Map.Entry<String, Tracked>> it = tracked.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<String, Tracked> entry = it.next();
      if (present.contains(entry.getKey())) {
        continue;
      }
      Tracked t = entry.getValue();
      if (!t.done) {
        finish(t, "; the guard was stopped or replaced before it ended");
      }
      it.remove();
    }
  }

  /** Logs the episode's line unless done already, sends its event, and marks it done. */
  private void finish(Tracked t, String note) {
    GuardEpisodeEvent ev = event(t);
    if (!t.warned) {
      t.warned = true;
      warn.accept(note == null ? ev.describe() : ev.describe() + note);
    }
    t.done = true;
    toDriver.accept(ev);
  }

  /** Raises the episode's peaks to the ledger readings of its span not merged yet. */
  private void merge(Tracked t, long from, long to) {
    for (LedgerSnapshot s : ledger.history().between(Math.max(from, t.mergedUpTo + 1), to)) {
      for (Map.Entry<String, Long> f : LedgerHistory.residentFigures(s).entrySet()) {
        t.peaks.merge(f.getKey(), f.getValue(), Math::max);
      }
      t.mergedUpTo = Math.max(t.mergedUpTo, s.timeMillis());
    }
  }

  /** The event of an episode as last seen, with the ledger parts that grew. */
  private GuardEpisodeEvent event(Tracked t) {
    GuardEpisode e = t.last;
    Map<String, Long> spills = new LinkedHashMap<>();
    for (GuardEpisode.Spill s : e.spills()) {
      spills.merge(s.consumer(), s.bytes(), Long::sum);
    }
    return new GuardEpisodeEvent(
        executorId,
        e.id(),
        e.startMillis(),
        e.endMillis(),
        e.limit(),
        e.reserve(),
        e.startUnreclaimable(),
        e.peakUnreclaimable(),
        e.startNonNative(),
        e.peakNonNative(),
        e.spilled(),
        e.reactionMicros(),
        e.recoveryMicros(),
        e.goFreed(),
        e.trims(),
        e.nothingLeft(),
        e.offHeapTaken(),
        e.offHeapPeak(),
        e.offHeapReactionMicros(),
        grown(t.baseline, t.peaks),
        spills);
  }

  /**
   * Each figure of {@code peaks} that grew by at least {@link GuardEpisodeEvent#MIN_GROWTH} over
   * {@code baseline} (a part absent from it grew from 0), largest first; empty without a baseline.
   */
  static Map<String, Long> grown(Map<String, Long> baseline, Map<String, Long> peaks) {
    if (baseline == null) {
      return Map.of();
    }
    List<Map.Entry<String, Long>> up = new ArrayList<>();
    for (Map.Entry<String, Long> p : peaks.entrySet()) {
      long growth = p.getValue() - baseline.getOrDefault(p.getKey(), 0L);
      if (growth >= GuardEpisodeEvent.MIN_GROWTH) {
        up.add(Map.entry(p.getKey(), growth));
      }
    }
    up.sort(Map.Entry.<String, Long>comparingByValue().reversed());
    Map<String, Long> out = new LinkedHashMap<>();
    for (Map.Entry<String, Long> e : up) {
      out.put(e.getKey(), e.getValue());
    }
    return out;
  }

  /** Whether {@code millis} falls outside every episode of {@code episodes}. */
  static boolean calm(long millis, List<GuardEpisode> episodes) {
    for (GuardEpisode e : episodes) {
      if (millis >= e.startMillis() && (e.open() || millis <= e.endMillis())) {
        return false;
      }
    }
    return true;
  }

  /** An episode's identity across polls: its number and its start. */
  private static String key(GuardEpisode e) {
    return e.id() + "@" + e.startMillis();
  }
}
