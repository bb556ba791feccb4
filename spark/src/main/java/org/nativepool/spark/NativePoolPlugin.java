package org.nativepool.spark;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Spark plugin ({@code spark.plugins=org.nativepool.spark.NativePoolPlugin}).
 *
 * <p>Executor side only (the driver side is null, so in local mode nothing is registered twice
 * under {@code plugin.org.nativepool.spark.NativePoolPlugin}): {@code init} reads the
 * {@link NativePoolSettings} ({@code spark.nativepool.*}), loads the library
 * ({@code spark.nativepool.library}, else {@code java.library.path}), configures it, and registers
 * one Dropwizard gauge per process figure (see {@link #GAUGES}). Tasks then open their pool with
 * {@link TaskPool#openForCurrentTask()}.
 */
public final class NativePoolPlugin implements SparkPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(NativePoolPlugin.class);

  /** The settings of the initialised executor plugin of this JVM, or null. */
  private static final AtomicReference<NativePoolSettings> SETTINGS = new AtomicReference<>();

  /** Gauge name → {@code PSTAT_*} index; every gauge reads {@code processStats0}. */
  static final Map<String, Integer> GAUGES =
      Map.ofEntries(
          Map.entry("reserved", NativeBridge.PSTAT_RESERVED),
          Map.entry("heldFromSpark", NativeBridge.PSTAT_HELD),
          Map.entry("slack", NativeBridge.PSTAT_SLACK),
          Map.entry("overcommit", NativeBridge.PSTAT_OVERCOMMIT),
          Map.entry("peak", NativeBridge.PSTAT_PEAK),
          Map.entry("liveTasks", NativeBridge.PSTAT_LIVE_TASKS),
          Map.entry("upstreamCalls", NativeBridge.PSTAT_UPSTREAM_CALLS),
          Map.entry("sparkSpillRequests", NativeBridge.PSTAT_SPILL_REQUESTS),
          Map.entry("sparkSpillBytesFreed", NativeBridge.PSTAT_SPILL_BYTES_FREED),
          Map.entry("lateReleases", NativeBridge.PSTAT_LATE_RELEASES),
          Map.entry("leaks", NativeBridge.PSTAT_LEAKS));

  /**
   * Gauge name → {@code ARROW_PSTAT_*} index of {@code processArrowStats0}: the Go Arrow
   * allocators' live bytes ({@code nativeAllocated}), how many are open, and the process's resident
   * set. See {@link #DRIFT_GAUGE} for the drift check.
   */
  static final Map<String, Integer> ARROW_GAUGES =
      Map.of(
          "nativeAllocated", NativeBridge.ARROW_PSTAT_ALLOCATED,
          "arrowLiveAllocators", NativeBridge.ARROW_PSTAT_LIVE_ALLOCATORS,
          "rssBytes", NativeBridge.ARROW_PSTAT_RSS);

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
   * @throws IllegalStateException if no executor plugin has been initialised in this JVM
   */
  public static NativePoolSettings settings() {
    NativePoolSettings s = SETTINGS.get();
    if (s == null) {
      throw new IllegalStateException(
          "nativepool: NativePoolPlugin is not initialised in this JVM"
              + " (set spark.plugins=" + NativePoolPlugin.class.getName() + ")");
    }
    return s;
  }

  /** None: everything happens on the executors. */
  @Override
  public DriverPlugin driverPlugin() {
    return null;
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new Executor();
  }

  /** Registers the {@link #GAUGES} in {@code registry}. */
  static void registerGauges(MetricRegistry registry) {
    for (Map.Entry<String, Integer> e : GAUGES.entrySet()) {
      int index = e.getValue();
      registry.register(e.getKey(), (Gauge<Long>) () -> NativeBridge.processStats0()[index]);
    }
  }

  /**
   * Registers the {@link #ARROW_GAUGES}, the {@link #DRIFT_GAUGE} and the {@link #GAP_GAUGE} in
   * {@code registry}; {@code
   * baselineRss} is the RSS at init (-1: unknown, the drift gauge then reads -1).
   */
  static void registerArrowGauges(MetricRegistry registry, long baselineRss) {
    for (Map.Entry<String, Integer> e : ARROW_GAUGES.entrySet()) {
      int index = e.getValue();
      registry.register(e.getKey(), (Gauge<Long>) () -> NativeBridge.processArrowStats0()[index]);
    }
    registry.register(
        DRIFT_GAUGE,
        (Gauge<Long>)
            () -> {
              long rss = NativeBridge.processArrowStats0()[NativeBridge.ARROW_PSTAT_RSS];
              if (rss < 0 || baselineRss < 0) {
                return -1L;
              }
              return rss - baselineRss - NativeBridge.processStats0()[NativeBridge.PSTAT_HELD];
            });
    registry.register(
        GAP_GAUGE,
        (Gauge<Long>)
            () ->
                NativeBridge.processStats0()[NativeBridge.PSTAT_RESERVED]
                    - NativeBridge.processArrowStats0()[NativeBridge.ARROW_PSTAT_ALLOCATED]);
  }

  /** The executor side; see the class comment. */
  private static final class Executor implements ExecutorPlugin {
    private NativePoolSettings settings;

    @Override
    public void init(PluginContext ctx, Map<String, String> extraConf) {
      NativePoolSettings s = NativePoolSettings.fromConf(ctx.conf());
      String source = NativeLoader.ensureLoaded(s.library());
      NativeBridge.configure0(s.logging(), s.thresholds());
      NativeBridge.configureArrow0(s.allocationSites());
      registerGauges(ctx.metricRegistry());
      registerArrowGauges(
          ctx.metricRegistry(), NativeBridge.processArrowStats0()[NativeBridge.ARROW_PSTAT_RSS]);
      settings = s;
      SETTINGS.set(s);
      LOG.info("nativepool: executor {} uses {} ({})", ctx.executorID(), s, source);
    }

    /** Forgets this executor's settings and turns the process-wide logging options off. */
    @Override
    public void shutdown() {
      if (settings != null && SETTINGS.compareAndSet(settings, null)) {
        NativeBridge.configure0(false, new long[0]);
        NativeBridge.configureArrow0(false);
      }
    }
  }
}
