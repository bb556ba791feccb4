package org.nativepool.spark.example;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The soak's sink check, micro-batch after micro-batch. The rate source numbers its rows 0, 1, 2,
 * … with no gap, and each micro-batch takes the next range, so after the micro-batch that ends at
 * row {@code n} the state of key {@code k} (the rows whose {@code value mod keys} is {@code k}) is
 * known exactly: {@link #expectedCount} rows summing to {@link #expectedSum}. For each micro-batch
 * it checks that:
 *
 * <ul>
 *   <li>every partition reported once, and together their input is the next range of values,
 *       {@code [n, n + rows)} (least, greatest, sum);
 *   <li>the groups handed back are the keys that range touched, each once, each with its exact
 *       count and sum over every micro-batch so far;
 *   <li>the partitions' new state versions hold, together, every row the source produced so far:
 *       {@code n + rows} rows, values summing to {@code (n + rows)(n + rows - 1) / 2}, in {@code
 *       min(n + rows, keys)} groups.
 * </ul>
 *
 * Not thread-safe: the sink calls it on the query's thread.
 */
final class SoakCheck {
  /** One group the aggregation handed back. */
  record Group(long key, long count, long sum) {}

  private final long keys;
  private final int partitions;
  private long rows;
  private long batches;
  private long errors;

  SoakCheck(long keys, int partitions) {
    if (keys <= 0 || partitions <= 0) {
      throw new IllegalArgumentException("soak: keys and partitions must be > 0");
    }
    this.keys = keys;
    this.partitions = partitions;
  }

  /** Rows of key {@code k} among the values {@code [0, n)}. */
  static long expectedCount(long k, long n, long keys) {
    return k >= n ? 0 : (n - 1 - k) / keys + 1;
  }

  /** The sum of the values {@code k, k + keys, …} below {@code n}. */
  static long expectedSum(long k, long n, long keys) {
    long c = expectedCount(k, n, keys);
    return c * k + keys * (c * (c - 1) / 2);
  }

  /** The sum of the values {@code [from, to)}. */
  static long rangeSum(long from, long to) {
    return (to - from) * (from + to - 1) / 2;
  }

  /**
   * Checks micro-batch {@code batchId}: its groups and its tasks' outcomes. Returns what is wrong
   * (empty when right); a micro-batch with problems counts as one error, and the rows so far still
   * advance by its input.
   */
  List<String> check(long batchId, List<Group> groups, List<AggOutcome> outcomes) {
    List<String> problems = new ArrayList<>();
    String at = "micro-batch " + batchId + ": ";
    Set<Integer> seen = new HashSet<>();
    long in = 0;
    long lo = Long.MAX_VALUE;
    long hi = Long.MIN_VALUE;
    long sumIn = 0;
    long out = 0;
    long stateCount = 0;
    long stateSum = 0;
    long stateGroups = 0;
    for (AggOutcome o : outcomes) {
      if (o.batchId() != batchId || !seen.add(o.partition())) {
        problems.add(at + "unexpected outcome of micro-batch " + o.batchId() + " partition " + o.partition());
        continue;
      }
      in += o.get(AggStat.ROWS_IN);
      lo = Math.min(lo, o.get(AggStat.MIN_VALUE));
      hi = Math.max(hi, o.get(AggStat.MAX_VALUE));
      sumIn += o.get(AggStat.SUM_IN);
      out += o.get(AggStat.ROWS_OUT);
      stateCount += o.get(AggStat.STATE_COUNT);
      stateSum += o.get(AggStat.STATE_SUM);
      stateGroups += o.get(AggStat.STATE_GROUPS);
    }
    if (seen.size() != partitions) {
      problems.add(at + seen.size() + " partitions reported, expected " + partitions);
    }
    long n = rows;
    long end = n + in;
    if (in > 0 && (lo != n || hi != end - 1 || sumIn != rangeSum(n, end))) {
      problems.add(
          at + "input is not the next range [" + n + ", " + end + "): least " + lo + ", greatest "
              + hi + ", sum " + sumIn + " (expected " + rangeSum(n, end) + ")");
    }
    long touched = Math.min(in, keys);
    if (groups.size() != touched || out != touched) {
      problems.add(
          at + groups.size() + " groups handed back (the tasks counted " + out + "), expected "
              + touched);
    }
    Set<Long> keysSeen = new HashSet<>();
    int wrong = 0;
    for (Group g : groups) {
      boolean inRange = g.key() >= 0 && g.key() < keys && touchedBy(g.key(), n, end);
      if (!keysSeen.add(g.key())
          || !inRange
          || g.count() != expectedCount(g.key(), end, keys)
          || g.sum() != expectedSum(g.key(), end, keys)) {
        if (wrong++ < 3) {
          problems.add(
              at + "group " + g + ", expected count " + expectedCount(g.key(), end, keys) + " and sum "
                  + expectedSum(g.key(), end, keys) + (inRange ? "" : " (not touched by this micro-batch)"));
        }
      }
    }
    if (wrong > 3) {
      problems.add(at + (wrong - 3) + " more wrong groups");
    }
    if (stateCount != end || stateSum != rangeSum(0, end) || stateGroups != Math.min(end, keys)) {
      problems.add(
          at + "the state versions hold " + stateCount + " rows summing to " + stateSum + " in "
              + stateGroups + " groups, expected " + end + ", " + rangeSum(0, end) + ", "
              + Math.min(end, keys));
    }
    rows = end;
    batches++;
    if (!problems.isEmpty()) {
      errors++;
    }
    return problems;
  }

  /** Whether a value in {@code [from, to)} has key {@code k}. */
  private boolean touchedBy(long k, long from, long to) {
    if (to - from >= keys) {
      return true;
    }
    long first = from + Math.floorMod(k - from, keys);
    return first < to;
  }

  /** Rows the source produced so far (through the last micro-batch checked). */
  long rows() {
    return rows;
  }

  /** Micro-batches checked. */
  long batches() {
    return batches;
  }

  /** Micro-batches with problems. */
  long errors() {
    return errors;
  }
}
