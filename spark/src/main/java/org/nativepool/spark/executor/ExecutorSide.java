package org.nativepool.spark.executor;

import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.util.Utils;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.config.GuardSettings;
import org.nativepool.spark.config.HeapHolderSettings;
import org.nativepool.spark.config.LedgerSettings;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.config.PoolSettings;
import org.nativepool.spark.config.ReportingSettings;
import org.nativepool.spark.config.SparkLine;
import org.nativepool.spark.jni.ArrowProcessStat;
import org.nativepool.spark.jni.GoLog;
import org.nativepool.spark.jni.LibraryLoader;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.ledger.ExecutorLedger;
import org.nativepool.spark.ledger.HeapHolders;
import org.nativepool.spark.ledger.LedgerReader;
import org.nativepool.spark.ledger.LiveNative;
import org.nativepool.spark.memory.ExecutorState;
import org.nativepool.spark.memory.SparkOffHeap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor side of the plugin. Its {@code init} reads the settings, loads the library ({@code
 * spark.nativepool.library}, else the jar's copy), routes the Go side's logs to log4j ({@link
 * GoLog}), configures the library (the process memory policy included: glibc's mmap threshold and
 * the Go runtime's soft memory limit), starts the pod guard ({@link GuardSettings}: it makes native
 * memory give way when memory outside it takes the headroom under the executor's memory limit),
 * registers the gauges ({@link ExecutorGauges}), installs the executor's state ({@link
 * ExecutorState}: the settings tasks open their pools with, and the executor memory ledger as the
 * observer of closing pools), starts the JVM's recording of Old Object Samples that names the
 * heap's holders in growth reports of the heap ({@link HeapHolders}, with {@link
 * NativePoolConf#HEAP_HOLDERS}) and the poller of the Native Memory page's requests for them
 * ({@link HeapHolderPoller}), and starts the {@link ExecutorReporter}. Tasks then open their pool
 * with {@code TaskPool.openForCurrentTask()}. With {@link NativePoolConf#MONITORING} off it
 * registers no gauges and starts no reporter: nothing reads the native figures or the ledger.
 *
 * <p>A jar built for another Spark line ({@link SparkLine}), a library that does not load or a
 * setting that does not parse never makes {@code init} throw: that would make Spark kill the
 * executor and start another one that fails the same way. The reason is logged once and installed
 * instead ({@link ExecutorState#disable}), so every task asking for a native pool fails with it,
 * and the job fails after Spark's task retries.
 */
public final class ExecutorSide implements ExecutorPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorSide.class);

  private ExecutorReporter reporter;

  /** This side's share of the JVM's heap holders' recording; null when off. */
  private HeapHolders heapHolders;

  private HeapHolderPoller heapPoller;

  /** What this plugin installed in {@link ExecutorState}, for {@link #shutdown()}. */
  private Object installed;

  private boolean configured;

  /** Whether this plugin started the pod guard, which {@link #shutdown()} then stops. */
  private boolean guardStarted;

  /** Made by {@code NativePoolPlugin.executorPlugin()}. */
  public ExecutorSide() {}

  @Override
  public void init(PluginContext ctx, Map<String, String> extraConf) {
    PoolSettings s;
    ReportingSettings reporting;
    GuardSettings guard;
    HeapHolderSettings holders;
    ExecutorLedger ledger;
    String source;
    try {
      // A jar of another Spark line: its tasks would fail later with NoClassDefFoundError.
      SparkLine.current().requireBuiltLine();
      s = PoolSettings.fromConf(ctx.conf());
      reporting = ReportingSettings.fromConf(ctx.conf());
      guard = GuardSettings.fromConf(ctx.conf());
      holders = HeapHolderSettings.fromConf(ctx.conf());
      ledger =
          new ExecutorLedger(
              ctx.executorID(),
              LedgerSettings.fromConf(ctx.conf()),
              new LedgerReader(),
              reporting.monitoring() ? ctx.metricRegistry() : null,
              message -> toDriver(ctx, message),
              LiveNative::describeTop); // the live Go Arrow memory by consumer and site
      ledger.loadListeners(Thread.currentThread().getContextClassLoader());
      source = LibraryLoader.ensureLoaded(s.library(), s.libraryOrigin());
    } catch (IllegalStateException | IllegalArgumentException e) {
      installed = ExecutorState.disable(e);
      LOG.error(
          "nativepool: native pools disabled on executor {}; every task asking for one fails: {}",
          ctx.executorID(),
          e.getMessage());
      return;
    }
    GoLog.configure(s.logLevel()); // first: Go's records reach log4j
    Natives.configure(s.logging(), s.taskThresholds());
    ExecutorState.setAllocationSites(s.allocationSites()); // Go's and Java's, for leaks
    Natives.configureRuntime(s.mallocMmapThreshold(), s.goMemoryLimit(), s.memoryOverhead());
    configured = true;
    // Off also stops a guard an earlier plugin of this JVM left running. A guard that cannot
    // start is logged, never thrown: the executor runs on without it.
    try {
      SparkOffHeap offHeap =
          guard.enabled() && guard.offHeap()
              ? SparkOffHeap.forExecutor(guard.offHeapFloor(), guard.taskSlots())
              : null;
      if (guard.enabled()) {
        for (String dir : spillDirs()) {
          Natives.addSpillDir(dir);
        }
      }
      Natives.configureGuard(
          guard.enabled(), guard.reserve(), guard.limit(), guard.limitExplicit(), offHeap);
      guardStarted = guard.enabled();
      if (offHeap != null) {
        LOG.info(
            "nativepool: executor {}: the pod guard holds Spark's free off-heap memory while the"
                + " headroom is short, leaving its consumers {}",
            ctx.executorID(),
            Bytes.format(offHeap.floor()));
      }
    } catch (RuntimeException e) {
      LOG.error("nativepool: executor {}: the pod guard did not start", ctx.executorID(), e);
    }
    ExecutorGauges gauges = null;
    if (reporting.monitoring()) {
      gauges = new ExecutorGauges(Natives.processArrowStats().get(ArrowProcessStat.RSS));
      gauges.register(ctx.metricRegistry());
    }
    installed = ExecutorState.install(s, ledger);
    LedgerReader.checkReflection(); // what the ledger cannot read is logged now, at WARN, once
    String noArrow = SparkLine.current().arrowJniMissing(); // Arrow 12 on linux-aarch64
    if (noArrow != null) {
      LOG.warn(noArrow);
    }
    if (gauges != null) {
      if (holders.enabled()) {
        heapHolders =
            HeapHolders.start(
                holders.cutoffMillis(),
                Path.of(Utils.getLocalDir(ctx.conf())));
        ledger.setHeapHolders(heapHolders, holders.minIntervalMillis());
        if (heapHolders != null && holders.onDemand()) {
          heapPoller = HeapHolderPoller.start(ctx, heapHolders, reporting.heartbeatMillis());
        }
      }
      reporter = ExecutorReporter.start(ctx, reporting, gauges, ledger, guardStarted);
    } else {
      LOG.info(
          "nativepool: executor {}: {}=false: no gauges, no reporting thread, no ledger readings",
          ctx.executorID(),
          NativePoolConf.MONITORING.key());
    }
    LOG.info("nativepool: executor {} uses {}; {} ({})", ctx.executorID(), s, guard, source);
  }

  /**
   * Tracks the task's {@code TaskMemoryManager} until it ends, so that the ledger can say what each
   * engine's consumers hold of Spark's off-heap memory ({@link ExecutorState#sparkConsumers()}).
   */
  @Override
  public void onTaskStart() {
    if (reporter != null) {
      ExecutorState.sparkConsumers().track(TaskContext.get());
    }
  }

  /** Sends a sample early, so that the driver's stage peaks see the task (see the reporter). */
  @Override
  public void onTaskSucceeded() {
    if (reporter != null) {
      reporter.taskEnded();
    }
  }

  @Override
  public void onTaskFailed(TaskFailedReason failureReason) {
    if (reporter != null) {
      reporter.taskEnded();
    }
  }

  /**
   * Stops the reporting thread and the pod guard this plugin started (its ballast goes back to
   * Spark), forgets what this plugin installed (unless a later start replaced it) and turns the
   * process-wide logging and site options off.
   */
  @Override
  public void shutdown() {
    if (reporter != null) {
      reporter.stop();
    }
    if (heapPoller != null) {
      heapPoller.stop();
    }
    if (heapHolders != null) {
      heapHolders.release();
      heapHolders = null;
    }
    if (guardStarted) {
      guardStarted = false;
      try {
        Natives.configureGuard(false, 0, 0, false);
      } catch (RuntimeException e) {
        LOG.warn("nativepool: cannot stop the pod guard", e);
      }
    }
    ExecutorState.uninstall(installed);
    if (configured) {
      ExecutorState.setAllocationSites(false);
      Natives.configure(false, new long[0]);
    }
  }

  /**
   * The directories Spark's spills write in: the block manager's local directories (its {@code
   * blockmgr-*} directories under {@code spark.local.dir}, or YARN's and Kubernetes' local
   * directories), where Spark's sorters, aggregations and shuffles write their spill files.
   */
  private static List<String> spillDirs() {
    List<String> dirs = new ArrayList<>();
    SparkEnv env = SparkEnv.get();
    if (env == null || env.blockManager() == null) {
      return dirs;
    }
    for (File d : env.blockManager().diskBlockManager().localDirs()) {
      if (d.isDirectory()) {
        dirs.add(d.getAbsolutePath());
      }
    }
    return dirs;
  }

  /** Sends a ledger crossing or growth report to the driver side; a failure is logged. */
  private static void toDriver(PluginContext ctx, Object message) {
    try {
      ctx.send(message);
    } catch (IOException | RuntimeException e) {
      LOG.debug("nativepool: cannot send {} to the driver", message, e);
    }
  }
}
