package org.nativepool.spark;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.api.plugin.PluginContext;
import org.nativepool.spark.arrow.ArrowProcessStat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor side's reporting thread: one daemon thread per executor plugin, stopped by {@link
 * #stop()} at the plugin's shutdown. It
 *
 * <ul>
 *   <li>reads the executor's {@link ExecutorLedger} every {@link ReportingSettings#pollMillis()}
 *       (gauges, high-water marks, thresholds, and the interval peaks of reserved and held bytes)
 *       and at every task end (the growth detector);
 *   <li>sends an {@link ExecutorSample} to the driver side every heartbeat interval ({@code
 *       PluginContext.send}: one-way, nothing waits for the driver), and when a task ends if none
 *       went out within the poll period, with the ledger's figures; a task pool that closed in
 *       the interval counts in its peak of reserved bytes ({@link ExecutorLedger#noteTaskPool});
 *   <li>logs one summary line every {@value ReportingSettings#LOG_INTERVAL}, if set, ending with
 *       the ledger ({@link LedgerSnapshot#line()}).
 * </ul>
 *
 * <p>Every period runs on that one thread. A failure to read or send is logged (the first at WARN, later ones at DEBUG) and the next period tries again: the
 * figures are for watching, never for the tasks.
 */
final class ExecutorReporter {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorReporter.class);


  private final PluginContext ctx;
  private final ReportingSettings settings;
  private final long baselineRss;
  private final ExecutorLedger ledger;
  private final ScheduledExecutorService thread;

  /** Task ends not yet given to the ledger ({@link #taskBoundary()}). */
  private final AtomicInteger pendingBoundaries = new AtomicInteger();

  /** When the last sample was sent (ms since the epoch), for {@link #taskEnded()}. */
  private volatile long lastSendMillis;

  // Written and read only on the reporting thread.
  private long sequence;
  private boolean warned;

  private ExecutorReporter(
      PluginContext ctx, ReportingSettings settings, long baselineRss, ExecutorLedger ledger) {
    this.ctx = ctx;
    this.settings = settings;
    this.baselineRss = baselineRss;
    this.ledger = ledger;
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
   * @param baselineRss the process's RSS when the plugin initialised (-1: unknown), for {@code
   *     rssDrift}
   * @param ledger the executor's memory ledger, read every poll period and at each task end
   */
  static ExecutorReporter start(
      PluginContext ctx, ReportingSettings settings, long baselineRss, ExecutorLedger ledger) {
    ExecutorReporter r = new ExecutorReporter(ctx, settings, baselineRss, ledger);
    long poll = settings.pollMillis();
    long send = settings.heartbeatMillis();
    r.thread.scheduleWithFixedDelay(r::poll, poll, poll, TimeUnit.MILLISECONDS);
    r.thread.scheduleWithFixedDelay(r::send, send, send, TimeUnit.MILLISECONDS);
    long log = settings.logIntervalMillis();
    if (log > 0) {
      r.thread.scheduleWithFixedDelay(r::logSummary, log, log, TimeUnit.MILLISECONDS);
    }
    return r;
  }

  /**
   * Called when a task ends: sends a sample now unless one went out within the poll period, so
   * that the driver gets the task's interval peak close to its stage's end.
   */
  void taskEnded() {
    try {
      // One reading for all the task ends queued meanwhile: a burst of short tasks must not keep
      // the thread from its polls and sends.
      if (pendingBoundaries.getAndIncrement() == 0) {
        thread.execute(this::taskBoundary);
      }
      if (System.currentTimeMillis() - lastSendMillis >= settings.pollMillis()) {
        thread.execute(this::send);
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
      failed("read the ledger of", e);
    }
  }

  /** Stops the thread; a period under way finishes, no other starts. Idempotent. */
  void stop() {
    thread.shutdownNow();
  }

  /**
   * The executor plugin's figures by gauge name: every {@link ProcessStat}, every named {@link
   * ArrowProcessStat}, {@code rssDrift} and {@code allocationGap}, as the gauges compute them.
   */
  static Map<String, Long> readFigures(long baselineRss) {
    long[] p = NativeBridge.processStats0();
    long[] a = NativeBridge.processArrowStats0();
    Map<String, Long> out = new LinkedHashMap<>();
    for (Map.Entry<String, ProcessStat> e : NativePoolPlugin.GAUGES.entrySet()) {
      out.put(e.getKey(), p[e.getValue().ordinal()]);
    }
    for (Map.Entry<String, ArrowProcessStat> e : NativePoolPlugin.ARROW_GAUGES.entrySet()) {
      out.put(e.getKey(), a[e.getValue().ordinal()]);
    }
    long rss = a[ArrowProcessStat.RSS.ordinal()];
    out.put(
        NativePoolPlugin.DRIFT_GAUGE,
        rss < 0 || baselineRss < 0 ? -1L : rss - baselineRss - p[ProcessStat.HELD.ordinal()]);
    out.put(
        NativePoolPlugin.GAP_GAUGE,
        p[ProcessStat.RESERVED.ordinal()] - a[ArrowProcessStat.ALLOCATED.ordinal()]);
    return out;
  }

  private void poll() {
    try {
      ledger.readNow(); // its interval peaks are the sample's
    } catch (RuntimeException e) {
      failed("read", e);
    }
  }

  private void send() {
    try {
      Map<String, Long> f = readFigures(baselineRss);
      Map<String, Long> l = ledger.takeSampleFigures();
      lastSendMillis = System.currentTimeMillis();
      // The interval's peaks: the highest polled figure, the highest task pool that closed in the
      // interval (a task shorter than a poll period), and the figure now.
      f.put(
          ExecutorSample.INTERVAL_PEAK_RESERVED,
          Math.max(
              f.get(ProcessStat.RESERVED.gaugeName()),
              Math.max(
                  intervalPeak(l, MemoryLedger.NATIVE_RESERVED),
                  l.getOrDefault(ExecutorLedger.TASK_POOL_PEAK, 0L))));
      f.put(
          ExecutorSample.INTERVAL_PEAK_HELD,
          Math.max(f.get(ProcessStat.HELD.gaugeName()), intervalPeak(l, MemoryLedger.NATIVE_HELD)));
      f.putAll(l);
      ctx.send(new ExecutorSample(ctx.executorID(), System.currentTimeMillis(), sequence++, f));
    } catch (IOException | RuntimeException e) {
      failed("send", e);
    }
  }

  /** The ledger's interval peak of {@code part} in its sample figures; 0 if none. */
  private static long intervalPeak(Map<String, Long> ledgerFigures, String part) {
    return ledgerFigures.getOrDefault(ExecutorLedger.INTERVAL_PEAK_PREFIX + part, 0L);
  }

  private void logSummary() {
    try {
      LedgerSnapshot l = ledger.latest();
      LOG.info(
          summaryLine(ctx.executorID(), readFigures(baselineRss))
              + (l == null ? "" : "; ledger: " + l.line()));
    } catch (RuntimeException e) {
      failed("log", e);
    }
  }

  private void failed(String what, Exception e) {
    if (!warned) {
      warned = true;
      LOG.warn("nativepool: executor {}: cannot {} the native figures", ctx.executorID(), what, e);
    } else {
      LOG.debug("nativepool: executor {}: cannot {} the native figures", ctx.executorID(), what, e);
    }
  }

  /**
   * The summary line of {@value ReportingSettings#LOG_INTERVAL}, from an executor's figures, e.g.
   * {@code nativepool: executor 1 memory: reserved 12.0 MiB, allocated 8.0 MiB, held 16.0 MiB
   * (slack 4.0 MiB), RSS 1.2 GiB (Go runtime 9.5 MiB, limit 55.4 MiB), 2 task pools, peak 32.0
   * MiB, spills 3 (40.0 MiB freed)}.
   */
  static String summaryLine(String executorId, Map<String, Long> f) {
    long goLimit = get(f, ProcessStat.GO_MEMORY_LIMIT);
    return "nativepool: executor "
        + executorId
        + " memory: reserved "
        + size(get(f, ProcessStat.RESERVED))
        + ", allocated "
        + size(f.getOrDefault(ArrowProcessStat.ALLOCATED.gaugeName(), -1L))
        + ", held "
        + size(get(f, ProcessStat.HELD))
        + " (slack "
        + size(get(f, ProcessStat.SLACK))
        + "), RSS "
        + size(f.getOrDefault(ArrowProcessStat.RSS.gaugeName(), -1L))
        + " (Go runtime "
        + size(get(f, ProcessStat.GO_MAPPED))
        + (goLimit > 0 ? ", limit " + size(goLimit) : ", no limit")
        + "), "
        + get(f, ProcessStat.LIVE_TASKS)
        + " task pools, peak "
        + size(get(f, ProcessStat.PEAK))
        + ", spills "
        + get(f, ProcessStat.SPILL_REQUESTS)
        + " ("
        + size(get(f, ProcessStat.SPILL_BYTES_FREED))
        + " freed)";
  }

  private static long get(Map<String, Long> f, ProcessStat s) {
    return f.getOrDefault(s.gaugeName(), -1L);
  }

  /** {@code n} bytes in binary units with one decimal ("12.0 MiB", "512 B"); "?" if negative. */
  static String size(long n) {
    if (n < 0) {
      return "?";
    }
    if (n < 1024) {
      return n + " B";
    }
    String[] units = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = n;
    int u = -1;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
  }
}
