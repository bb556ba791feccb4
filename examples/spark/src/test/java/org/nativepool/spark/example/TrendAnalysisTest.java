package org.nativepool.spark.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.LongUnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The soak's verdict ({@link TrendAnalysis}) on synthetic ledger series: flat and noisy-but-flat
 * series pass, a part whose floor steps up window after window fails, warm-up is not judged, a
 * transient peak does not count, and a series too short to judge is no pass.
 */
class TrendAnalysisTest {
  private static final long MIB = 1 << 20;
  private static final List<String> COLUMNS = List.of("t_ms", "rss", "native.allocated");

  /** One reading a second for {@code seconds}: rss and native.allocated from the two functions. */
  private static List<long[]> series(long seconds, LongUnaryOperator rss, LongUnaryOperator nat) {
    List<long[]> rows = new ArrayList<>();
    for (long t = 0; t <= seconds * 1000; t += 1000) {
      rows.add(new long[] {t, rss.applyAsLong(t), nat.applyAsLong(t)});
    }
    return rows;
  }

  @Test
  void aFlatSeriesPasses() {
    TrendAnalysis.Result r =
        TrendAnalysis.analyze(
            COLUMNS, series(300, t -> 1000 * MIB, t -> 0), 60_000, 30_000, MIB);
    assertNull(r.problem());
    assertEquals(8, r.windows());
    assertTrue(r.passed(), r::table);
    assertEquals(0, r.part("rss").rises());
    assertEquals(0, r.part("rss").rise());
  }

  @Test
  void noiseWithinTheToleranceAndTransientPeaksArePassed() {
    Random rnd = new Random(7);
    // RSS wanders by up to 0.9 MiB, and every 10 s a task holds 50 MiB for a second: the window
    // floors do not see the tasks, and the wandering is within the 1 MiB tolerance.
    TrendAnalysis.Result r =
        TrendAnalysis.analyze(
            COLUMNS,
            series(
                600,
                t -> 1000 * MIB + (long) (rnd.nextDouble() * 0.9 * MIB) + (t % 10_000 == 0 ? 50 * MIB : 0),
                t -> t % 10_000 == 0 ? 8 * MIB : 0),
            60_000,
            30_000,
            MIB);
    assertTrue(r.passed(), r::table);
  }

  @Test
  void aPartWhoseFloorStepsUpEveryWindowFails() {
    // 512 KiB a second: 15 MiB a window of 30 s.
    TrendAnalysis.Result r =
        TrendAnalysis.analyze(
            COLUMNS, series(300, t -> 1000 * MIB + t / 1000 * 512 * 1024, t -> t / 1000 * 512 * 1024), 60_000, 30_000, MIB);
    assertFalse(r.passed());
    assertEquals(List.of("rss", "native.allocated"), r.failed());
    TrendAnalysis.Part p = r.part("native.allocated");
    assertEquals(7, p.rises());
    assertEquals(60 * 512 * 1024L, p.first());
    assertEquals(270 * 512 * 1024L, p.last());
    assertEquals(105 * MIB, p.rise());
    assertTrue(r.table().contains("| native.allocated |"), r::table);
    assertTrue(r.table().contains("**FAIL**"), r::table);
  }

  @Test
  void risingInHalfOfTheTransitionsOrFewerPasses() {
    // 8 windows, 7 transitions: floors that rise in 3 of them (a step of 10 MiB every 60 s,
    // i.e. every second window) do not make "more than half"; 4 of 7 would.
    TrendAnalysis.Result r =
        TrendAnalysis.analyze(
            COLUMNS,
            series(300, t -> 1000 * MIB + ((t - 60_000) / 60_000) * 10 * MIB, t -> 0),
            60_000,
            30_000,
            MIB);
    assertEquals(3, r.part("rss").rises(), r::table);
    assertTrue(r.passed(), r::table);
  }

  @Test
  void warmUpGrowthIsNotJudged() {
    // Everything the JVM and the pools grow in the first minute, then flat.
    TrendAnalysis.Result r =
        TrendAnalysis.analyze(
            COLUMNS, series(300, t -> 900 * MIB + Math.min(t, 60_000) * 2 * MIB / 1000, t -> 0), 60_000, 30_000, MIB);
    assertTrue(r.passed(), r::table);
  }

  @Test
  void aSeriesTooShortForThreeWindowsIsNoPass() {
    TrendAnalysis.Result r =
        TrendAnalysis.analyze(COLUMNS, series(100, t -> MIB, t -> 0), 60_000, 30_000, MIB);
    assertNotNull(r.problem());
    assertFalse(r.passed());
    assertTrue(r.problem().startsWith("too short to judge: 1 whole windows"), r.problem());
  }

  @Test
  void theDefaultsScaleWithTheDuration() {
    // The hour: 5 minutes warming the JVM, then 55 measured: a minute's warm-up and 10 windows of 5.
    assertEquals(300_000, SoakConfig.defaultJvmWarmupMs(3_600_000));
    assertEquals(60_000, SoakConfig.defaultWarmupMs(3_600_000));
    assertEquals(300_000, SoakConfig.defaultWindowMs(3_600_000), "5-minute windows for an hour");
    // The smoke: 1 minute warming the JVM, then 4 measured: 30 s of warm-up and 7 windows of 30 s.
    SoakConfig c = SoakConfig.parse(new String[] {"--duration", "5m"});
    assertEquals(300_000, c.durationMs);
    assertEquals(60_000, c.jvmWarmupMs);
    assertEquals(240_000, c.measuredMs());
    assertEquals(30_000, c.warmupMs);
    assertEquals(30_000, c.windowMs, "30 s windows for the 5-minute smoke");
    assertEquals(7, (c.measuredMs() - c.warmupMs) / c.windowMs);
  }

  @Test
  void aLedgerCsvIsReadByItsHeader(@TempDir Path dir) throws Exception {
    StringBuilder csv = new StringBuilder("t_ms,rss,jvm.heap.resident,other,unexplained,acct:native.reserved\n");
    for (long t = 0; t <= 200_000; t += 1000) {
      long leak = t / 1000 * 256 * 1024;
      csv.append(t).append(',').append(1000 * MIB + leak).append(',').append(512 * MIB).append(",0,")
          .append(-3 * MIB + leak).append(",0\n");
    }
    Path p = dir.resolve("ledger.csv");
    Files.writeString(p, csv, StandardCharsets.UTF_8);
    TrendAnalysis.Result r = TrendAnalysis.analyzeCsv(p, 20_000, 20_000, MIB);
    assertEquals(9, r.windows());
    assertEquals(List.of("rss", "unexplained"), r.failed(), r::table);
    assertEquals(-3 * MIB + 20 * 256 * 1024, r.part("unexplained").first());
  }
}
