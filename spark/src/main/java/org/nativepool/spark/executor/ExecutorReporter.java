package org.nativepool.spark.executor;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.api.plugin.PluginContext;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.config.ReportingSettings;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.LedgerSample;
import org.nativepool.spark.jni.ArrowProcessStat;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.ledger.ExecutorLedger;
import org.nativepool.spark.ledger.LedgerReader;
import org.nativepool.spark.ledger.LedgerSnapshot;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor side's reporting thread: one daemon thread per executor plugin, stopped by {@link
 * #stop()} at the plugin's shutdown. It
 *
 * <ul>
 *   <li>takes one reading of the native figures every {@link ReportingSettings#pollMillis()} (one
 *       {@code processStats0} and one {@code processArrowStats0}: {@link
 *       ExecutorGauges#refresh()}), which every gauge serves until the next, and reads the
 *       executor's {@link ExecutorLedger} with it (gauges, high-water marks, thresholds, and the
 *       interval peaks of reserved and held bytes); a metrics scrape reads nothing native;
 *   <li>reads the ledger again, natives included, after task ends (one reading for a burst of them,
 *       on this thread, never the task's), for the growth detector, whose windows count task ends;
 *       the gauges keep the poll's reading. glibc's {@code mallinfo2} inside {@code processStats0}
 *       runs at most once a second however often the stats are read (the Go side's {@code
 *       MallocRetainedInterval});
 *   <li>sends an {@link ExecutorSample} to the driver side every heartbeat interval ({@code
 *       PluginContext.send}: one-way, nothing waits for the driver), with the ledger's figures; a
 *       task pool that closed in the interval counts in its peak of reserved bytes ({@link
 *       ExecutorLedger#poolClosed}). It also sends one, from a fresh reading, at the executor's
 *       start and when a task ends if none went out within the poll period: such a sample is marked
 *       {@link ExecutorSample#boundary()}, and the driver posts it to the event log beyond its
 *       timer's rate, so that the Native Memory page has points for a job shorter than one
 *       sampling period;
 *   <li>logs one summary line every {@link NativePoolConf#LOG_INTERVAL}, if set, ending with the
 *       ledger ({@link LedgerSnapshot#line()});
 *   <li>with the pod guard on, polls its episodes every {@value GuardEpisodeReports#POLL_MILLIS}
 *       ms, a schedule of its own that costs one native call and no ledger reading while no episode
 *       lasts: each episode is logged once at WARN on this class's logger and sent to the driver
 *       when it ends ({@link GuardEpisodeReports}).
 * </ul>
 *
 * <p>Every period runs on that one thread. A failure to read or send is logged (the first at WARN,
 * later ones at DEBUG) and the next period tries again: the figures are for watching, never for the
 * tasks.
 */
final class ExecutorReporter {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorReporter.class);

  private final PluginContext ctx;
  private final ReportingSettings settings;
  private final ExecutorGauges gauges;
  private final ExecutorLedger ledger;
  private final ScheduledExecutorService thread;

  /** The pod guard's episode reports; null when the guard is off. */
  private final GuardEpisodeReports guardReports;

  /** Task ends not yet given to the ledger ({@link #taskBoundary()}). */
  private final AtomicInteger pendingBoundaries = new AtomicInteger();

  /** When the last sample was sent (ms since the epoch), for {@link #taskEnded()}. */
  private volatile long lastSendMillis;

  // Written and read only on the reporting thread.
  private long sequence;
  private boolean warned;

  private ExecutorReporter(
      PluginContext ctx,
      ReportingSettings settings,
      ExecutorGauges gauges,
      ExecutorLedger ledger,
      boolean guard) {
    this.ctx = ctx;
    this.settings = settings;
    this.gauges = gauges;
    this.ledger = ledger;
    this.guardReports =
        guard ? new GuardEpisodeReports(ctx.executorID(), ledger, LOG::warn, this::toDriver) : null;
    this.thread =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "nativepool-reporter");
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * Starts the reporting thread of this executor.
   *
   * @param gauges the executor's gauges, refreshed every poll period
   * @param ledger the executor's memory ledger, read every poll period and at each task end
   * @param guard whether the pod guard runs, so that its episodes are polled and reported
   */
  static ExecutorReporter start(
      PluginContext ctx,
      ReportingSettings settings,
      ExecutorGauges gauges,
      ExecutorLedger ledger,
      boolean guard) {
    ExecutorReporter r = new ExecutorReporter(ctx, settings, gauges, ledger, guard);
    long poll = settings.pollMillis();
    long send = settings.heartbeatMillis();
    r.thread.execute(r::boundarySample); // a point at the executor's start
    r.thread.scheduleWithFixedDelay(r::poll, poll, poll, TimeUnit.MILLISECONDS);
    r.thread.scheduleWithFixedDelay(() -> r.send(false), send, send, TimeUnit.MILLISECONDS);
    long log = settings.logIntervalMillis();
    if (log > 0) {
      r.thread.scheduleWithFixedDelay(r::logSummary, log, log, TimeUnit.MILLISECONDS);
    }
    if (guard) {
      long g = GuardEpisodeReports.POLL_MILLIS;
      r.thread.scheduleWithFixedDelay(r::pollGuard, g, g, TimeUnit.MILLISECONDS);
    }
    return r;
  }

  /**
   * Called when a task ends: sends a sample from a fresh reading now unless one went out within the
   * poll period, so that the driver gets the task's interval peak close to its stage's end and the
   * Native Memory page a point at the task's end.
   */
  void taskEnded() {
    try {
      // One reading for all the task ends queued meanwhile: a burst of short tasks must not keep
      // the thread from its polls and sends.
      if (pendingBoundaries.getAndIncrement() == 0) {
        thread.execute(this::taskBoundary);
      }
      if (System.currentTimeMillis() - lastSendMillis >= settings.pollMillis()) {
        thread.execute(this::boundarySample);
      }
    } catch (RejectedExecutionException stopped) {
      // shut down meanwhile: nothing to send
    }
  }

  /** The task boundaries queued since the last reading, for the ledger's growth detector. */
  private void taskBoundary() {
    try {
      ledger.taskBoundary(pendingBoundaries.getAndSet(0));
    } catch (RuntimeException e) {
      failed("read the ledger", e);
    }
  }

  /** Stops the thread; a period under way finishes, no other starts. Idempotent. */
  void stop() {
    thread.shutdownNow();
  }

  /**
   * One reading for the whole poll: the gauges' and the ledger's native figures come from the same
   * {@code processStats0} and {@code processArrowStats0}.
   */
  private void poll() {
    try {
      ExecutorGauges.Reading r = gauges.refresh();
      ledger.readNow(r.process(), r.arrow()); // its interval peaks are the sample's
    } catch (RuntimeException e) {
      failed("read the native figures", e);
    }
  }

  /** The pod guard's episodes: see {@link GuardEpisodeReports}. */
  private void pollGuard() {
    try {
      guardReports.poll(Natives.guardEpisodes());
    } catch (RuntimeException e) {
      failed("read the pod guard's episodes", e);
    }
  }

  /** Sends a pod guard episode to the driver side; a failure is logged. */
  private void toDriver(Object message) {
    try {
      ctx.send(message);
    } catch (IOException | RuntimeException e) {
      failed("send a " + message.getClass().getSimpleName() + " to the driver", e);
    }
  }

  /**
   * A reading and a sample marked as a boundary's, unless a sample went out within the poll period
   * meanwhile (a burst of task ends queues one).
   */
  private void boundarySample() {
    if (lastSendMillis > 0 && System.currentTimeMillis() - lastSendMillis < settings.pollMillis()) {
      return;
    }
    poll();
    send(true);
  }

  private void send(boolean boundary) {
    try {
      ExecutorGauges.Reading r = gauges.latest();
      Map<String, Long> f = gauges.figures(r);
      LedgerSample l = ledger.takeSample();
      lastSendMillis = System.currentTimeMillis();
      // The interval's peaks: the highest polled figure, the highest task pool that closed in the
      // interval (a task shorter than a poll period), and the figure now.
      long peakReserved =
          Math.max(
              r.process().get(ProcessStat.RESERVED),
              Math.max(l.partPeak(LedgerReader.NATIVE_RESERVED), l.taskPoolPeak()));
      long peakHeld =
          Math.max(r.process().get(ProcessStat.HELD), l.partPeak(LedgerReader.NATIVE_HELD));
      ctx.send(
          new ExecutorSample(
              ctx.executorID(),
              r.timeMillis(),
              sequence++,
              f,
              peakReserved,
              peakHeld,
              l,
              boundary));
    } catch (IOException | RuntimeException e) {
      failed("send the native figures", e);
    }
  }

  private void logSummary() {
    try {
      LedgerSnapshot l = ledger.latest();
      LOG.info(
          summaryLine(ctx.executorID(), gauges.figures(gauges.latest()))
              + (l == null ? "" : "; ledger: " + l.line()));
    } catch (RuntimeException e) {
      failed("log the native figures", e);
    }
  }

  private void failed(String what, Exception e) {
    if (!warned) {
      warned = true;
      LOG.warn("nativepool: executor {}: cannot {}", ctx.executorID(), what, e);
    } else {
      LOG.debug("nativepool: executor {}: cannot {}", ctx.executorID(), what, e);
    }
  }

  /**
   * The summary line of {@link NativePoolConf#LOG_INTERVAL}, from an executor's figures, e.g.
   * {@code nativepool: executor 1 memory: reserved 12.0 MiB, allocated 8.0 MiB, held 16.0 MiB
   * (slack 4.0 MiB), RSS 1.2 GiB (Go runtime 9.5 MiB, limit 55.4 MiB), 2 task pools, peak 32.0 MiB,
   * spills 3 (40.0 MiB freed)}.
   */
  static String summaryLine(String executorId, Map<String, Long> f) {
    long goLimit = get(f, ProcessStat.GO_MEMORY_LIMIT);
    return "nativepool: executor "
        + executorId
        + " memory: reserved "
        + Bytes.format(get(f, ProcessStat.RESERVED))
        + ", allocated "
        + Bytes.format(f.getOrDefault(ArrowProcessStat.ALLOCATED.gaugeName(), -1L))
        + ", held "
        + Bytes.format(get(f, ProcessStat.HELD))
        + " (slack "
        + Bytes.format(get(f, ProcessStat.SLACK))
        + "), RSS "
        + Bytes.format(f.getOrDefault(ArrowProcessStat.RSS.gaugeName(), -1L))
        + " (Go runtime "
        + Bytes.format(get(f, ProcessStat.GO_MAPPED))
        + (goLimit > 0 ? ", limit " + Bytes.format(goLimit) : ", no limit")
        + "), "
        + get(f, ProcessStat.LIVE_TASKS)
        + " task pools, peak "
        + Bytes.format(get(f, ProcessStat.PEAK))
        + ", spills "
        + get(f, ProcessStat.SPILL_REQUESTS)
        + " ("
        + Bytes.format(get(f, ProcessStat.SPILL_BYTES_FREED))
        + " freed)";
  }

  private static long get(Map<String, Long> f, ProcessStat s) {
    return f.getOrDefault(s.gaugeName(), -1L);
  }
}
