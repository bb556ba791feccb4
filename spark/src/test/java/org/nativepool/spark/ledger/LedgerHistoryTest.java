package org.nativepool.spark.ledger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.ledger.LedgerSnapshot.Kind;

/** {@link LedgerHistory}: its bounds and its look-ups, on made-up readings; no library needed. */
class LedgerHistoryTest {
  private static final long MIB = 1L << 20;

  /** A reading at {@code time} with {@code direct} bytes of direct buffers. */
  private static LedgerSnapshot reading(long time, long direct) {
    Map<String, Long> values = new LinkedHashMap<>();
    values.put(LedgerReader.JVM_HEAP_COMMITTED, 100 * MIB);
    values.put(LedgerReader.JVM_DIRECT, direct);
    values.put(LedgerReader.JVM_HEAP_USED, 40 * MIB);
    values.put(LedgerReader.NATIVE_RESERVED, 8 * MIB);
    Map<String, Kind> kinds =
        Map.of(
            LedgerReader.JVM_HEAP_COMMITTED, Kind.RESIDENT,
            LedgerReader.JVM_DIRECT, Kind.RESIDENT,
            LedgerReader.JVM_HEAP_USED, Kind.DETAIL,
            LedgerReader.NATIVE_RESERVED, Kind.ACCOUNTING);
    return new LedgerSnapshot(time, 100 * MIB + direct + 5 * MIB, values, kinds);
  }

  @Test
  void itKeepsAtMostTheCountBound() {
    LedgerHistory h = new LedgerHistory(3, 60_000);
    for (long t = 1; t <= 5; t++) {
      h.add(reading(t, t));
    }
    assertEquals(3, h.size());
    assertEquals(List.of(3L, 4L, 5L), h.all().stream().map(LedgerSnapshot::timeMillis).toList());
    assertEquals(5, h.latest().timeMillis());
  }

  @Test
  void itDropsReadingsOlderThanTheAgeBoundBehindTheNewest() {
    LedgerHistory h = new LedgerHistory(100, 1_000);
    h.add(reading(10_000, 0));
    h.add(reading(10_500, 0));
    h.add(reading(11_000, 0)); // 10_000 is exactly 1 s older: kept
    assertEquals(3, h.size());
    h.add(reading(11_200, 0));
    assertEquals(
        List.of(10_500L, 11_000L, 11_200L),
        h.all().stream().map(LedgerSnapshot::timeMillis).toList());
  }

  @Test
  void lastBeforeAndBetweenFindTheReadingsAroundAMoment() {
    LedgerHistory h = new LedgerHistory();
    assertNull(h.latest());
    assertNull(h.lastBefore(1_000));
    LedgerSnapshot a = reading(1_000, 0);
    LedgerSnapshot b = reading(1_250, 16 * MIB);
    LedgerSnapshot c = reading(1_500, 40 * MIB);
    h.add(a);
    h.add(b);
    h.add(c);
    assertSame(a, h.lastBefore(1_250), "strictly before");
    assertSame(b, h.lastBefore(1_251));
    assertNull(h.lastBefore(1_000));
    assertSame(
        a, h.lastBefore(1_600, s -> s.get(LedgerReader.JVM_DIRECT) == 0), "the newest taken");
    assertNull(h.lastBefore(1_600, s -> false));
    assertEquals(List.of(b, c), h.between(1_250, 1_500), "both ends included");
    assertEquals(List.of(), h.between(1_600, Long.MAX_VALUE));
  }

  /** The figures that hold memory: resident parts and the unexplained remainder, nothing else. */
  @Test
  void residentFiguresAreTheResidentPartsAndTheUnexplainedRemainder() {
    Map<String, Long> f = LedgerHistory.residentFigures(reading(1, 32 * MIB));
    assertEquals(
        Map.of(
            LedgerReader.JVM_HEAP_COMMITTED, 100 * MIB,
            LedgerReader.JVM_DIRECT, 32 * MIB,
            LedgerReader.UNEXPLAINED, 5 * MIB),
        f);
  }

  @Test
  void boundsOutOfRangeAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> new LedgerHistory(0, 1));
    assertThrows(IllegalArgumentException.class, () -> new LedgerHistory(1, -1));
  }
}
