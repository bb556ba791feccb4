package org.nativepool.spark.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.ExecutorSampleEvent;

/**
 * Which samples reach the event log, and so the Native Memory page: the timer's one a minute, and
 * beyond it the samples of an executor's start, task ends and stage ends, rate-limited. No Spark
 * needed.
 */
class SampleEventsTest {
  private static final long T0 = 1_700_000_000_000L;
  private static final long MINUTE = 60_000;

  private final List<SparkListenerEvent> posted = new ArrayList<>();
  private final SampleEvents events = new SampleEvents(MINUTE, posted::add);

  private static ExecutorSample sample(long t, long seq, boolean boundary) {
    return new ExecutorSample("1", t, seq, Map.of("reserved", 1L), 0, 0, null, boundary);
  }

  private List<Long> postedTimes() {
    return posted.stream().map(e -> ((ExecutorSampleEvent) e).getTimeMillis() - T0).toList();
  }

  /**
   * A 7-second job on an executor that started with it: the start's sample, a task end's and the
   * stage end's latest all reach the page, while the timer alone would post one point.
   */
  @Test
  void aJobShorterThanOneSamplingPeriodGetsPointsAtItsStartTaskEndsAndStageEnd() {
    ExecutorSample first = sample(T0, 0, true);
    ExecutorRegistry.View e = new ExecutorRegistry.View("1", first, 0);
    events.onSample(e, first); // the executor's start
    events.onSample(e, sample(T0 + 500, 1, true)); // a task end within a second: not yet
    ExecutorSample taskEnd = sample(T0 + 4_000, 2, true);
    e.latest = taskEnd;
    events.onSample(e, taskEnd);
    events.onSample(e, sample(T0 + 6_000, 3, false)); // the timer's: not due
    e.latest = sample(T0 + 7_000, 4, false);
    events.stageCompleted(List.of(e)); // the stage's end: its latest sample
    events.stageCompleted(List.of(e)); // the same sample again: once
    assertEquals(List.of(0L, 4_000L, 7_000L), postedTimes());
  }

  /**
   * Boundaries post at most {@value SampleEvents#BOUNDARY_BUDGET} events per timer period beyond
   * the timer's, so that a stream of short tasks does not fill the event log.
   */
  @Test
  void boundariesAreRateLimitedPerTimerPeriod() {
    ExecutorSample first = sample(T0, 0, false);
    ExecutorRegistry.View e = new ExecutorRegistry.View("1", first, 0);
    events.onSample(e, first);
    for (int i = 1; i < 50; i++) {
      events.onSample(e, sample(T0 + i * 1_000L, i, true)); // a task end every second
    }
    assertEquals(1 + SampleEvents.BOUNDARY_BUDGET, posted.size(), postedTimes()::toString);
    events.onSample(e, sample(T0 + MINUTE, 60, false)); // a minute after the start: not due
    assertEquals(1 + SampleEvents.BOUNDARY_BUDGET, posted.size(), postedTimes()::toString);
    events.onSample(e, sample(T0 + 5_000 + MINUTE, 65, false)); // a minute after the last event
    assertEquals(2 + SampleEvents.BOUNDARY_BUDGET, posted.size(), postedTimes()::toString);
  }

  /** With {@code spark.nativepool.eventLog.sampleEvery=0} no sample is posted, boundary or not. */
  @Test
  void noSampleEventsWhenTheEventLogTakesNone() {
    SampleEvents none = new SampleEvents(0, posted::add);
    ExecutorSample first = sample(T0, 0, true);
    ExecutorRegistry.View e = new ExecutorRegistry.View("1", first, 0);
    none.onSample(e, first);
    none.stageCompleted(List.of(e));
    assertEquals(List.of(), posted);
  }
}
