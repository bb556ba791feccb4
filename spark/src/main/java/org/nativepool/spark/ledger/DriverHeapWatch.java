package org.nativepool.spark.ledger;

import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.config.HeapHolderSettings;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.events.HeapHoldersEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver's check of its own heap. The driver runs no tasks, so its boundaries are the moments
 * its heap moved: once a second it reads what the heap would hold after a young collection ({@link
 * LedgerReader#heapAfterGc()}: the young pools as the last collection left them, the other heap
 * pools as they are now, so an object allocated straight into the old generation, as a large array
 * is, counts at once), and a reading that moved at least a quarter of the minimum growth from
 * the last one counted is a boundary; an idle driver makes none. The boundaries go to the
 * executors' {@link GrowthDetector} rule with the driver's windows ({@link
 * HeapHolderSettings#driverWindow()}, {@link HeapHolderSettings#driverWindows()}); a rise is analysed ({@link HeapHolders}) and reported
 * only if the samples allocated since it began are mostly live (garbage that young collections
 * promoted also raises the old generation until its next collection frees it); the report names
 * the heap's holders, is logged at WARN on this class's logger and handed to the driver
 * side, which posts it (executor id {@value GrowthReportEvent#DRIVER}, boundary {@value
 * GrowthReportEvent#HEAP_READING}).
 *
 * <p>One watch per JVM, as there is one heap and one recording: {@link #start} makes it or joins
 * the running one (whose reports then go to the newest driver side), {@link #close()} leaves it,
 * and the last to leave stops it. One daemon thread, {@code nativepool-driver-heap}, reads and
 * analyses. Safe for concurrent use.
 */
public final class DriverHeapWatch implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(DriverHeapWatch.class);

  /** How often the heap is read, ms. */
  public static final long PERIOD_MILLIS = 1000;

  // The JVM's watch. Guarded by DriverHeapWatch.class.
  private static DriverHeapWatch instance;
  private static int users;

  private final HeapHolderSettings settings;
  private final HeapHolders holders;
  private volatile Consumer<GrowthReportEvent> report;
  private final GrowthDetector detector;
  private final ScheduledExecutorService thread;

  // Written and read on the watch's thread only.
  private long lastCounted = -1;
  private long boundaries;
  private long nextAnalysisMillis;

  /**
   * A rise found while the last analysis was too recent: analysed once the interval is over, even
   * if the heap does not move again (a leak that stopped, a shell left idle).
   */
  private GrowthDetector.Growth pending;

  /**
   * Starts the JVM's watch, or joins it if it runs: its reports then go to {@code report}.
   *
   * @param settings the driver's windows and the minimum growth (those of the first start)
   * @param holders this JVM's heap holders, which confirm a rise (not null)
   * @param report takes each report (posts it); never throws
   */
  public static synchronized DriverHeapWatch start(
      HeapHolderSettings settings, HeapHolders holders, Consumer<GrowthReportEvent> report) {
    if (instance == null) {
      instance = new DriverHeapWatch(settings, holders, report);
      users = 0;
    }
    instance.report = report;
    users++;
    return instance;
  }

  private DriverHeapWatch(
      HeapHolderSettings settings, HeapHolders holders, Consumer<GrowthReportEvent> report) {
    this.settings = settings;
    this.holders = holders;
    this.report = report;
    this.detector =
        new GrowthDetector(
            settings.driverWindow(), settings.driverWindows(), settings.growthMinBytes());
    this.thread =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "nativepool-driver-heap");
              t.setDaemon(true);
              return t;
            });
    thread.scheduleWithFixedDelay(this::poll, PERIOD_MILLIS, PERIOD_MILLIS, TimeUnit.MILLISECONDS);
  }

  /** Boundaries counted so far. */
  public long boundaries() {
    return boundaries;
  }

  private void poll() {
    try {
      long r = LedgerReader.heapAfterGc();
      long step = settings.growthMinBytes() / 4;
      long now = System.currentTimeMillis();
      if (r < 0 || (lastCounted >= 0 && Math.abs(r - lastCounted) < step)) {
        if (pending != null && now >= nextAnalysisMillis) {
          GrowthDetector.Growth g = pending;
          pending = null;
          analyse(g, now);
        }
        return;
      }
      lastCounted = r;
      boundaries++;
      for (GrowthDetector.Growth g :
          detector.sample(Map.of(LedgerReader.JVM_HEAP_AFTER_GC, r), now)) {
        if (now < nextAnalysisMillis) {
          detector.withdraw(g.part()); // analysed a moment ago
          pending = g;
          continue;
        }
        pending = null;
        analyse(g, now);
      }
    } catch (RuntimeException e) {
      LOG.debug("nativepool: the driver's heap check failed", e);
    }
  }

  /** Analyses a rise; reports it if the analysis confirms it. */
  private void analyse(GrowthDetector.Growth g, long now) {
    HeapHoldersEvent h =
        holders.analyze(GrowthReportEvent.DRIVER, "growth of " + g.part(), g.sinceMillis());
    if (!h.confirmsGrowth(g.toBytes() - g.fromBytes())) {
      LOG.info(ExecutorLedger.unconfirmed(GrowthReportEvent.DRIVER, g, h));
      detector.withdraw(g.part());
      nextAnalysisMillis = now + ExecutorLedger.HEAP_REANALYSIS_MILLIS;
      return;
    }
    nextAnalysisMillis = now + settings.minIntervalMillis();
    GrowthReportEvent e =
        new GrowthReportEvent(
            GrowthReportEvent.DRIVER,
            now,
            g.part(),
            g.fromBytes(),
            g.toBytes(),
            g.tasks(),
            boundaries,
            List.of(),
            h.getHolders(),
            h.getNote(),
            GrowthReportEvent.HEAP_READING);
    LOG.warn(e.describe());
    report.accept(e);
  }

  /** Leaves the watch; the last to leave stops it (an analysis under way finishes). */
  @Override
  public void close() {
    synchronized (DriverHeapWatch.class) {
      if (instance != this || --users > 0) {
        return;
      }
      instance = null;
    }
    thread.shutdownNow();
  }

  @Override
  public String toString() {
    return "DriverHeapWatch("
        + settings.driverWindows()
        + " x "
        + settings.driverWindow()
        + " readings, >= "
        + Bytes.format(settings.growthMinBytes())
        + ")";
  }
}
