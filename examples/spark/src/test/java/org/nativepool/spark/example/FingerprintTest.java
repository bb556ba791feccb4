package org.nativepool.spark.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class FingerprintTest {

  /**
   * The Java fingerprint is extsort.Fingerprint's arithmetic: the expected figures were printed by
   * the Go side for the same rows (Fingerprint.Add(1, 2), Add(-5, 7), Add(1<<62, -1); splitmix(0),
   * splitmix(12345)).
   */
  @Test
  void matchesTheGoSidesFiguresForTheSameRows() {
    Fingerprint f = new Fingerprint();
    f.add(1, 2);
    f.add(-5, 7);
    f.add(1L << 62, -1);
    assertEquals(
        "{Rows:3 KeySum:4611686018427387900 HashSum:306433989486601590 HashXor:"
            + Long.toUnsignedString(-8385961810560395136L)
            + "}",
        f.toString());
    assertEquals(-2152535657050944081L, Fingerprint.splitmix(0));
    assertEquals(2454886589211414944L, Fingerprint.splitmix(12345));
  }

  @Test
  void equalMultisetsInAnyOrderHaveEqualFingerprintsAndOnlyTheSortedOneIsInOrder() {
    Fingerprint sorted = new Fingerprint();
    Fingerprint shuffled = new Fingerprint();
    long[][] rows = {{-3, 1}, {2, 5}, {2, 9}, {7, 0}};
    for (long[] r : rows) {
      sorted.add(r[0], r[1]);
    }
    for (int i : new int[] {2, 0, 3, 1}) {
      shuffled.add(rows[i][0], rows[i][1]);
    }
    assertTrue(sorted.sameRows(shuffled));
    assertEquals(0, sorted.disorder());
    assertEquals(2, shuffled.disorder(), "(-3,1) after (2,9), and (2,5) after (7,0)");

    Fingerprint altered = new Fingerprint();
    altered.add(-3, 1);
    altered.add(2, 5);
    altered.add(2, 9);
    altered.add(7, 1); // one payload differs
    assertFalse(sorted.sameRows(altered));
  }
}
