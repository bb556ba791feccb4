package org.nativepool.spark.driver;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.StageInfo;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.StagePeaksEvent;
import org.nativepool.spark.ledger.ExecutorLedger;

/**
 * The stages' native peaks: the highest reserved and held bytes per executor and in total, kept per
 * stage from the samples' interval peaks (an interval's peak includes the peak of every task pool
 * that closed in it), with the ledger's part peaks and the consumers' peaks, from the stage's
 * submission until two heartbeat intervals after its end, so that the samples covering its last
 * moments count; then posted as a {@link StagePeaksEvent}. The {@code stagePeak*} gauges, per
 * executor ({@link ExecutorRegistry}) and {@code total.stagePeakReserved} and {@code
 * total.stagePeakHeld}, show the highest figures since the last stage completed: they start again
 * from 0 whenever one does.
 *
 * <p>Safe for concurrent use: its state is guarded by its own lock, which it holds while it writes
 * the executors' {@code stagePeak*} figures; samples arrive on Spark's RPC threads, stage events on
 * the listener bus's thread.
 */
final class StagePeakTracker {
  /** Gauge name suffix: the highest reserved bytes since the last stage completed. */
  static final String STAGE_PEAK_RESERVED = "stagePeakReserved";

  /** Gauge name suffix: the highest held bytes since the last stage completed. */
  static final String STAGE_PEAK_HELD = "stagePeakHeld";

  private final long heartbeatMillis;
  private final Consumer<SparkListenerEvent> post;

  /** Running stages ("id.attempt") → their peaks. Guarded by this. */
  private final Map<String, Stage> stages = new HashMap<>();

  /**
   * Completed stages whose peaks event waits for the samples covering their last moments (see
   * {@link #postDue}), oldest first. Guarded by this.
   */
  private final List<Stage> completing = new ArrayList<>();

  /** The {@code total.stagePeak*} figures. Written under this; read by gauges without it. */
  private volatile long totalStagePeakReserved;

  private volatile long totalStagePeakHeld;

  /**
   * @param heartbeatMillis the executors' heartbeat interval: a sample covers at most one
   * @param post posts an event to Spark's listener bus
   */
  StagePeakTracker(long heartbeatMillis, Consumer<SparkListenerEvent> post) {
    this.heartbeatMillis = heartbeatMillis;
    this.post = post;
  }

  /** Registers the {@code total.stagePeak*} gauges. */
  void registerTotals(MetricRegistry registry) {
    registry.register("total." + STAGE_PEAK_RESERVED, (Gauge<Long>) () -> totalStagePeakReserved);
    registry.register("total." + STAGE_PEAK_HELD, (Gauge<Long>) () -> totalStagePeakHeld);
  }

  /**
   * Adds sample {@code s} of executor {@code e} to the stagePeak figures and to the peaks of every
   * running stage, and of every completed one whose end its interval overlaps; {@code live} are
   * the live executors, whose latest interval peaks make the totals.
   */
  synchronized void add(
      ExecutorRegistry.View e, ExecutorSample s, Collection<ExecutorRegistry.View> live) {
    long peakReserved = s.figure(ExecutorSample.INTERVAL_PEAK_RESERVED, 0);
    long peakHeld = s.figure(ExecutorSample.INTERVAL_PEAK_HELD, 0);
    e.stagePeakReserved = Math.max(e.stagePeakReserved, peakReserved);
    e.stagePeakHeld = Math.max(e.stagePeakHeld, peakHeld);
    long sumReserved = 0;
    long sumHeld = 0;
    for (ExecutorRegistry.View x : live) {
      sumReserved += Math.max(0, x.latest.figure(ExecutorSample.INTERVAL_PEAK_RESERVED, 0));
      sumHeld += Math.max(0, x.latest.figure(ExecutorSample.INTERVAL_PEAK_HELD, 0));
    }
    totalStagePeakReserved = Math.max(totalStagePeakReserved, sumReserved);
    totalStagePeakHeld = Math.max(totalStagePeakHeld, sumHeld);
    for (Stage p : stages.values()) {
      p.add(s.executorId(), peakReserved, peakHeld, sumReserved, sumHeld);
      p.addLedger(s);
    }
    // A sample's interval is at most one heartbeat long: it overlaps a completed stage if it
    // began before the stage ended.
    long begun = s.timeMillis() - heartbeatMillis;
    for (Stage p : completing) {
      if (begun <= p.completedMillis) {
        p.add(s.executorId(), peakReserved, peakHeld, sumReserved, sumHeld);
        p.addLedger(s);
      }
    }
  }

  /** A stage started: its peaks start from nothing. */
  synchronized void stageSubmitted(StageInfo info) {
    stages.put(key(info), new Stage(info.stageId(), info.attemptNumber()));
  }

  /**
   * A stage completed: its peaks wait for their grace period ({@link #postDue}), and the {@code
   * stagePeak*} figures of {@code live} executors and the totals start again from 0.
   */
  synchronized void stageCompleted(StageInfo info, Collection<ExecutorRegistry.View> live) {
    Stage p = stages.remove(key(info));
    if (p == null) {
      p = new Stage(info.stageId(), info.attemptNumber());
    }
    p.completedMillis = System.currentTimeMillis();
    completing.add(p);
    for (ExecutorRegistry.View e : live) {
      e.stagePeakReserved = 0;
      e.stagePeakHeld = 0;
    }
    totalStagePeakReserved = 0;
    totalStagePeakHeld = 0;
  }

  /**
   * Posts the peaks of completed stages whose grace period is over: two heartbeat intervals after
   * the stage's end, by when every executor has sent the sample covering it (executors also send
   * one as a task ends). {@code all}: post every one now (shutdown). Called on each sample, so with
   * no executor left a stage's event waits for the driver's shutdown.
   */
  void postDue(long nowMillis, boolean all) {
    List<Stage> due = new ArrayList<>();
    synchronized (this) {
      Iterator<Stage> it = completing.iterator();
      while (it.hasNext()) {
        Stage p = it.next();
        if (all || nowMillis - p.completedMillis >= 2 * heartbeatMillis) {
          due.add(p);
          it.remove();
        }
      }
    }
    for (Stage p : due) {
      post.accept(
          new StagePeaksEvent(
              p.stageId,
              p.stageAttemptId,
              p.completedMillis,
              p.reserved,
              p.held,
              p.totalReserved,
              p.totalHeld,
              p.ledger,
              p.taskPoolPeak,
              p.consumers));
    }
  }

  private static String key(StageInfo info) {
    return info.stageId() + "." + info.attemptNumber();
  }

  /** A stage's peaks, while it runs and during its grace period. Guarded by the tracker's lock. */
  private static final class Stage {
    final int stageId;
    final int stageAttemptId;
    final Map<String, Long> reserved = new LinkedHashMap<>();
    final Map<String, Long> held = new LinkedHashMap<>();
    long totalReserved;
    long totalHeld;

    /** Executor → ledger figure → peak, from the samples' {@code ledgerPeak.*} figures. */
    final Map<String, Map<String, Long>> ledger = new LinkedHashMap<>();

    long taskPoolPeak;

    /**
     * Consumer → peak, from the samples' {@code consumerPeak.*} figures: the largest {@value
     * ExecutorLedger#CONSUMER_PEAKS_KEPT}, as the executors keep them.
     */
    final Map<String, Long> consumers = new LinkedHashMap<>();

    /** When the stage completed (epoch ms); 0 while it runs. */
    long completedMillis;

    Stage(int stageId, int stageAttemptId) {
      this.stageId = stageId;
      this.stageAttemptId = stageAttemptId;
    }

    void add(String executorId, long peakReserved, long peakHeld, long sumReserved, long sumHeld) {
      reserved.merge(executorId, peakReserved, Math::max);
      held.merge(executorId, peakHeld, Math::max);
      totalReserved = Math.max(totalReserved, sumReserved);
      totalHeld = Math.max(totalHeld, sumHeld);
    }

    /** Adds a sample's ledger peaks, task pool peak and consumer peaks. */
    void addLedger(ExecutorSample s) {
      Map<String, Long> mine = ledger.computeIfAbsent(s.executorId(), k -> new LinkedHashMap<>());
      for (Map.Entry<String, Long> e : s.ledger().partPeaks().entrySet()) {
        mine.merge(e.getKey(), e.getValue(), Math::max);
      }
      for (Map.Entry<String, Long> e : s.ledger().consumerPeaks().entrySet()) {
        ExecutorLedger.keepPeak(consumers, e.getKey(), e.getValue());
      }
      taskPoolPeak = Math.max(taskPoolPeak, s.ledger().taskPoolPeak());
      if (mine.isEmpty()) {
        ledger.remove(s.executorId());
      }
    }
  }
}
