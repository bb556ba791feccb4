package org.nativepool.spark.ledger;


import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The growth detector's rule on synthetic task-boundary readings (no Spark): a steady leak is
 * reported within a bounded number of tasks; warm-up, noise, garbage sawtooths and bounded growth
 * are not. The real-Spark pair (clean and leaky tasks) is in {@code LedgerGrowthSparkTest}.
 */
class GrowthDetectorTest {
  private static final long KIB = 1024;
  private static final long MIB = 1024 * KIB;

  /** Feeds {@code n} readings of one part, returns the sample numbers (1-based) that reported. */
  private static List<Long> run(GrowthDetector d, int n, java.util.function.IntToLongFunction part) {
    List<Long> at = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      if (!d.sample(Map.of("p", part.applyAsLong(i))).isEmpty()) {
        at.add(d.samples());
      }
    }
    return at;
  }

  @Test
  void aLeakOf256KiBPerTaskIsReportedWithinFiveWindows() {
    Random r = new Random(1);
    GrowthDetector d = new GrowthDetector(25, 4, 16 * MIB);
    // 256 KiB more per task, plus up to 8 MiB held by a task still running at the boundary.
    List<Long> at = run(d, 1000, i -> 200 * MIB + i * 256 * KIB + (r.nextInt(4) == 0 ? r.nextInt(8) * MIB : 0));
    assertFalse(at.isEmpty(), "never reported");
    assertEquals(125, at.get(0), "first report after 5 windows of 25 tasks: " + at);
    // Reported again only after another 16 MiB: every 64 tasks or so, never every window.
    for (int i = 1; i < at.size(); i++) {
      assertTrue(at.get(i) - at.get(i - 1) >= 50, "reports too close: " + at);
    }
  }

  @Test
  void warmUpThatLevelsOffIsNotReported() {
    Random r = new Random(2);
    GrowthDetector d = new GrowthDetector(25, 4, 16 * MIB);
    // 60 MiB in the first 80 tasks (classes, JIT, pools), then flat with noise.
    List<Long> at =
        run(d, 1000, i -> 100 * MIB + Math.min(i, 80) * 768 * KIB + r.nextInt(3 * (int) MIB));
    assertTrue(at.isEmpty(), "warm-up reported at " + at);
  }

  @Test
  void noiseSawtoothsAndSlowCreepUnderTheMinimumAreNotReported() {
    Random r = new Random(3);
    GrowthDetector d = new GrowthDetector(25, 4, 16 * MIB);
    assertTrue(run(d, 5000, i -> 50 * MIB + r.nextInt(40 * (int) MIB)).isEmpty(), "noise");
    d = new GrowthDetector(25, 4, 16 * MIB);
    assertTrue(run(d, 5000, i -> 50 * MIB + (i % 37) * 2 * MIB).isEmpty(), "sawtooth");
    d = new GrowthDetector(25, 4, 16 * MIB);
    // 4 KiB per task: 400 KiB per 100-task span, far under 16 MiB.
    assertTrue(run(d, 2000, i -> 50 * MIB + i * 4 * KIB).isEmpty(), "slow creep");
  }

  @Test
  void aLeakThatStopsIsReportedOnceAndThenLeftAlone() {
    GrowthDetector d = new GrowthDetector(10, 3, 8 * MIB);
    List<Long> at = run(d, 1000, i -> Math.min(i, 100) * MIB);
    assertEquals(List.of(40L, 50L, 60L, 70L, 80L, 90L, 100L), at.subList(0, Math.min(at.size(), 7)));
    assertTrue(at.get(at.size() - 1) <= 110, "reported after it stopped: " + at);
  }

  @Test
  void theJvmsOwnPartsNeedTwiceTheWindows() {
    GrowthDetector d = new GrowthDetector(25, 4, 16 * MIB, p -> p.startsWith("jvm."));
    long first = -1;
    long firstJvm = -1;
    for (int i = 0; i < 400; i++) {
      long v = i * 256 * KIB;
      for (GrowthDetector.Growth g : d.sample(Map.of("native.allocated", v, "jvm.native", v))) {
        if (g.part().equals("jvm.native") && firstJvm < 0) {
          firstJvm = d.samples();
          assertEquals(200, g.tasks());
        } else if (g.part().equals("native.allocated") && first < 0) {
          first = d.samples();
        }
      }
    }
    assertEquals(125, first);
    assertEquals(225, firstJvm, "eight rising windows for the JVM's own memory");
  }

  @Test
  void aReportSaysWhenTheGrowthBeganAndAWithdrawnOneComesBackAtTheNextReading() {
    GrowthDetector d = new GrowthDetector(1, 3, 16 << 20);
    List<GrowthDetector.Growth> found = List.of();
    long mib = 1 << 20;
    for (int i = 0; i < 4; i++) {
      found = d.sample(Map.of("p", (long) i * 10 * mib), 1_000L * (i + 1));
    }
    assertEquals(1, found.size());
    assertEquals(1_000L, found.get(0).sinceMillis(), "the first rising floor's reading");
    assertTrue(d.sample(Map.of("p", 40 * mib), 5_000).isEmpty(), "reported: needs 16 MiB more");
    d.withdraw("p");
    assertEquals(1, d.sample(Map.of("p", 50 * mib), 6_000).size(), "withdrawn: due again");
  }

  @Test
  void negativeReadingsAreIgnoredAndBadSettingsRefused() {
    GrowthDetector d = new GrowthDetector(1, 1, 1);
    assertTrue(d.sample(Map.of("p", -1L)).isEmpty());
    assertThrows(IllegalArgumentException.class, () -> new GrowthDetector(0, 4, 1));
    assertThrows(IllegalArgumentException.class, () -> new GrowthDetector(25, 0, 1));
    assertThrows(IllegalArgumentException.class, () -> new GrowthDetector(25, 4, 0));
  }
}
