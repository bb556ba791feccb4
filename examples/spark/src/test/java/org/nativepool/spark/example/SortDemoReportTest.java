package org.nativepool.spark.example;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The demo report's words for its samples, which must say what the run did. */
class SortDemoReportTest {

  @Test
  void withSamplingOnTheReportNamesTheSamplePeriod() {
    assertEquals(
        new SortDemo.SampleWords(
            "after every native call and at every 50 ms sample",
            "sampled every 50 ms",
            "the worst 50 ms sample"),
        SortDemo.SampleWords.of(true));
  }

  @Test
  void withSamplingOffTheReportSaysOnlyTheRunsStartAndEndWereSampled() {
    assertEquals(
        new SortDemo.SampleWords(
            "after every native call, and at the run's start and end samples (--sampling off)",
            "sampled at the run's start and end only (--sampling off)",
            "the worse of the run's start and end samples"),
        SortDemo.SampleWords.of(false));
  }

  private static final long MIB = 1L << 20;

  /**
   * The default run's excess over reserved + baseline, a few MiB that the Go runtime's growth and
   * the free memory glibc keeps account for, is within the noise the report measured: no alarm.
   */
  @Test
  void anExcessWithinTheMeasuredNoiseIsNoAlarm() {
    SortDemo.Noise noise = new SortDemo.Noise(2 * MIB, 6 * MIB, MIB);
    String v = SortDemo.truePeakVerdict(4 * MIB, noise, 0);
    assertEquals(
        "4.0 MiB over reserved + baseline, within noise (9.0 MiB: the Go runtime's growth 2.0 MiB,"
            + " free memory glibc kept 6.0 MiB more, RSS's own spread 1.0 MiB)",
        v);
    assertEquals("within reserved + baseline", SortDemo.truePeakVerdict(-MIB, noise, 0));
  }

  /** A planted excess (memory nobody's books hold) beyond the noise still alarms, in red. */
  @Test
  void anExcessBeyondTheNoiseAlarms() {
    SortDemo.Noise noise = new SortDemo.Noise(2 * MIB, 6 * MIB, MIB);
    String v = SortDemo.truePeakVerdict(73 * MIB, noise, 64 * MIB);
    assertEquals(
        "EXCEEDS reserved + baseline by 73.0 MiB, 64.0 MiB beyond the measured noise of 9.0 MiB:"
            + " the Go runtime's growth 2.0 MiB, free memory glibc kept 6.0 MiB more, RSS's own"
            + " spread 1.0 MiB (JVM untracked ≥ 64.0 MiB)",
        SortDemo.plain(v));
    assertEquals("\u001b[31m" + SortDemo.plain(v) + "\u001b[0m", v, "red on a terminal");
  }

  /** Colour codes reach a terminal only; the report file and a pipe get plain text. */
  @Test
  void colourOnlyOnATerminal() {
    String t = "a " + SortDemo.red("b") + " c";
    assertEquals("a b c", SortDemo.forOutput(t, false));
    assertEquals(t, SortDemo.forOutput(t, true));
  }
}
