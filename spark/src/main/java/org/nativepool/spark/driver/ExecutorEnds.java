package org.nativepool.spark.driver;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.EnumMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.apache.spark.ExceptionFailure;
import org.apache.spark.SparkConf;
import org.apache.spark.TaskEndReason;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.TaskInfo;
import org.nativepool.spark.config.ReportingSettings;
import org.nativepool.spark.events.ExecutorDiagnosisEvent;
import org.nativepool.spark.events.ExecutorDiagnosisEvent.Cause;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Why each executor ended. When Spark removes an executor ({@code SparkListenerExecutorRemoved}),
 * the driver diagnoses the removal ({@link ExecutorDiagnosis}: the reason Spark gave, read as each
 * cluster manager writes it, against what the executor reported before its end and the tasks that
 * failed on it for lack of memory) and posts an {@link ExecutorDiagnosisEvent}, logging its line at
 * WARN ({@link ExecutorDiagnosisEvent#describe()}; at INFO for an executor that ended on purpose),
 * and counts it in the gauge {@code lost.<cause>} ({@code lost.containerKilled}, {@code
 * lost.jvmOutOfMemory}, …, {@code lost.undecided}).
 *
 * <p>For this it keeps, per executor, at most the bounded past of {@link ExecutorEvidence} (about
 * 30 KB: a minute of samples at one per second, nine more minutes at one per 30 s, and the last few
 * episodes, crossings, growth reports and memory failures), and that of the last {@value
 * #REMOVED_KEPT} removed executors, so that a second removal of the same executor with an exit code
 * (standalone reports the dropped connection first) revises the diagnosis.
 *
 * <p>Safe for concurrent use: evidence arrives on Spark's RPC threads, removals and task ends on
 * the listener bus's thread.
 */
final class ExecutorEnds {
  /**
   * The driver side's logger: operators find these lines on {@code
   * org.nativepool.spark.driver.DriverSide} (docs/DEPLOYING.md).
   */
  private static final Logger LOG = LoggerFactory.getLogger(DriverSide.class);

  /** Gauge name prefix of the removed executors counted by cause: {@code lost.<cause key>}. */
  static final String LOST_PREFIX = "lost.";

  /** How many removed executors' evidence and diagnoses are kept, for a revised diagnosis. */
  static final int REMOVED_KEPT = 64;

  private static final String SPARK_OOM = "org.apache.spark.memory.SparkOutOfMemoryError";
  private static final String JVM_OOM = "java.lang.OutOfMemoryError";

  private final ExecutorDiagnosis.ContainerLimit container;
  private final long heartbeatMillis;
  private final Predicate<String> removed;
  private final Consumer<SparkListenerEvent> post;

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

  /**
   * @param conf the application's configuration: the container size Spark computed is the limit of
   *     executors without a pod guard reading ({@link ExecutorDiagnosis.ContainerLimit#of})
   * @param settings the plugin's reporting settings: the executors' heartbeat interval
   * @param removed whether Spark removed an executor: nothing more is kept of it
   * @param post posts an event to Spark's listener bus
   */
  ExecutorEnds(
      SparkConf conf,
      ReportingSettings settings,
      Predicate<String> removed,
      Consumer<SparkListenerEvent> post) {
    this.container = ExecutorDiagnosis.ContainerLimit.of(conf);
    this.heartbeatMillis = settings.heartbeatMillis();
    this.removed = removed;
    this.post = post;
    for (Cause c : Cause.values()) {
      lost.put(c, new AtomicLong());
    }
  }

  /** Registers the {@code lost.*} gauges. */
  void register(MetricRegistry registry) {
    for (Map.Entry<Cause, AtomicLong> e : lost.entrySet()) {
      registry.register(LOST_PREFIX + e.getKey().key(), (Gauge<Long>) e.getValue()::get);
    }
  }

  /** Hands a live executor's evidence to {@code add}; nothing for a removed one. */
  void keep(String executorId, Consumer<ExecutorEvidence> add) {
    if (executorId == null || removed.test(executorId)) {
      return;
    }
    add.accept(evidence.computeIfAbsent(executorId, id -> new ExecutorEvidence()));
  }

  /**
   * Spark added executor {@code id} in the cluster manager's container {@code container} (YARN's
   * {@code container_…}; null where the manager names none): the diagnosis of its end names it.
   */
  void executorAdded(String id, String container) {
    if (container != null) {
      keep(id, ev -> ev.container(container));
    }
  }

  /** Spark posted the application's end. */
  void applicationEnded() {
    applicationEnded = true;
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
              heartbeatMillis,
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
    post.accept(d); // the event log keeps it
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
}
