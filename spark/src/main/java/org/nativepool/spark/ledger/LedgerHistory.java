package org.nativepool.spark.ledger;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * The executor memory ledger's recent past: its last readings with their times, bounded both in
 * count and in age, so that what happened around a moment can be looked at afterwards. The pod
 * guard's episode reports take from it the reading before an episode started (the calm baseline)
 * and the readings during it; a post-mortem view can show the last minute before a failure.
 *
 * <p>Readings are kept in the order they are added, which is the order they were taken ({@link
 * ExecutorLedger} adds every reading it makes); a reading older than the newest by more than the
 * age bound, or beyond the count bound, is dropped. Each reading is an immutable {@link
 * LedgerSnapshot} of a few kilobytes, so the default bounds ({@value #DEFAULT_READINGS} readings,
 * {@value #DEFAULT_AGE_MILLIS} ms) keep about a megabyte at most. Safe for concurrent use.
 */
public final class LedgerHistory {
  /** The default count bound: a minute of readings every 250 ms. */
  public static final int DEFAULT_READINGS = 240;

  /** The default age bound, in ms. */
  public static final long DEFAULT_AGE_MILLIS = 60_000;

  private final int maxReadings;
  private final long maxAgeMillis;

  /** Oldest first. Guarded by this. */
  private final ArrayDeque<LedgerSnapshot> readings = new ArrayDeque<>();

  /** A history with the default bounds. */
  public LedgerHistory() {
    this(DEFAULT_READINGS, DEFAULT_AGE_MILLIS);
  }

  /**
   * @param maxReadings the most readings kept, at least 1
   * @param maxAgeMillis how much older than the newest a kept reading may be, in ms, at least 0
   * @throws IllegalArgumentException for bounds out of range
   */
  public LedgerHistory(int maxReadings, long maxAgeMillis) {
    if (maxReadings < 1 || maxAgeMillis < 0) {
      throw new IllegalArgumentException(
          "nativepool: ledger history bounds out of range: "
              + maxReadings
              + " readings, "
              + maxAgeMillis
              + " ms");
    }
    this.maxReadings = maxReadings;
    this.maxAgeMillis = maxAgeMillis;
  }

  /** Adds a reading (the newest) and drops what falls out of the bounds. */
  public synchronized void add(LedgerSnapshot s) {
    readings.addLast(s);
    while (readings.size() > maxReadings
        || s.timeMillis() - readings.peekFirst().timeMillis() > maxAgeMillis) {
      readings.removeFirst();
    }
  }

  /** The newest reading, or null if none was added. */
  public synchronized LedgerSnapshot latest() {
    return readings.peekLast();
  }

  /**
   * The newest reading taken strictly before {@code millis} (epoch ms), or null if none kept is:
   * the state of the executor just before something happened at {@code millis}.
   */
  public LedgerSnapshot lastBefore(long millis) {
    return lastBefore(millis, s -> true);
  }

  /**
   * The newest reading taken strictly before {@code millis} (epoch ms) that {@code which} accepts,
   * or null if none kept is: e.g. the last reading taken while nothing unusual was going on.
   */
  public synchronized LedgerSnapshot lastBefore(long millis, Predicate<LedgerSnapshot> which) {
    Iterator<LedgerSnapshot> it = readings.descendingIterator();
    while (it.hasNext()) {
      LedgerSnapshot s = it.next();
      if (s.timeMillis() < millis && which.test(s)) {
        return s;
      }
    }
    return null;
  }

  /**
   * The readings taken from {@code fromMillis} to {@code toMillis} (both included), oldest first.
   */
  public synchronized List<LedgerSnapshot> between(long fromMillis, long toMillis) {
    List<LedgerSnapshot> out = new ArrayList<>();
    for (LedgerSnapshot s : readings) {
      if (s.timeMillis() >= fromMillis && s.timeMillis() <= toMillis) {
        out.add(s);
      }
    }
    return out;
  }

  /** Every reading kept, oldest first. */
  public synchronized List<LedgerSnapshot> all() {
    return new ArrayList<>(readings);
  }

  /** How many readings are kept. */
  public synchronized int size() {
    return readings.size();
  }

  /**
   * The figures of a reading that hold memory: each {@link LedgerSnapshot.Kind#RESIDENT} part and
   * the {@link LedgerReader#UNEXPLAINED} remainder (when RSS is known), in display order. These add
   * up to the resident set, so growth among them says where new resident memory went; the detail
   * and accounting parts, and RSS itself, are left out.
   */
  public static Map<String, Long> residentFigures(LedgerSnapshot s) {
    Map<String, Long> out = new LinkedHashMap<>();
    for (String p : s.partsOf(LedgerSnapshot.Kind.RESIDENT)) {
      out.put(p, s.get(p));
    }
    if (s.rss() >= 0) {
      out.put(LedgerReader.UNEXPLAINED, s.unexplained());
    }
    return out;
  }

  @Override
  public synchronized String toString() {
    return "LedgerHistory("
        + readings.size()
        + " of at most "
        + maxReadings
        + " readings, "
        + maxAgeMillis
        + " ms)";
  }
}
