package org.nativepool.spark.ledger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * When {@link HeapResidency} walks the heap's page tables and when it reuses its last reading, on a
 * made-up heap and clock: walks are counted, no time is measured; no library needed.
 */
class HeapResidencyTest {
  private static final long MIB = 1L << 20;
  private static final long GIB = 1L << 30;
  private static final long MILLI = 1_000_000L;

  /**
   * A clock the test moves, and a heap whose walk costs 1 ms on it, finds {@link #rss} and is
   * counted in {@link #walks}.
   */
  private static final class FakeHeap {
    long now = 1;
    long rss;
    int walks;

    HeapResidency residency() {
      return new HeapResidency(
          (max, committed) -> {
            walks++;
            now += MILLI;
            return rss;
          },
          () -> now);
    }
  }

  @Test
  void aHeapAllResidentIsWalkedOnceAMinuteWhileItsCommittedSizeStays() {
    FakeHeap h = new FakeHeap();
    h.rss = GIB;
    HeapResidency r = h.residency();
    for (int s = 0; s < 59; s++) { // one reading a second, as the reporter polls
      assertEquals(GIB, r.residentNow(GIB, GIB));
      h.now += 1000 * MILLI;
    }
    assertEquals(1, h.walks, "steady: the first walk serves the minute");
    h.now += 2000 * MILLI;
    r.residentNow(GIB, GIB);
    assertEquals(2, h.walks, "walked again once the reading is a minute old");
  }

  @Test
  void aHeapWhoseCommittedSizeChangedIsWalkedAgain() {
    FakeHeap h = new FakeHeap();
    h.rss = GIB;
    HeapResidency r = h.residency();
    r.residentNow(2 * GIB, GIB);
    h.now += 1000 * MILLI;
    h.rss = GIB / 2;
    assertEquals(GIB / 2, r.residentNow(2 * GIB, GIB / 2), "uncommitted: walked");
    assertEquals(2, h.walks);
  }

  @Test
  void aHeapPartlyResidentIsWalkedAgainAfterFiftyTimesTheWalksCost() {
    FakeHeap h = new FakeHeap();
    h.rss = GIB / 2;
    HeapResidency r = h.residency();
    r.residentNow(GIB, GIB);
    h.now += 10 * MILLI; // within 50 × 1 ms
    h.rss = GIB;
    assertEquals(GIB / 2, r.residentNow(GIB, GIB), "reused");
    assertEquals(1, h.walks);
    h.now += 50 * MILLI;
    assertEquals(GIB, r.residentNow(GIB, GIB), "walked");
    assertEquals(2, h.walks);
  }

  @Test
  void steadyAllowsAHundredAndTwentyEighthUntouchedAndNoChangeOfCommittedSize() {
    assertTrue(HeapResidency.steady(GIB, GIB, GIB));
    assertTrue(HeapResidency.steady(GIB - 8 * MIB, GIB, GIB));
    assertFalse(HeapResidency.steady(GIB - 8 * MIB - 1, GIB, GIB));
    assertFalse(HeapResidency.steady(GIB, GIB, GIB + MIB), "committed grew");
    assertFalse(HeapResidency.steady(-1, GIB, GIB), "the walk found no heap");
    assertTrue(HeapResidency.steady(GIB + 8 * MIB, GIB, GIB));
    assertFalse(HeapResidency.steady(GIB + 8 * MIB + 1, GIB, GIB), "regions not yet unmapped");
  }

  @Test
  void aHeapThatShrankIsWalkedAgainEvenWithinFiftyTimesTheWalksCost() {
    FakeHeap h = new FakeHeap();
    h.rss = GIB;
    HeapResidency r = h.residency();
    r.residentNow(2 * GIB, GIB);
    h.now += 10 * MILLI; // within 50 × 1 ms
    h.rss = GIB / 2;
    assertEquals(GIB / 2, r.residentNow(2 * GIB, GIB / 2), "pages given back: walked");
    h.now += 10 * MILLI;
    h.rss = GIB / 2 + MIB;
    assertEquals(GIB / 2, r.residentNow(2 * GIB, GIB / 2 + MIB), "grown: the reading serves");
    assertEquals(2, h.walks);
  }

  @Test
  void aHeapStillBeingGivenBackIsWalkedAgainEvenThoughItsCommittedSizeStaysPut() {
    // G1 shrinks: committed falls to 1 GiB at once, the regions above are unmapped afterwards.
    FakeHeap h = new FakeHeap();
    h.rss = GIB + GIB / 2;
    HeapResidency r = h.residency();
    assertEquals(GIB + GIB / 2, r.residentNow(2 * GIB, GIB));
    h.now += 10 * MILLI; // within 50 × the walk's cost
    h.rss = GIB;
    assertEquals(GIB, r.residentNow(2 * GIB, GIB), "the unmapped regions left the reading");
    assertEquals(2, h.walks);
  }
}
