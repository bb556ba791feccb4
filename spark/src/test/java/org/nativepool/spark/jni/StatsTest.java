package org.nativepool.spark.jni;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.executor.ExecutorGauges;

/** The stats snapshots over their enums and the plugin's gauge tables; no native library needed. */
class StatsTest {

  private static long[] allPoolFigures() {
    return LongStream.rangeClosed(1, PoolStat.values().length).toArray();
  }

  private static long[] allProcessFigures() {
    return LongStream.rangeClosed(1, ProcessStat.values().length).toArray();
  }

  @Test
  void poolStatsReadsEachFigureAtItsEnumOrdinal() {
    PoolStats s = new PoolStats(allPoolFigures());
    for (PoolStat st : PoolStat.values()) {
      assertEquals(st.ordinal() + 1, s.get(st), st.name());
      assertEquals(st.ordinal() + 1, s.get(st.ordinal()), st.name());
    }
    assertEquals(1, s.reserved());
    assertEquals(2, s.held());
    assertEquals(12, s.lateReleases());
    assertEquals(13, s.spillReentries());
    assertArrayEquals(allPoolFigures(), s.toArray());
  }

  @Test
  void toStringNamesEveryFigureAfterItsConstantInCamelCase() {
    assertEquals(
        "PoolStats(reserved=1, held=2, slack=3, overcommit=4, peak=5, acquireCalls=6,"
            + " releaseCalls=7, shortGrants=8, spillRequests=9, spillBytesFreed=10,"
            + " spillerFailures=11, lateReleases=12, spillReentries=13)",
        new PoolStats(allPoolFigures()).toString());
    assertEquals(
        "ProcessStats(liveTasks=1, reserved=2, held=3, slack=4, overcommit=5, peak=6,"
            + " upstreamCalls=7, spillRequests=8, spillBytesFreed=9, lateReleases=10, leaks=11,"
            + " leakedBytes=12, goMemoryLimit=13, goBaseline=14, goMapped=15, goPeak=16,"
            + " goHeapReturns=17, goHeapReturnedBytes=18, vmHwm=19, cgroupPeak=20,"
            + " mallocMmapThreshold=21, mallocRetained=22, goHeapInUse=23, goHeapIdle=24,"
            + " goStacks=25, goGcMeta=26, goOther=27, leakedResident=28, spillReentries=29,"
            + " guardLimit=30, guardUnreclaimable=31, guardHeadroom=32, guardReserve=33,"
            + " guardBallast=34, guardEpisodes=35, guardSpilledBytes=36, guardReleasedBytes=37,"
            + " guardReactionMicros=38, guardWaits=39, guardAdmittedShort=40, guardWakes=41,"
            + " guardRefusedNow=42, guardOffHeapBallast=43,"
            + " guardOffHeapTakenBytes=44, guardOffHeapGatheredBytes=45)",
        new ProcessStats(allProcessFigures()).toString());
  }

  @Test
  void snapshotsAreEqualOnlyToTheSameTypeWithTheSameFigures() {
    assertEquals(new PoolStats(allPoolFigures()), new PoolStats(allPoolFigures()));
    assertEquals(
        new PoolStats(allPoolFigures()).hashCode(), new PoolStats(allPoolFigures()).hashCode());
    assertNotEquals(new PoolStats(allPoolFigures()), new ProcessStats(allProcessFigures()));
    long[] other = allPoolFigures();
    other[11] = 0;
    assertNotEquals(new PoolStats(allPoolFigures()), new PoolStats(other));
  }

  @Test
  void aShortArrayIsRejectedNamingTheNativeAndTheExpectedLength() {
    IllegalStateException e =
        assertThrows(IllegalStateException.class, () -> new PoolStats(new long[3]));
    assertEquals("nativepool: poolStats0 returned 3 values, expected 13", e.getMessage());
    e = assertThrows(IllegalStateException.class, () -> new ProcessStats(null));
    assertEquals(
        "nativepool: processStats0 returned null, expected " + ProcessStat.values().length,
        e.getMessage());
  }

  @Test
  void theSnapshotCopiesTheArrayItWasGiven() {
    long[] a = allPoolFigures();
    PoolStats s = new PoolStats(a);
    a[0] = 99;
    s.toArray()[1] = 99;
    assertEquals(1, s.reserved());
    assertEquals(2, s.held());
  }

  @Test
  void everyProcessFigureIsAGaugeNamedByItsConstantInEnumOrder() {
    List<String> names = new ArrayList<>();
    for (ProcessStat s : ProcessStat.values()) {
      names.add(s.gaugeName());
      assertEquals(s, ExecutorGauges.GAUGES.get(s.gaugeName()));
    }
    assertEquals(names, new ArrayList<>(ExecutorGauges.GAUGES.keySet()));
  }

  @Test
  void arrowGaugesAreTheArrowProcessFiguresThatHaveAName() {
    assertEquals(
        List.of("nativeAllocated", "arrowLiveAllocators", "rssBytes"),
        new ArrayList<>(ExecutorGauges.ARROW_GAUGES.keySet()));
    assertEquals(ArrowProcessStat.RSS, ExecutorGauges.ARROW_GAUGES.get("rssBytes"));
  }
}
