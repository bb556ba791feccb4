package org.nativepool.spark.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The soak's sink check ({@link SoakCheck}) against a reference aggregation in Java: the exact
 * counts and sums it expects, right micro-batches pass, and each kind of wrong result is caught.
 */
class SoakCheckTest {
  private static final long KEYS = 100;
  private static final int PARTS = 2;

  /** A reference of the aggregation: every key's count and sum, and what a micro-batch returns. */
  private static final class Reference {
    final Map<Long, long[]> state = new HashMap<>();
    long next;

    /** Adds values [next, next + rows) and returns the groups and the partitions' outcomes. */
    List<AggOutcome> batch(long batchId, long rows, List<SoakCheck.Group> groups) {
      long[][] stats = new long[PARTS][AggStat.values().length];
      for (long[] s : stats) {
        s[AggStat.MIN_VALUE.ordinal()] = Long.MAX_VALUE;
        s[AggStat.MAX_VALUE.ordinal()] = Long.MIN_VALUE;
      }
      Map<Long, Boolean> touched = new HashMap<>();
      for (long v = next; v < next + rows; v++) {
        long k = v % KEYS;
        long[] s = stats[(int) (k % PARTS)];
        s[AggStat.ROWS_IN.ordinal()]++;
        s[AggStat.MIN_VALUE.ordinal()] = Math.min(s[AggStat.MIN_VALUE.ordinal()], v);
        s[AggStat.MAX_VALUE.ordinal()] = Math.max(s[AggStat.MAX_VALUE.ordinal()], v);
        s[AggStat.SUM_IN.ordinal()] += v;
        long[] e = state.computeIfAbsent(k, x -> new long[2]);
        e[0]++;
        e[1] += v;
        touched.put(k, true);
      }
      next += rows;
      for (long k : touched.keySet()) {
        long[] e = state.get(k);
        groups.add(new SoakCheck.Group(k, e[0], e[1]));
        stats[(int) (k % PARTS)][AggStat.ROWS_OUT.ordinal()]++;
      }
      for (Map.Entry<Long, long[]> e : state.entrySet()) {
        long[] s = stats[(int) (e.getKey() % PARTS)];
        s[AggStat.STATE_GROUPS.ordinal()]++;
        s[AggStat.STATE_COUNT.ordinal()] += e.getValue()[0];
        s[AggStat.STATE_SUM.ordinal()] += e.getValue()[1];
      }
      List<AggOutcome> out = new ArrayList<>();
      for (int p = 0; p < PARTS; p++) {
        out.add(new AggOutcome(batchId, p, 100 + p, stats[p]));
      }
      return out;
    }
  }

  @Test
  void theExpectedCountsAndSumsAreThoseOfTheRowsBelowN() {
    // Values 0..9 with 4 keys: key 1 has 1, 5, 9.
    assertEquals(3, SoakCheck.expectedCount(1, 10, 4));
    assertEquals(15, SoakCheck.expectedSum(1, 10, 4));
    assertEquals(2, SoakCheck.expectedCount(3, 10, 4)); // 3, 7
    assertEquals(10, SoakCheck.expectedSum(3, 10, 4));
    assertEquals(0, SoakCheck.expectedCount(12, 10, 100));
    assertEquals(45, SoakCheck.rangeSum(0, 10));
    assertEquals(5 + 6 + 7, SoakCheck.rangeSum(5, 8));
  }

  @Test
  void rightMicroBatchesPassWhateverTheirSize() {
    Reference ref = new Reference();
    SoakCheck check = new SoakCheck(KEYS, PARTS);
    long[] sizes = {0, 7, 250, 99, 100, 1, 333};
    for (int b = 0; b < sizes.length; b++) {
      List<SoakCheck.Group> groups = new ArrayList<>();
      List<AggOutcome> outcomes = ref.batch(b, sizes[b], groups);
      assertEquals(List.of(), check.check(b, groups, outcomes));
    }
    assertEquals(790, check.rows());
    assertEquals(7, check.batches());
    assertEquals(0, check.errors());
  }

  @Test
  void eachKindOfWrongResultIsCaught() {
    Reference ref = new Reference();
    SoakCheck check = new SoakCheck(KEYS, PARTS);
    List<SoakCheck.Group> groups = new ArrayList<>();
    List<AggOutcome> outcomes = ref.batch(0, 150, groups);
    assertEquals(List.of(), check.check(0, groups, outcomes));

    // A group one row short.
    groups = new ArrayList<>();
    outcomes = ref.batch(1, 150, groups);
    SoakCheck.Group g = groups.remove(0);
    groups.add(new SoakCheck.Group(g.key(), g.count() - 1, g.sum()));
    List<String> p = check.check(1, groups, outcomes);
    assertEquals(1, p.size(), p::toString);
    assertTrue(p.get(0).startsWith("micro-batch 1: group Group[key=" + g.key()), p.get(0));

    // A partition that reports twice, and a state that lost a row.
    groups = new ArrayList<>();
    outcomes = ref.batch(2, 150, groups);
    outcomes.set(1, outcomes.get(0));
    p = check.check(2, groups, outcomes);
    assertTrue(p.stream().anyMatch(s -> s.contains("unexpected outcome of micro-batch 2 partition 0")), p::toString);
    assertTrue(p.stream().anyMatch(s -> s.contains("1 partitions reported, expected 2")), p::toString);

    // A gap in the source: the next micro-batch does not start where the last ended.
    Reference gap = new Reference();
    SoakCheck fresh = new SoakCheck(KEYS, PARTS);
    gap.next = 10;
    groups = new ArrayList<>();
    p = fresh.check(0, groups, gap.batch(0, 50, groups));
    assertTrue(p.get(0).startsWith("micro-batch 0: input is not the next range [0, 50)"), p::toString);

    assertEquals(2, check.errors());
    // The rows advance by the input the partitions reported: micro-batch 2's duplicate left out
    // partition 1's 75.
    assertEquals(375, check.rows());
  }
}
