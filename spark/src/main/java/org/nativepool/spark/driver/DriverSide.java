package org.nativepool.spark.driver;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricFilter;
import com.codahale.metrics.MetricRegistry;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.ToLongFunction;
import org.apache.spark.ExceptionFailure;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskEndReason;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.scheduler.TaskInfo;
import org.nativepool.spark.config.ContainerSize;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.config.ReportingSettings;
import org.nativepool.spark.events.ExecutorDiagnosisEvent;
import org.nativepool.spark.events.ExecutorDiagnosisEvent.Cause;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.ExecutorSampleEvent;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.events.GuardEpisodeEvent;
import org.nativepool.spark.events.LedgerCrossingEvent;
import org.nativepool.spark.events.ReservedThresholdEvent;
import org.nativepool.spark.events.StagePeaksEvent;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.ledger.ExecutorLedger;
import org.nativepool.spark.ledger.LedgerReader;
import org.nativepool.spark.ui.NativeMemoryListener;
import org.nativepool.spark.ui.NativeMemoryPage;
import org.nativepool.spark.ui.NativeMemoryTimeline;
import org.nativepool.spark.ui.NativeMemoryWeb;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver side of {@code NativePoolPlugin}: it gathers the executors' figures for Spark's
 * metrics system and event log, and may choose the executors' memoryOverhead.
 *
 * <p><b>Figures.</b> Each executor sends an {@link ExecutorSample} once per heartbeat interval over
 * plugin RPC ({@link #receive}). For each executor, the driver's metric source ({@code
 * plugin.org.nativepool.spark.NativePoolPlugin}, so Spark's PrometheusServlet serves it at {@code
 * /metrics/prometheus} with no JMX exporter) gets one gauge per figure, {@code
 * executor.<id>.<figure>} (the figures are the executor gauges of the README's metrics table), plus
 * {@code executor.<id>.stagePeakReserved} and {@code .stagePeakHeld}; the totals over live
 * executors are {@code total.<figure>} for the additive figures ({@link #TOTALS}), {@code
 * total.executors}, {@code total.stagePeakReserved} and {@code total.stagePeakHeld}. An executor's
 * gauges go when Spark removes it ({@code onExecutorRemoved}) or when it has sent nothing for ten
 * heartbeat intervals. Gauges show the last sample: they are as old as one heartbeat interval.
 *
 * <p><b>Local mode.</b> The executor plugin lives in the driver's JVM, and both sides register a
 * source named {@code plugin.org.nativepool.spark.NativePoolPlugin} under executor id {@code
 * driver}. Spark's metrics registry takes each plugin registry as a child and copies its gauges one
 * by one, so the two coexist as long as no gauge name is in both: the executor's names are bare
 * ({@code reserved}), the driver's all start with {@code executor.}, {@code total.}, {@code guard.}
 * or {@code lost.}.
 *
 * <p><b>Stage peaks.</b> The highest reserved and held bytes per executor and in total are kept per
 * stage from the samples' interval peaks (an interval's peak includes the peak of every task pool
 * that closed in it), from the stage's submission until two heartbeat intervals after its end, so
 * that the samples covering its last moments count; then they are posted as a {@link
 * StagePeaksEvent}. The {@code stagePeak*} gauges show the highest figures since the last stage
 * completed: they start again from 0 whenever one does.
 *
 * <p><b>Pod guard.</b> Each executor sends a {@link GuardEpisodeEvent} when an episode of its pod
 * guard ends (the headroom under its memory limit was below the guard's reserve, and native memory
 * gave way). The driver posts it to the event log, logs a WARN line ({@link
 * GuardEpisodeEvent#summary()}) and counts it in three gauges over the application's life, removed
 * executors included: {@value #GUARD_EPISODES}, {@value #GUARD_SPILLED} and {@value
 * #GUARD_LAST_REACTION}.
 *
 * <p><b>Why an executor ended.</b> When Spark removes an executor ({@code
 * SparkListenerExecutorRemoved}), the driver diagnoses the removal ({@link ExecutorDiagnosis}: the
 * reason Spark gave, read as each cluster manager writes it, against what the executor reported
 * before its end and the tasks that failed on it for lack of memory) and posts an {@link
 * ExecutorDiagnosisEvent}, logging its line at WARN ({@link ExecutorDiagnosisEvent#describe()}; at
 * INFO for an executor that ended on purpose), and counts it in the gauge {@code lost.<cause>}
 * ({@code lost.containerKilled}, {@code lost.jvmOutOfMemory}, …, {@code lost.undecided}). For this
 * it keeps, per executor, at most the bounded past of {@link ExecutorEvidence} (about 30 KB: a
 * minute of samples at one per second, nine more minutes at one per 30 s, and the last few
 * episodes, crossings, growth reports and memory failures), and that of the last {@value
 * #REMOVED_KEPT} removed executors, so that a second removal of the same executor with an exit code
 * (standalone reports the dropped connection first) revises the diagnosis.
 *
 * <p><b>Native Memory page.</b> With Spark's UI on, the driver adds a Native Memory tab ({@code
 * /nativememory/}, {@link NativeMemoryWeb}): each executor's ledger over time with its limit, the
 * off-heap budget, crossings, growth reports, guard episodes and its end, and the stages' native
 * peaks, drawn from the events below as they are posted; the History Server draws the same page
 * from the event log ({@code ui.NativeMemoryHistoryPlugin}).
 *
 * <p><b>Event log.</b> Posted to Spark's listener bus, so the event log keeps them and the History
 * Server replays them: one sample of each executor per {@link
 * NativePoolConf#EVENT_LOG_SAMPLE_EVERY} heartbeat intervals ({@link ExecutorSampleEvent}), every
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

  /**
   * The figures whose sum over executors means something, each a {@code total.<figure>} gauge:
   * current bytes and counts, cumulative counters. Peaks, limits and settings are per executor
   * only.
   */
  static final List<String> TOTALS =
      List.of(
          ProcessStat.LIVE_TASKS.gaugeName(),
          ProcessStat.RESERVED.gaugeName(),
          ProcessStat.HELD.gaugeName(),
          ProcessStat.SLACK.gaugeName(),
          ProcessStat.OVERCOMMIT.gaugeName(),
          ProcessStat.UPSTREAM_CALLS.gaugeName(),
          ProcessStat.SPILL_REQUESTS.gaugeName(),
          ProcessStat.SPILL_BYTES_FREED.gaugeName(),
          ProcessStat.LATE_RELEASES.gaugeName(),
          ProcessStat.SPILL_REENTRIES.gaugeName(),
          ProcessStat.LEAKS.gaugeName(),
          ProcessStat.LEAKED_BYTES.gaugeName(),
          ProcessStat.LEAKED_RESIDENT.gaugeName(),
          ExecutorLedger.GAUGE_PREFIX + LedgerReader.RSS,
          ExecutorLedger.GAUGE_PREFIX + LedgerReader.UNEXPLAINED,
          ProcessStat.GO_MAPPED.gaugeName(),
          ProcessStat.GO_HEAP_RETURNS.gaugeName(),
          ProcessStat.GO_HEAP_RETURNED_BYTES.gaugeName(),
          "nativeAllocated",
          "arrowLiveAllocators",
          "rssBytes");

  /** Gauge name suffix: the highest reserved bytes since the last stage completed. */
  static final String STAGE_PEAK_RESERVED = "stagePeakReserved";

  /** Gauge name suffix: the highest held bytes since the last stage completed. */
  static final String STAGE_PEAK_HELD = "stagePeakHeld";

  /** Gauge: pod guard episodes the executors reported, over the application's life. */
  static final String GUARD_EPISODES = "guard.episodes";

  /** Gauge: bytes native consumers spilled in those episodes. */
  static final String GUARD_SPILLED = "guard.spilledBytes";

  /**
   * Gauge: the reaction time of the last episode reported (ms, rounded; -1 before any, or when the
   * last one spilled nothing).
   */
  static final String GUARD_LAST_REACTION = "guard.lastReactionMillis";

  /** Gauge name prefix of the removed executors counted by cause: {@code lost.<cause key>}. */
  static final String LOST_PREFIX = "lost.";

  /** How many removed executors' evidence and diagnoses are kept, for a revised diagnosis. */
  static final int REMOVED_KEPT = 64;

  private SparkContext sc;
  private MetricRegistry registry;
  private ReportingSettings settings;
  private long[] thresholds = new long[0];

  /** Live executors by Spark's executor id. */
  private final Map<String, ExecutorView> executors = new ConcurrentHashMap<>();

  /** Ids of executors Spark removed: their late samples are dropped. */
  private final Set<String> removed = ConcurrentHashMap.newKeySet();

  /** Running stages ("id.attempt") → their peaks. Guarded by this. */
  private final Map<String, StagePeaks> stages = new HashMap<>();

  /**
   * Completed stages whose peaks event waits for the samples covering their last moments (see
   * {@link #postDueStages}), oldest first. Guarded by this.
   */
  private final List<StagePeaks> completing = new ArrayList<>();

  /** The {@code total.stagePeak*} figures. Guarded by this; read by gauges without it. */
  private volatile long totalStagePeakReserved;

  private volatile long totalStagePeakHeld;

  /** The {@code guard.*} gauges' figures. */
  private final AtomicLong guardEpisodes = new AtomicLong();

  private final AtomicLong guardSpilled = new AtomicLong();
  private volatile long guardLastReactionMillis = -1;

  /** What is kept of each executor to diagnose its end, removed ones included (bounded). */
  private final Map<String, ExecutorEvidence> evidence = new ConcurrentHashMap<>();

  /** The last diagnosis of each removed executor, oldest removal first. Guarded by itself. */
  private final LinkedHashMap<String, ExecutorDiagnosisEvent> diagnosed = new LinkedHashMap<>();

  /** Removed executors by their last diagnosis's cause: the {@code lost.*} gauges. */
  private final Map<Cause, AtomicLong> lost = new EnumMap<>(Cause.class);

  /**
   * Whether Spark posted the application's end: the executors removed after it are stopped with the
   * application, not lost.
   */
  private volatile boolean applicationEnded;

  /** The container size Spark computed, the limit of executors without a pod guard reading. */
  private ExecutorDiagnosis.ContainerLimit container = ExecutorDiagnosis.ContainerLimit.NONE;

  {
    for (Cause c : Cause.values()) {
      lost.put(c, new AtomicLong());
    }
  }

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
    DriverCheck.run(sc.getConf());
    this.sc = sc;
    this.registry = ctx.metricRegistry();
    this.settings = ReportingSettings.fromConf(ctx.conf());
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
    for (String figure : TOTALS) {
      registry.register("total." + figure, (Gauge<Long>) () -> total(figure));
    }
    registry.register("total.executors", (Gauge<Long>) () -> (long) executors.size());
    registry.register("total." + STAGE_PEAK_RESERVED, (Gauge<Long>) () -> totalStagePeakReserved);
    registry.register("total." + STAGE_PEAK_HELD, (Gauge<Long>) () -> totalStagePeakHeld);
    registry.register(GUARD_EPISODES, (Gauge<Long>) guardEpisodes::get);
    registry.register(GUARD_SPILLED, (Gauge<Long>) guardSpilled::get);
    registry.register(GUARD_LAST_REACTION, (Gauge<Long>) () -> guardLastReactionMillis);
    for (Map.Entry<Cause, AtomicLong> e : lost.entrySet()) {
      registry.register(LOST_PREFIX + e.getKey().key(), (Gauge<Long>) e.getValue()::get);
    }
    String master = ctx.conf().get("spark.master", "");
    if (master.startsWith("yarn") || master.startsWith("k8s")) {
      container =
          new ExecutorDiagnosis.ContainerLimit(
              ContainerSize.bytes(ctx.conf()), ContainerSize.describe(ctx.conf()));
    }
    sc.addSparkListener(new Listener());
    if (sc.ui().isDefined()) {
      attachPage(sc);
    }
    LOG.info("nativepool: driver side started ({})", settings);
    return Collections.emptyMap();
  }

  /**
   * Adds the Native Memory tab to the live UI ({@link NativeMemoryWeb#PATH}), from the plugin's
   * events on the listener bus: the same events, and so the same page, as the History Server's.
   */
  private static void attachPage(SparkContext sc) {
    NativeMemoryListener pageListener = new NativeMemoryListener(new NativeMemoryTimeline());
    if (sc.conf().getBoolean("spark.memory.offHeap.enabled", false)) {
      pageListener
          .timeline()
          .setOffHeapBudget(sc.conf().getSizeAsBytes("spark.memory.offHeap.size", "0"));
    }
    sc.addSparkListener(pageListener);
    NativeMemoryWeb.attach(
        sc.ui().get(), () -> NativeMemoryPage.content(pageListener.timeline().snapshot()));
  }

  /**
   * Takes an {@link ExecutorSample}, a {@link GuardEpisodeEvent}, a ledger crossing or growth
   * report; anything else is logged and ignored. Returns null.
   */
  @Override
  public Object receive(Object message) {
    if (message instanceof ExecutorSample s) {
      onSample(s);
    } else if (message instanceof GuardEpisodeEvent g) {
      onGuardEpisode(g);
    } else if (message instanceof LedgerCrossingEvent c) {
      keep(c.getExecutorId(), ev -> ev.add(c));
      post(c); // the event log keeps it
    } else if (message instanceof GrowthReportEvent g) {
      keep(g.getExecutorId(), ev -> ev.add(g));
      post(g); // the event log keeps it
    } else {
      LOG.warn("nativepool: driver side got an unknown message {}", message);
    }
    return null;
  }

  /** Counts a pod guard episode in the {@code guard.*} gauges, logs it and posts it. */
  private void onGuardEpisode(GuardEpisodeEvent g) {
    guardEpisodes.incrementAndGet();
    guardSpilled.addAndGet(Math.max(0, g.getSpilled()));
    long reaction = g.getReactionMicros();
    guardLastReactionMillis = reaction < 0 ? -1 : Math.round(reaction / 1000.0);
    LOG.warn(g.summary());
    keep(g.getExecutorId(), ev -> ev.add(g));
    post(g); // the event log keeps it
  }

  /** Hands a live executor's evidence to {@code add}; nothing for a removed one. */
  private void keep(String executorId, Consumer<ExecutorEvidence> add) {
    if (executorId == null || removed.contains(executorId)) {
      return;
    }
    add.accept(evidence.computeIfAbsent(executorId, id -> new ExecutorEvidence()));
  }

  /** The sum of {@code figure} over live executors (negative figures, "unknown", are skipped). */
  private long total(String figure) {
    long sum = 0;
    for (ExecutorView e : executors.values()) {
      long v = e.latest.figure(figure, -1);
      if (v > 0) {
        sum += v;
      }
    }
    return sum;
  }

  private void onSample(ExecutorSample s) {
    long now = System.currentTimeMillis();
    ExecutorView e = admit(s);
    if (e == null) {
      return; // in flight when Spark removed the executor (Spark never reuses an executor id)
    }
    e.latest = s;
    e.lastSeenMillis = now;
    keep(s.executorId(), ev -> ev.add(s));
    registerExecutorGauges(e, s.figures().keySet());
    long peakReserved = s.figure(ExecutorSample.INTERVAL_PEAK_RESERVED, 0);
    long peakHeld = s.figure(ExecutorSample.INTERVAL_PEAK_HELD, 0);
    synchronized (this) {
      e.stagePeakReserved = Math.max(e.stagePeakReserved, peakReserved);
      e.stagePeakHeld = Math.max(e.stagePeakHeld, peakHeld);
      long sumReserved = 0;
      long sumHeld = 0;
      for (ExecutorView x : executors.values()) {
        sumReserved += Math.max(0, x.latest.figure(ExecutorSample.INTERVAL_PEAK_RESERVED, 0));
        sumHeld += Math.max(0, x.latest.figure(ExecutorSample.INTERVAL_PEAK_HELD, 0));
      }
      totalStagePeakReserved = Math.max(totalStagePeakReserved, sumReserved);
      totalStagePeakHeld = Math.max(totalStagePeakHeld, sumHeld);
      for (StagePeaks p : stages.values()) {
        p.add(s.executorId(), peakReserved, peakHeld, sumReserved, sumHeld);
        p.addLedger(s);
      }
      // A sample's interval is at most one heartbeat long: it overlaps a completed stage if it
      // began before the stage ended.
      long begun = s.timeMillis() - settings.heartbeatMillis();
      for (StagePeaks p : completing) {
        if (begun <= p.completedMillis) {
          p.add(s.executorId(), peakReserved, peakHeld, sumReserved, sumHeld);
          p.addLedger(s);
        }
      }
    }
    postDueStages(now, false);
    crossings(e, s, peakReserved);
    // At most one sample event per executor per N heartbeat intervals (executors also send as
    // tasks end, so counting samples would not bound the rate).
    long every = settings.eventLogSampleEvery() * settings.heartbeatMillis();
    if (every > 0 && (e.sampleEvents == 0 || s.timeMillis() - e.lastSampleEventMillis >= every)) {
      e.sampleEvents++;
      e.lastSampleEventMillis = s.timeMillis();
      post(new ExecutorSampleEvent(s.executorId(), s.timeMillis(), s.sequence(), s.figures()));
    }
    forgetStale(now);
  }

  /** Posts a crossing for each threshold the executor's reserved bytes went over or under. */
  private void crossings(ExecutorView e, ExecutorSample s, long peakReserved) {
    long reserved = s.figure(ProcessStat.RESERVED.gaugeName(), 0);
    synchronized (e) {
      for (int i = 0; i < thresholds.length; i++) {
        long level = thresholds[i];
        if (!e.above[i] && peakReserved >= level) {
          e.above[i] = true;
          ReservedThresholdEvent c =
              new ReservedThresholdEvent(e.id, s.timeMillis(), level, true, peakReserved);
          keep(e.id, ev -> ev.add(c));
          post(c);
        }
        if (e.above[i] && reserved < level) {
          e.above[i] = false;
          ReservedThresholdEvent c =
              new ReservedThresholdEvent(e.id, s.timeMillis(), level, false, reserved);
          keep(e.id, ev -> ev.add(c));
          post(c);
        }
      }
    }
  }

  /**
   * The state of the sample's executor, made at its first sample; null if Spark removed it. The
   * check and the add are one atomic step on the executor's map entry, and {@link
   * #onExecutorRemoved} marks the id removed before it removes the entry: a sample racing the
   * removal either is added first and then removed with the rest, or finds the id removed. (A check
   * before a separate add let such a sample re-add the executor after its removal, with gauges
   * nobody would remove.)
   */
  private ExecutorView admit(ExecutorSample s) {
    boolean[] made = new boolean[1];
    ExecutorView e =
        executors.compute(
            s.executorId(),
            (id, old) -> {
              if (removed.contains(id)) {
                return null;
              }
              if (old != null) {
                return old;
              }
              made[0] = true;
              return new ExecutorView(id, s, thresholds.length);
            });
    if (made[0]) {
      LOG.info("nativepool: executor {} reports to the driver", s.executorId());
    }
    return e;
  }

  /** Spark removed executor {@code id}: its late samples are dropped, its gauges go. */
  void onExecutorRemoved(String id) {
    removed.add(id);
    removeExecutor(id);
  }

  /**
   * Diagnoses Spark's removal of executor {@code id} at {@code timeMillis} for {@code reason}: logs
   * the diagnosis, posts it and counts it. A second removal of the same executor is diagnosed again
   * and posted as a revision only if it says more (an exit code where the first had none, or a
   * cause where the first was lost or undecided). Returns the diagnosis posted, or null.
   */
  ExecutorDiagnosisEvent diagnoseRemoval(String id, long timeMillis, String reason) {
    ExecutorDiagnosisEvent d;
    synchronized (diagnosed) {
      ExecutorEvidence ev = evidence.get(id);
      ExecutorDiagnosisEvent prev = diagnosed.get(id);
      d =
          ExecutorDiagnosis.diagnose(
              id,
              timeMillis,
              reason,
              ev == null ? ExecutorEvidence.Snapshot.EMPTY : ev.snapshot(),
              container,
              settings.heartbeatMillis(),
              applicationEnded,
              prev == null ? 1 : prev.getRevision() + 1);
      if (prev != null && !saysMore(prev, d)) {
        LOG.debug("nativepool: executor {} removed again: {}", id, reason);
        return null;
      }
      if (prev != null) {
        lost.get(prev.getCause()).decrementAndGet();
      }
      lost.get(d.getCause()).incrementAndGet();
      diagnosed.remove(id);
      diagnosed.put(id, d);
      Iterator<String> it = diagnosed.keySet().iterator();
      while (diagnosed.size() > REMOVED_KEPT) {
        evidence.remove(it.next());
        it.remove();
      }
    }
    if (d.isNormal()) {
      LOG.info(d.describe());
    } else {
      LOG.warn(d.describe());
    }
    post(d); // the event log keeps it
    return d;
  }

  /** Whether a later diagnosis of the same executor tells more than the earlier one. */
  private static boolean saysMore(ExecutorDiagnosisEvent before, ExecutorDiagnosisEvent after) {
    boolean vague = before.getCause() == Cause.LOST || before.getCause() == Cause.UNDECIDED;
    return (before.getExitCode() == null && after.getExitCode() != null)
        || (vague && after.getCause() != Cause.LOST && after.getCause() != Cause.UNDECIDED);
  }

  /**
   * A task ended: if it failed for lack of memory ({@code java.lang.OutOfMemoryError}, or Spark's
   * {@code SparkOutOfMemoryError}, as the exception or a cause in its trace), its executor's
   * evidence keeps it.
   */
  void onTaskEnd(SparkListenerTaskEnd event) {
    TaskEndReason reason = event.reason();
    TaskInfo info = event.taskInfo();
    if (!(reason instanceof ExceptionFailure f) || info == null) {
      return;
    }
    Boolean jvm = memoryFailure(f.className(), f.fullStackTrace());
    if (jvm == null) {
      return;
    }
    String line =
        "task "
            + info.taskId()
            + " ("
            + info.index()
            + "."
            + info.attemptNumber()
            + ") in stage "
            + event.stageId()
            + "."
            + event.stageAttemptId()
            + ": "
            + f.className()
            + (f.description() == null ? "" : ": " + f.description());
    long time = info.finishTime() > 0 ? info.finishTime() : System.currentTimeMillis();
    keep(info.executorId(), ev -> ev.add(new ExecutorEvidence.TaskFailure(time, line, jvm)));
  }

  /**
   * Whether a task failure is for lack of memory: true for the JVM's {@code OutOfMemoryError},
   * false for Spark's {@code SparkOutOfMemoryError}, null for neither (the exception's class first,
   * then the causes in its trace).
   */
  static Boolean memoryFailure(String className, String trace) {
    if (SPARK_OOM.equals(className)) {
      return false;
    }
    if (JVM_OOM.equals(className)) {
      return true;
    }
    if (trace != null) {
      if (trace.contains(SPARK_OOM)) {
        return false;
      }
      if (trace.contains(JVM_OOM)) {
        return true;
      }
    }
    return null;
  }

  private static final String SPARK_OOM = "org.apache.spark.memory.SparkOutOfMemoryError";
  private static final String JVM_OOM = "java.lang.OutOfMemoryError";

  /** Registers the gauges of figures {@code e} has none for yet. */
  private void registerExecutorGauges(ExecutorView e, Set<String> figures) {
    synchronized (e) {
      if (e.removed) {
        return;
      }
      for (String f : figures) {
        if (e.gauges.add(f)) {
          register(e, f, x -> x.latest.figure(f, -1));
        }
      }
      if (e.gauges.add(STAGE_PEAK_RESERVED)) {
        register(e, STAGE_PEAK_RESERVED, x -> x.stagePeakReserved);
        register(e, STAGE_PEAK_HELD, x -> x.stagePeakHeld);
      }
    }
  }

  private void register(ExecutorView e, String figure, ToLongFunction<ExecutorView> read) {
    try {
      registry.register(e.prefix + figure, (Gauge<Long>) () -> read.applyAsLong(e));
    } catch (IllegalArgumentException dup) {
      // An executor id reused after its removal raced with the removal: keep the older gauge,
      // which reads the same figures by name.
      LOG.debug("nativepool: gauge {} already registered", e.prefix + figure);
    }
  }

  /** Removes executors that sent nothing for ten heartbeat intervals. */
  private void forgetStale(long now) {
    long limit = 10 * settings.heartbeatMillis();
    for (ExecutorView e : executors.values()) {
      if (now - e.lastSeenMillis > limit) {
        LOG.info("nativepool: executor {} sent nothing for {} ms; its gauges go", e.id, limit);
        removeExecutor(e.id);
      }
    }
  }

  private void removeExecutor(String id) {
    ExecutorView e = executors.remove(id);
    if (e == null) {
      return;
    }
    synchronized (e) {
      e.removed = true;
      registry.removeMatching(MetricFilter.startsWith(e.prefix));
    }
  }

  /**
   * Posts the peaks of completed stages whose grace period is over: two heartbeat intervals after
   * the stage's end, by when every executor has sent the sample covering it (executors also send
   * one as a task ends). {@code all}: post every one now (shutdown). Called on each sample, so with
   * no executor left a stage's event waits for the driver's shutdown.
   */
  private void postDueStages(long now, boolean all) {
    List<StagePeaks> due = new ArrayList<>();
    synchronized (this) {
      Iterator<StagePeaks> it = completing.iterator();
      while (it.hasNext()) {
        StagePeaks p = it.next();
        if (all || now - p.completedMillis >= 2 * settings.heartbeatMillis()) {
          due.add(p);
          it.remove();
        }
      }
    }
    for (StagePeaks p : due) {
      post(
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

  /** Posts the stage peaks still waiting for their grace period. */
  @Override
  public void shutdown() {
    if (settings != null) {
      postDueStages(System.currentTimeMillis(), true);
    }
  }

  private void post(SparkListenerEvent event) {
    sc.listenerBus().post(event);
  }

  /**
   * A gauge-name-safe form of an executor id: letters, digits, '_' and '-' kept, anything else (a
   * '.', which would split the Dropwizard name) becomes '_'.
   */
  static String gaugeKey(String executorId) {
    return executorId.replaceAll("[^A-Za-z0-9_-]", "_");
  }

  /** One executor's state on the driver. */
  private static final class ExecutorView {
    final String id;
    final String prefix;

    /** The last sample; replaced on each, read by gauges without a lock. */
    volatile ExecutorSample latest;

    volatile long lastSeenMillis;

    /** The {@code stagePeak*} gauges' figures. Written under the plugin's lock. */
    volatile long stagePeakReserved;

    volatile long stagePeakHeld;

    /** Figures with a gauge. Guarded by this. */
    final Set<String> gauges = new HashSet<>();

    /** Per threshold: whether reserved is at or above it. Guarded by this. */
    final boolean[] above;

    /** Set once, when the executor's gauges are removed. Guarded by this. */
    boolean removed;

    /** Sample events posted, and when the last was (sample time). Written by the RPC thread. */
    long sampleEvents;

    long lastSampleEventMillis;

    ExecutorView(String id, ExecutorSample first, int levels) {
      this.id = id;
      this.prefix = "executor." + gaugeKey(id) + ".";
      this.latest = first;
      this.above = new boolean[levels];
    }
  }

  /** A stage's peaks, while it runs and during its grace period. Guarded by the plugin's lock. */
  private static final class StagePeaks {
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

    StagePeaks(int stageId, int stageAttemptId) {
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

  private static String stageKey(StageInfo info) {
    return info.stageId() + "." + info.attemptNumber();
  }

  /**
   * Stages start and end the stage peaks; a removed executor's gauges go and its end is diagnosed;
   * tasks that failed for lack of memory are kept for that diagnosis.
   */
  private final class Listener extends SparkListener {
    @Override
    public void onStageSubmitted(SparkListenerStageSubmitted event) {
      StageInfo info = event.stageInfo();
      synchronized (DriverSide.this) {
        stages.put(stageKey(info), new StagePeaks(info.stageId(), info.attemptNumber()));
      }
    }

    @Override
    public void onStageCompleted(SparkListenerStageCompleted event) {
      StageInfo info = event.stageInfo();
      synchronized (DriverSide.this) {
        StagePeaks p = stages.remove(stageKey(info));
        if (p == null) {
          p = new StagePeaks(info.stageId(), info.attemptNumber());
        }
        p.completedMillis = System.currentTimeMillis();
        completing.add(p);
        for (ExecutorView e : executors.values()) {
          e.stagePeakReserved = 0;
          e.stagePeakHeld = 0;
        }
        totalStagePeakReserved = 0;
        totalStagePeakHeld = 0;
      }
    }

    @Override
    public void onExecutorRemoved(SparkListenerExecutorRemoved event) {
      DriverSide.this.onExecutorRemoved(event.executorId());
      diagnoseRemoval(event.executorId(), event.time(), event.reason());
    }

    @Override
    public void onTaskEnd(SparkListenerTaskEnd event) {
      DriverSide.this.onTaskEnd(event);
    }

    @Override
    public void onApplicationEnd(SparkListenerApplicationEnd event) {
      applicationEnded = true;
    }
  }
}
