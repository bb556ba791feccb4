package org.nativepool.spark.executor;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.nativepool.spark.arrow.CDataOrigin;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.config.CgroupLimit;
import org.nativepool.spark.config.GuardSettings;
import org.nativepool.spark.config.HeapHolderSettings;
import org.nativepool.spark.config.LedgerSettings;
import org.nativepool.spark.config.LocalDir;
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
import scala.Tuple2;

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
 * setting of the pools that does not parse never makes {@code init} throw: that would make Spark
 * kill the executor and start another one that fails the same way. The reason is logged once and
 * installed instead ({@link ExecutorState#disable}), so every task asking for a native pool fails
 * with it, and the job fails after Spark's task retries. The driver refuses every bad setting at
 * the application's start already ({@code driver.DriverCheck}), so only what the executor alone
 * sees gets here (a library path of its own, its classpath). A monitoring setting never disables
 * the pools: a bad one falls back to its defaults, a ledger listener that cannot be made is left
 * out, each logged at ERROR. What only the executor's own limit can refuse fails its start: a
 * {@link NativePoolConf#GUARD_RESERVE} not below its memory cgroup's limit makes {@code init}
 * throw, which fails the SparkContext in local mode and the executor's start elsewhere, with the
 * key, the value and the limit (Spark's limit on executor failures then ends the application).
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

  /** Whether the pod guard may hold Spark's off-heap memory: it must see the tasks' consumers. */
  private boolean guardHoldsSparkMemory;

  /** Made by {@code NativePoolPlugin.executorPlugin()}. */
  public ExecutorSide() {}

  @Override
  public void init(PluginContext ctx, Map<String, String> extraConf) {
    PoolSettings s;
    GuardSettings guard;
    String source;
    try {
      // A jar of another Spark line: its tasks would fail later with NoClassDefFoundError.
      SparkLine.current().requireBuiltLine();
      s = PoolSettings.fromConf(ctx.conf());
      guard = GuardSettings.fromConf(ctx.conf());
      source = LibraryLoader.ensureLoaded(s.library(), s.libraryOrigin());
    } catch (IllegalStateException | IllegalArgumentException e) {
      installed = ExecutorState.disable(e);
      LOG.error(
          "nativepool: native pools disabled on executor {}; every task asking for one fails: {}",
          ctx.executorID(),
          e.getMessage());
      return;
    }
    // Monitoring never disables native pools: a setting of it the driver's check did not see
    // (it checks every one at the application's start) falls back to the defaults, loudly.
    ReportingSettings reporting;
    LedgerSettings ledgerSettings;
    HeapHolderSettings holders;
    try {
      reporting = ReportingSettings.fromConf(ctx.conf());
      ledgerSettings = LedgerSettings.fromConf(ctx.conf());
      holders = HeapHolderSettings.fromConf(ctx.conf());
    } catch (IllegalArgumentException e) {
      LOG.error(
          "nativepool: executor {}: {}; its monitoring runs with the defaults",
          ctx.executorID(),
          e.getMessage());
      reporting = ReportingSettings.fromConf(withoutNativepoolKeys(ctx.conf()));
      ledgerSettings = LedgerSettings.defaults();
      holders = HeapHolderSettings.fromConf(withoutNativepoolKeys(ctx.conf()));
    }
    ExecutorLedger ledger =
        new ExecutorLedger(
            ctx.executorID(),
            ledgerSettings,
            new LedgerReader(),
            reporting.monitoring() ? ctx.metricRegistry() : null,
            message -> toDriver(ctx, message),
            LiveNative::describeTop); // the live Go Arrow memory by consumer and site
    ledger.loadListeners(Thread.currentThread().getContextClassLoader()); // failures: ERROR
    // Only this executor knows its memory cgroup's limit: a reserve the guard cannot keep under
    // it fails its start, loudly, rather than a guard that would spill native memory without end.
    String unkeepable = reserveNotBelowLimit(guard, CgroupLimit.of());
    if (unkeepable != null) {
      LOG.error(unkeepable);
      throw new IllegalArgumentException(unkeepable);
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
          guard.enabled(),
          guard.reserve(),
          guard.limit(),
          guard.limitExplicit(),
          guard.processTree(),
          offHeap);
      guardStarted = guard.enabled();
      guardHoldsSparkMemory = offHeap != null;
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
    String cdata =
        CDataOrigin.conflict(
            ctx.conf().get("spark.plugins", ""), Thread.currentThread().getContextClassLoader());
    if (cdata != null) {
      LOG.warn(cdata);
    }
    if (gauges != null) {
      if (holders.enabled()) {
        heapHolders =
            HeapHolders.start(
                holders.cutoffMillis(),
                LocalDir.of(ctx.conf()));
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
   * Why the pod guard cannot keep {@link NativePoolConf#GUARD_RESERVE} under {@code cgroupLimit},
   * the limit of this executor's memory cgroup ({@link CgroupLimit}, which only the executor can
   * read; the driver already refused a reserve not below {@link NativePoolConf#GUARD_LIMIT}), or
   * null when it can (or the guard is off, the reserve is the default, which scales with the
   * limit, or there is no limit).
   */
  static String reserveNotBelowLimit(GuardSettings guard, long cgroupLimit) {
    long limit = cgroupLimit;
    if (!guard.enabled() || guard.reserve() <= 0 || limit <= 0 || guard.reserve() < limit) {
      return null;
    }
    return "nativepool: "
        + NativePoolConf.GUARD_RESERVE.key()
        + " = "
        + Bytes.format(guard.reserve())
        + ": not below this executor's memory limit, "
        + Bytes.format(limit)
        + " (its memory cgroup's, read at its start): the pod guard would find the headroom short"
        + " at every sample and spill native memory without end. The reserve must be below the"
        + " limit: lower it, or unset it for 2% of the limit (at least 32 MiB)";
  }

  /** {@code conf} without its {@code spark.nativepool.*} keys: the monitoring defaults. */
  private static SparkConf withoutNativepoolKeys(SparkConf conf) {
    SparkConf c = conf.clone();
    for (Tuple2<String, String> kv : conf.getAll()) {
      if (kv._1().startsWith(NativePoolConf.PREFIX)) {
        c.remove(kv._1());
      }
    }
    return c;
  }

  /**
   * Tracks the task's {@code TaskMemoryManager} until it ends, so that the ledger can say what each
   * engine's consumers hold of Spark's off-heap memory ({@link ExecutorState#sparkConsumers()}),
   * and the pod guard can see a consumer it must not hold Spark's memory from.
   */
  @Override
  public void onTaskStart() {
    if (reporter != null || guardHoldsSparkMemory) {
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
