package org.nativepool.spark.driver;

import com.codahale.metrics.MetricRegistry;
import java.util.Collections;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.nativepool.spark.config.HeapHolderSettings;
import org.nativepool.spark.config.LocalDir;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.config.ReportingSettings;
import org.nativepool.spark.config.SparkLine;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.ExecutorSampleEvent;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.events.GuardEpisodeEvent;
import org.nativepool.spark.events.HeapHoldersEvent;
import org.nativepool.spark.events.HeapHoldersRequest;
import org.nativepool.spark.events.LedgerCrossingEvent;
import org.nativepool.spark.events.ReservedThresholdEvent;
import org.nativepool.spark.events.StagePeaksEvent;
import org.nativepool.spark.jni.LibraryLoader;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.ledger.DriverHeapWatch;
import org.nativepool.spark.ledger.HeapHolders;
import org.nativepool.spark.ui.NativeMemoryListener;
import org.nativepool.spark.ui.NativeMemoryPage;
import org.nativepool.spark.ui.NativeMemoryTimeline;
import org.nativepool.spark.ui.NativeMemoryWeb;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver side of {@code NativePoolPlugin}: it gathers the executors' figures for Spark's
 * metrics system and event log, diagnoses each executor's end, serves the Native Memory page, and
 * may choose the executors' memoryOverhead. This file owns the plugin's life (init, receive,
 * shutdown) and routes what arrives to the parts that own each job:
 *
 * <ul>
 *   <li>{@link ExecutorRegistry}: the live executors and their gauges, {@code executor.<id>.*} and
 *       {@code total.*};
 *   <li>{@link StagePeakTracker}: each stage's native peaks, posted as a {@link StagePeaksEvent},
 *       and the {@code stagePeak*} gauges;
 *   <li>{@link SampleEvents}: which samples reach the event log, and so the Native Memory page;
 *   <li>{@link GuardEpisodes}: the executors' pod guard episodes and the {@code guard.*} gauges;
 *   <li>{@link ExecutorEnds}: the evidence kept per executor, the diagnosis of each removal and
 *       the {@code lost.*} gauges;
 *   <li>{@link HeapHolderRequests}: the page's "who holds the heap" action, for the driver and
 *       each executor, behind Spark's modify permissions;
 *   <li>{@link DriverCheck} (the library, version and every setting, at start), {@link StartupLine}
 *       (the one line at WARN saying what runs) and {@link AutoOverhead}.
 * </ul>
 *
 * <p><b>The driver's heap.</b> With {@link NativePoolConf#HEAP_HOLDERS} on, the driver keeps this
 * JVM's recording of Old Object Samples ({@link HeapHolders}) and checks its own heap ({@link
 * DriverHeapWatch}): a rise is reported as a {@link GrowthReportEvent} of executor {@code driver}
 * naming the heap's holders, logged at WARN and posted.
 *
 * <p><b>Figures.</b> Each executor sends an {@link ExecutorSample} once per heartbeat interval over
 * plugin RPC ({@link #receive}); the driver's metric source ({@code
 * plugin.org.nativepool.spark.NativePoolPlugin}, so Spark's PrometheusServlet serves it at {@code
 * /metrics/prometheus} with no JMX exporter) shows them ({@link ExecutorRegistry}).
 *
 * <p><b>Local mode.</b> The executor plugin lives in the driver's JVM, and both sides register a
 * source named {@code plugin.org.nativepool.spark.NativePoolPlugin} under executor id {@code
 * driver}. Spark's metrics registry takes each plugin registry as a child and copies its gauges one
 * by one, so the two coexist as long as no gauge name is in both: the executor's names are bare
 * ({@code reserved}), the driver's all start with {@code executor.}, {@code total.}, {@code guard.}
 * or {@code lost.}.
 *
 * <p><b>Native Memory page.</b> With Spark's UI on, the driver adds a Native Memory tab ({@code
 * /nativememory/}, {@link NativeMemoryWeb}): each executor's ledger over time with its limit, the
 * off-heap budget, crossings, growth reports, guard episodes and its end, and the stages' native
 * peaks, drawn from the events below as they are posted; the History Server draws the same page
 * from the event log ({@code ui.NativeMemoryHistoryPlugin}).
 *
 * <p><b>Event log.</b> Posted to Spark's listener bus, so the event log keeps them and the History
 * Server replays them: one sample of each executor per {@link
 * NativePoolConf#EVENT_LOG_SAMPLE_EVERY} heartbeat intervals ({@link ExecutorSampleEvent}), and a
 * few more at its start, task ends and stage ends ({@link SampleEvents}), every
 * crossing of a {@link NativePoolConf#EXECUTOR_RESERVED_THRESHOLDS} level by an executor's reserved
 * bytes ({@link ReservedThresholdEvent}), each stage's peaks, the executors' ledger crossings and
 * growth reports, their pod guard episodes, and the diagnosis of each executor Spark removed.
 *
 * <p><b>memoryOverhead.</b> With {@link NativePoolConf#AUTO_OVERHEAD}, {@link #init} sets {@code
 * spark.executor.memoryOverhead} by {@link AutoOverhead}'s formula before SparkContext builds the
 * default ResourceProfile, never lower than the user's, and logs the choice.
 *
 * <p>Safe for concurrent use: samples arrive on Spark's RPC threads, listener events on the
 * listener bus's thread, gauge reads on the metrics sinks' threads.
 */
public final class DriverSide implements DriverPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(DriverSide.class);

  private SparkContext sc;
  private ReportingSettings settings;
  private long[] thresholds = new long[0];

  // The parts, made by init.
  private ExecutorRegistry executors;
  private StagePeakTracker stagePeaks;
  private SampleEvents sampleEvents;
  private final GuardEpisodes guard = new GuardEpisodes();
  private ExecutorEnds ends;
  private HeapHolders heapHolders;
  private DriverHeapWatch heapWatch;
  private HeapHolderRequests holderRequests;

  /** Public no-argument constructor; {@code NativePoolPlugin.driverPlugin()} makes one. */
  public DriverSide() {}

  /**
   * Reads the settings, applies {@link NativePoolConf#AUTO_OVERHEAD}, registers the total gauges
   * (so that Spark registers the source after {@code init}) and a listener for stages and executor
   * removals.
   */
  @Override
  public Map<String, String> init(SparkContext sc, PluginContext ctx) {
    // A bad library, version or setting fails the SparkContext here, once, with the reason.
    ClassLoader loader = Thread.currentThread().getContextClassLoader();
    DriverCheck.Outcome check =
        DriverCheck.run(sc.getConf(), loader != null ? loader : DriverSide.class.getClassLoader());
    for (String warning : check.settings().warnings()) {
      LOG.warn(warning);
    }
    this.sc = sc;
    this.settings = check.settings().reporting();
    this.thresholds = settings.executorThresholds();
    if (settings.autoOverhead()) {
      AutoOverhead.Choice c = AutoOverhead.choose(ctx.conf());
      if (c.changes()) {
        ctx.conf().set(AutoOverhead.KEY, c.overheadMib() + "m");
      }
      LOG.info(
          "nativepool: {}: {} = {}m ({}; {})",
          NativePoolConf.AUTO_OVERHEAD.key(),
          AutoOverhead.KEY,
          c.overheadMib(),
          c.formula(),
          c.userMib() < 0
              ? "not set by the user"
              : c.changes()
                  ? "raised from the user's " + c.userMib() + "m"
                  : "the user's " + c.userMib() + "m kept");
    }
    MetricRegistry registry = ctx.metricRegistry();
    executors = new ExecutorRegistry(registry, thresholds.length);
    stagePeaks = new StagePeakTracker(settings.heartbeatMillis(), this::post);
    sampleEvents =
        new SampleEvents(settings.eventLogSampleEvery() * settings.heartbeatMillis(), this::post);
    ends = new ExecutorEnds(ctx.conf(), settings, executors::isRemoved, this::post);
    executors.registerTotals();
    stagePeaks.registerTotals(registry);
    guard.register(registry);
    ends.register(registry);
    sc.addSparkListener(new Listener());
    HeapHolderSettings holders = HeapHolderSettings.fromConf(ctx.conf());
    if (holders.enabled()) {
      heapHolders =
          HeapHolders.start(
              holders.cutoffMillis(),
              LocalDir.of(ctx.conf()));
      if (heapHolders != null) {
        heapWatch = DriverHeapWatch.start(holders, heapHolders, this::post);
      }
    }
    holderRequests =
        new HeapHolderRequests(
            holders,
            user -> sc.env().securityManager().checkModifyPermissions(user),
            id -> executors.live().stream().anyMatch(v -> v.id.equals(id)),
            heapHolders,
            this::post);
    if (sc.ui().isDefined()) {
      attachPage(sc, holderRequests);
    }
    LOG.info("nativepool: driver side started ({})", settings);
    LOG.warn(
        StartupLine.of(
            sc.getConf(),
            check.settings(),
            SparkLine.current(),
            LibraryLoader.release(),
            sc.uiWebUrl().isDefined() ? sc.uiWebUrl().get() : null));
    return Collections.emptyMap();
  }

  /**
   * Adds the Native Memory tab to the live UI ({@link NativeMemoryWeb#PATH}), from the plugin's
   * events on the listener bus: the same events, and so the same page, as the History Server's.
   */
  private static void attachPage(SparkContext sc, HeapHolderRequests requests) {
    NativeMemoryListener pageListener = new NativeMemoryListener(new NativeMemoryTimeline());
    if (sc.conf().getBoolean("spark.memory.offHeap.enabled", false)) {
      pageListener
          .timeline()
          .setOffHeapBudget(sc.conf().getSizeAsBytes("spark.memory.offHeap.size", "0"));
    }
    sc.addSparkListener(pageListener);
    NativeMemoryWeb.attach(
        sc.ui().get(),
        () -> NativeMemoryPage.content(pageListener.timeline().snapshot(), requests.enabled()),
        requests.enabled() ? requests::request : null);
  }

  /**
   * Takes an {@link ExecutorSample}, a {@link GuardEpisodeEvent}, a ledger crossing or growth
   * report, an executor's heap holders; anything else is logged and ignored. Returns null, but to
   * an executor's poll for an on-demand request ({@link HeapHoldersRequest#poll}): the request, or
   * null.
   */
  @Override
  public Object receive(Object message) {
    if (message instanceof ExecutorSample s) {
      onSample(s);
    } else if (message instanceof GuardEpisodeEvent g) {
      onGuardEpisode(g);
    } else if (message instanceof LedgerCrossingEvent c) {
      ends.keep(c.getExecutorId(), ev -> ev.add(c));
      post(c); // the event log keeps it
    } else if (message instanceof GrowthReportEvent g) {
      ends.keep(g.getExecutorId(), ev -> ev.add(g));
      post(g); // the event log keeps it
    } else if (message instanceof HeapHoldersRequest r && r.poll()) {
      return holderRequests.poll(r.executorId());
    } else if (message instanceof HeapHoldersEvent h) {
      ends.keep(h.getExecutorId(), ev -> ev.add(h));
      holderRequests.received(h);
    } else {
      LOG.warn("nativepool: driver side got an unknown message {}", message);
    }
    return null;
  }

  /** Counts a pod guard episode in the {@code guard.*} gauges, logs it, keeps it and posts it. */
  private void onGuardEpisode(GuardEpisodeEvent g) {
    guard.count(g);
    ends.keep(g.getExecutorId(), ev -> ev.add(g));
    post(g); // the event log keeps it
  }

  /**
   * An executor's sample: its gauges, its evidence, the stage peaks, the threshold crossings of its
   * reserved bytes, and at most one sample event per executor per {@link
   * NativePoolConf#EVENT_LOG_SAMPLE_EVERY} heartbeat intervals.
   */
  private void onSample(ExecutorSample s) {
    long now = System.currentTimeMillis();
    ExecutorRegistry.View e = executors.admit(s, now);
    if (e == null) {
      return; // in flight when Spark removed the executor (Spark never reuses an executor id)
    }
    ends.keep(s.executorId(), ev -> ev.add(s));
    stagePeaks.add(e, s, executors.live());
    stagePeaks.postDue(now, false);
    crossings(e, s, s.figure(ExecutorSample.INTERVAL_PEAK_RESERVED, 0));
    sampleEvents.onSample(e, s); // the timer's, and the start's and task ends', rate-limited
    executors.forgetStale(now, 10 * settings.heartbeatMillis());
  }

  /** Posts a crossing for each threshold the executor's reserved bytes went over or under. */
  private void crossings(ExecutorRegistry.View e, ExecutorSample s, long peakReserved) {
    long reserved = s.figure(ProcessStat.RESERVED.gaugeName(), 0);
    synchronized (e) {
      for (int i = 0; i < thresholds.length; i++) {
        long level = thresholds[i];
        if (!e.above[i] && peakReserved >= level) {
          e.above[i] = true;
          ReservedThresholdEvent c =
              new ReservedThresholdEvent(e.id, s.timeMillis(), level, true, peakReserved);
          ends.keep(e.id, ev -> ev.add(c));
          post(c);
        }
        if (e.above[i] && reserved < level) {
          e.above[i] = false;
          ReservedThresholdEvent c =
              new ReservedThresholdEvent(e.id, s.timeMillis(), level, false, reserved);
          ends.keep(e.id, ev -> ev.add(c));
          post(c);
        }
      }
    }
  }

  /** Spark removed executor {@code id}: its late samples are dropped, its gauges go. */
  void onExecutorRemoved(String id) {
    executors.remove(id);
  }

  /**
   * Posts the stage peaks still waiting for their grace period; stops the heap check and releases
   * this side's share of the heap holders' recording.
   */
  @Override
  public void shutdown() {
    if (stagePeaks != null) {
      stagePeaks.postDue(System.currentTimeMillis(), true);
    }
    if (heapWatch != null) {
      heapWatch.close();
      heapWatch = null;
    }
    if (holderRequests != null) {
      holderRequests.stop();
    }
    if (heapHolders != null) {
      heapHolders.release();
      heapHolders = null;
    }
  }

  private void post(SparkListenerEvent event) {
    sc.listenerBus().post(event);
  }

  /**
   * Stages start and end the stage peaks; an added executor's container is kept for its diagnosis;
   * a removed executor's gauges go and its end is diagnosed;
   * tasks that failed for lack of memory are kept for that diagnosis.
   */
  private final class Listener extends SparkListener {
    @Override
    public void onStageSubmitted(SparkListenerStageSubmitted event) {
      stagePeaks.stageSubmitted(event.stageInfo());
    }

    @Override
    public void onStageCompleted(SparkListenerStageCompleted event) {
      stagePeaks.stageCompleted(event.stageInfo(), executors.live());
      sampleEvents.stageCompleted(executors.live()); // a point at each stage's end
    }

    @Override
    public void onExecutorAdded(SparkListenerExecutorAdded event) {
      // YARN's executors carry their container's id among their attributes
      scala.Option<String> c = event.executorInfo().attributes().get("CONTAINER_ID");
      ends.executorAdded(event.executorId(), c.isDefined() ? c.get() : null);
    }

    @Override
    public void onExecutorRemoved(SparkListenerExecutorRemoved event) {
      DriverSide.this.onExecutorRemoved(event.executorId());
      ends.diagnoseRemoval(event.executorId(), event.time(), event.reason());
    }

    @Override
    public void onTaskEnd(SparkListenerTaskEnd event) {
      ends.onTaskEnd(event);
    }

    @Override
    public void onApplicationEnd(SparkListenerApplicationEnd event) {
      ends.applicationEnded();
    }
  }
}
