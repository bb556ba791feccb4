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
}
