package org.nativepool.spark.driver;

import java.util.Collection;
import java.util.function.Consumer;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.ExecutorSampleEvent;

/**
 * Which of the executors' samples the driver posts to the event log as {@link
 * ExecutorSampleEvent}s, the points of the Native Memory page's charts (live, and in the History
 * Server, which replays the log). Per executor:
 *
 * <ul>
 *   <li><b>the timer</b>: its first sample, then one whenever none was posted for {@link
 *       NativePoolConf#EVENT_LOG_SAMPLE_EVERY} heartbeat intervals (a minute by default), which
 *       bounds the event log of a long application;
 *   <li><b>boundaries</b>: the samples it sends at its start and at task ends ({@link
 *       ExecutorSample#boundary()}), and its latest sample when a stage completes, so that a job
 *       shorter than one sampling period still has a chart with points at its start and its end.
 *       Rate-limited: at least {@value #MIN_GAP_MILLIS} ms after the executor's previous event,
 *       and at most {@value #BOUNDARY_BUDGET} such events per timer period, so that a streaming
 *       job's micro-batches (a stage every second) post at most {@value #BOUNDARY_BUDGET} + 1
 *       samples per executor per period instead of one.
 * </ul>
 *
 * <p>With {@link NativePoolConf#EVENT_LOG_SAMPLE_EVERY} 0 it posts none. Safe for concurrent use:
 * samples arrive on the plugin's RPC thread, stage ends on the listener bus; each executor's state
 * is guarded by its {@link ExecutorRegistry.View}.
 */
final class SampleEvents {
  /** The least time between two events of one executor that a boundary may post. */
  static final long MIN_GAP_MILLIS = 1000;

  /** The most boundary events of one executor per timer period. */
  static final int BOUNDARY_BUDGET = 5;

  private final long periodMillis;
  private final Consumer<SparkListenerEvent> post;

  /**
   * @param periodMillis the timer's period: {@link NativePoolConf#EVENT_LOG_SAMPLE_EVERY} × the
   *     heartbeat interval; 0 = post nothing
   * @param post posts an event to the listener bus
   */
  SampleEvents(long periodMillis, Consumer<SparkListenerEvent> post) {
    this.periodMillis = periodMillis;
    this.post = post;
  }

  /** An executor's sample arrived: posted if the timer is due, or if it is a boundary's and may. */
  void onSample(ExecutorRegistry.View e, ExecutorSample s) {
    if (periodMillis <= 0) {
      return;
    }
    synchronized (e) {
      boolean timer =
          e.sampleEvents == 0 || s.timeMillis() - e.lastSampleEventMillis >= periodMillis;
      if (timer) {
        postLocked(e, s, false);
      } else if (s.boundary()) {
        boundaryLocked(e, s);
      }
    }
  }

  /**
   * A stage completed: each live executor's latest sample is posted as a boundary's, unless it was
   * posted already or the rate forbids it.
   */
  void stageCompleted(Collection<ExecutorRegistry.View> live) {
    if (periodMillis <= 0) {
      return;
    }
    for (ExecutorRegistry.View e : live) {
      synchronized (e) {
        ExecutorSample s = e.latest;
        if (s != null && s.sequence() != e.lastPostedSequence) {
          boundaryLocked(e, s);
        }
      }
    }
  }

  /** Posts {@code s} as a boundary's if the gap and the budget allow. Holds {@code e}'s lock. */
  private void boundaryLocked(ExecutorRegistry.View e, ExecutorSample s) {
    if (s.sequence() == e.lastPostedSequence
        || s.timeMillis() - e.lastSampleEventMillis < MIN_GAP_MILLIS) {
      return;
    }
    if (s.timeMillis() - e.boundaryWindowStartMillis >= periodMillis) {
      e.boundaryWindowStartMillis = s.timeMillis();
      e.boundaryEvents = 0;
    }
    if (e.boundaryEvents >= BOUNDARY_BUDGET) {
      return;
    }
    e.boundaryEvents++;
    postLocked(e, s, true);
  }

  private void postLocked(ExecutorRegistry.View e, ExecutorSample s, boolean boundary) {
    e.sampleEvents++;
    e.lastSampleEventMillis = s.timeMillis();
    e.lastPostedSequence = s.sequence();
    post.accept(new ExecutorSampleEvent(s.executorId(), s.timeMillis(), s.sequence(), s.figures()));
  }
}
