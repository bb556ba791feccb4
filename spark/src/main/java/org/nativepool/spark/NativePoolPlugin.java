package org.nativepool.spark;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;
import org.nativepool.spark.arrow.ArrowProcessStat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Spark plugin ({@code spark.plugins=org.nativepool.spark.NativePoolPlugin}).
 *
 * <p>The executor side's {@code init} reads the {@link NativePoolSettings} ({@code
 * spark.nativepool.*}), loads the library ({@code spark.nativepool.library}, else the jar's copy,
 * see {@link NativeLoader}; a failure disables native pools in the executor instead of killing
 * it), routes the Go side's logs to log4j ({@link NativeLog}), configures the library (including
 * the process memory policy: glibc's mmap threshold and the Go runtime's soft memory limit, {@link
 * NativeBridge#configureRuntime0}), registers one Dropwizard gauge per process figure (see {@link
 * #GAUGES}), and starts the {@link ExecutorReporter}, which sends the figures to the driver side
 * every heartbeat interval and logs the {@value ReportingSettings#LOG_INTERVAL} summary line. Tasks
 * then open their pool with {@link TaskPool#openForCurrentTask()}.
 *
 * <p>The driver side is {@link NativePoolDriverPlugin}: at startup it checks that the library
 * loads and has the jar's version ({@link NativeLoader#checkOnDriver}), then keeps per-executor and
 * total gauges for Spark's metrics system (PrometheusServlet included), stage peaks, event-log
 * events and {@value ReportingSettings#AUTO_OVERHEAD}. In local mode both sides register a source
 * named {@code plugin.org.nativepool.spark.NativePoolPlugin}; their gauge names differ, so they
 * coexist.
 */
public final class NativePoolPlugin implements SparkPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(NativePoolPlugin.class);

  /** The settings of the initialised executor plugin of this JVM, or null. */
  private static final AtomicReference<NativePoolSettings> SETTINGS = new AtomicReference<>();

  /**
   * Why this executor's native pools are disabled (the library did not load, or a setting did not
   * parse), or null. Set by the executor side's {@code init} instead of throwing, which would make
   * Spark kill the executor and start another one that fails the same way.
   */
  private static final AtomicReference<RuntimeException> DISABLED = new AtomicReference<>();

  /** Gauge name → figure of {@code processStats0}: one gauge per {@link ProcessStat}. */
  static final Map<String, ProcessStat> GAUGES =
      gaugeTable(ProcessStat.values(), ProcessStat::gaugeName);

  /**
   * Gauge name → figure of {@code processArrowStats0}: the {@link ArrowProcessStat}s that have a
   * gauge name (the Go Arrow allocators' live bytes, {@code nativeAllocated}, how many are open,
   * and the process's resident set). See {@link #DRIFT_GAUGE} for the drift check.
   */
  static final Map<String, ArrowProcessStat> ARROW_GAUGES =
      gaugeTable(ArrowProcessStat.values(), ArrowProcessStat::gaugeName);

  /**
   * {@code rssDrift} = RSS now − RSS when the plugin initialised − bytes the pools hold from Spark
   * now: how far the process has grown beyond what Spark was told. A check to watch over time,
   * never a gate: RSS lags allocation, counts pages, and includes the JVM's own growth (heap,
   * metaspace, Netty), and gating on measured memory does not prevent overshoot (Comet #5983). -1
   * if RSS cannot be read.
   */
  static final String DRIFT_GAUGE = "rssDrift";

  /**
   * {@code allocationGap} = bytes reserved by native consumers − bytes the accounted Arrow
   * allocators hold: what is reserved but not (yet) in an Arrow buffer (chunk and reservation
   * slack, operators' reservations for other memory). Every allocated byte is charged before it is
   * handed out, so the gap is never negative at an instant; the gauge reads the two figures one
   * after the other, so a free landing between the reads can make one sample slightly negative.
   */
  static final String GAP_GAUGE = "allocationGap";

  /** Public no-argument constructor, as Spark instantiates plugins by reflection. */
  public NativePoolPlugin() {}

  /**
   * The settings of this executor's plugin.
   *
   * @throws IllegalStateException if no executor plugin has been initialised in this JVM, or if its
   *     native pools are disabled: then with the message of the load (or settings) failure, the
   *     same on every call, so every task asking for a native pool fails with it
   */
  public static NativePoolSettings settings() {
    RuntimeException disabled = DISABLED.get();
    if (disabled != null) {
      throw new IllegalStateException(disabled.getMessage(), disabled);
    }
    NativePoolSettings s = SETTINGS.get();
    if (s == null) {
      throw new IllegalStateException(
          "nativepool: NativePoolPlugin is not initialised in this JVM"
              + " (set spark.plugins=" + NativePoolPlugin.class.getName() + ")");
    }
    return s;
  }

  /** The driver side: a new {@link NativePoolDriverPlugin}. */
  @Override
  public DriverPlugin driverPlugin() {
    return new NativePoolDriverPlugin();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new Executor();
  }

  /** Gauge name → figure, for the figures {@code name} gives a name (non-null), in enum order. */
  private static <E extends Enum<E>> Map<String, E> gaugeTable(
      E[] stats, Function<E, String> name) {
    Map<String, E> m = new LinkedHashMap<>();
    for (E s : stats) {
      String g = name.apply(s);
      if (g != null) {
        m.put(g, s);
      }
    }
    return Collections.unmodifiableMap(m);
  }

  /** Registers one gauge per entry of {@code gauges}, each reading its figure from {@code read}. */
  private static <E extends Enum<E>> void register(
      MetricRegistry registry, Map<String, E> gauges, Supplier<long[]> read) {
    for (Map.Entry<String, E> e : gauges.entrySet()) {
      int index = e.getValue().ordinal();
      registry.register(e.getKey(), (Gauge<Long>) () -> read.get()[index]);
    }
  }

  /** Registers the {@link #GAUGES} in {@code registry}. */
  static void registerGauges(MetricRegistry registry) {
    register(registry, GAUGES, NativeBridge::processStats0);
  }

  /**
   * Registers the {@link #ARROW_GAUGES}, the {@link #DRIFT_GAUGE} and the {@link #GAP_GAUGE} in
   * {@code registry}; {@code
   * baselineRss} is the RSS at init (-1: unknown, the drift gauge then reads -1).
   */
  static void registerArrowGauges(MetricRegistry registry, long baselineRss) {
    register(registry, ARROW_GAUGES, NativeBridge::processArrowStats0);
    registry.register(
        DRIFT_GAUGE,
        (Gauge<Long>)
            () -> {
              long rss = NativeBridge.processArrowStats0()[ArrowProcessStat.RSS.ordinal()];
              if (rss < 0 || baselineRss < 0) {
                return -1L;
              }
              return rss - baselineRss - NativeBridge.processStats0()[ProcessStat.HELD.ordinal()];
            });
    registry.register(
        GAP_GAUGE,
        (Gauge<Long>)
            () ->
                NativeBridge.processStats0()[ProcessStat.RESERVED.ordinal()]
                    - NativeBridge.processArrowStats0()[ArrowProcessStat.ALLOCATED.ordinal()]);
  }

  /** Sends a ledger crossing or growth report to the driver side; a failure is logged. */
  private static void toDriver(PluginContext ctx, Object message) {
    try {
      ctx.send(message);
    } catch (java.io.IOException | RuntimeException e) {
      LOG.debug("nativepool: cannot send {} to the driver", message, e);
    }
  }

  /** The executor side; see the class comment. */
  private static final class Executor implements ExecutorPlugin {
    private NativePoolSettings settings;
    private ExecutorReporter reporter;
    private ExecutorLedger ledger;
    /** Why this plugin disabled native pools, or null. */
    private RuntimeException disabled;

    /**
     * Never throws for a library that does not load or a setting that does not parse: it logs the
     * reason once and disables native pools in this executor ({@link #settings()} throws it to
     * every task), so the job fails after Spark's task retries instead of executors crash-looping.
     */
    @Override
    public void init(PluginContext ctx, Map<String, String> extraConf) {
      NativePoolSettings s;
      ReportingSettings reporting;
      ExecutorLedger l;
      String source;
      try {
        s = NativePoolSettings.fromConf(ctx.conf());
        reporting = ReportingSettings.fromConf(ctx.conf());
        l =
            new ExecutorLedger(
                ctx.executorID(),
                LedgerSettings.fromConf(ctx.conf()),
                new MemoryLedger(),
                ctx.metricRegistry(),
                message -> toDriver(ctx, message),
                LiveNative::describeTop); // the live Go Arrow memory by consumer and site
        l.loadListeners(Thread.currentThread().getContextClassLoader());
        source = NativeLoader.ensureLoaded(s.library());
      } catch (IllegalStateException | IllegalArgumentException e) {
        disabled = e;
        DISABLED.set(e);
        LOG.error(
            "nativepool: native pools disabled on executor {}; every task asking for one fails: {}",
            ctx.executorID(),
            e.getMessage());
        return;
      }
      NativeLog.configure(NativePoolSettings.logLevel(ctx.conf())); // first: Go's records reach log4j
      NativeBridge.configure0(s.logging(), s.thresholds());
      NativeBridge.configureArrow0(s.allocationSites());
      CallerSites.setEnabled(s.allocationSites()); // the Java callers, for Go's sites and leaks
      NativeBridge.configureRuntime0(
          s.mallocMmapThreshold(), s.goMemoryLimit(), s.memoryOverhead());
      long baselineRss = NativeBridge.processArrowStats0()[ArrowProcessStat.RSS.ordinal()];
      registerGauges(ctx.metricRegistry());
      registerArrowGauges(ctx.metricRegistry(), baselineRss);
      settings = s;
      SETTINGS.set(s);
      ledger = l;
      ExecutorLedger.install(l);
      reporter = ExecutorReporter.start(ctx, reporting, baselineRss, l);
      LOG.info("nativepool: executor {} uses {} ({})", ctx.executorID(), s, source);
    }

    /** Sends a sample early, so that the driver's stage peaks see the task (see reporter). */
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
     * Stops the reporting thread, forgets this executor's settings (or its failure) and turns the
     * process-wide logging options off.
     */
    @Override
    public void shutdown() {
      if (reporter != null) {
        reporter.stop();
      }
      if (ledger != null) {
        ExecutorLedger.uninstall(ledger);
      }
      if (disabled != null) {
        DISABLED.compareAndSet(disabled, null);
      }
      if (settings != null && SETTINGS.compareAndSet(settings, null)) {
        NativeBridge.configure0(false, new long[0]);
        NativeBridge.configureArrow0(false);
      }
    }
  }
}
