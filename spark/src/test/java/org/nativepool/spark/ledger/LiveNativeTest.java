package org.nativepool.spark.ledger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The live native owners' records, as {@code liveNative0} lays them out. */
class LiveNativeTest {
  @Test
  void ownersParseFromTheirRecordsAndBadCountsAreRefused() {
    assertEquals(
        List.of(new LiveNative.Owner("op", "", 64, 1)), LiveNative.parse("op\t\t64\t1\n"));
    assertThrows(IllegalArgumentException.class, () -> LiveNative.top(-1));
    assertEquals(List.of(), LiveNative.top(0));
  }
}
