package org.nativepool.spark.driver;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.SparkConf;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.config.ContainerSize;
import org.nativepool.spark.events.ExecutorDiagnosisEvent;
import org.nativepool.spark.events.ExecutorDiagnosisEvent.Cause;
import org.nativepool.spark.events.GuardEpisodeEvent;
import org.nativepool.spark.events.HeapHoldersEvent;
import org.nativepool.spark.jni.ArrowProcessStat;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.ledger.LedgerReader;

/**
 * Says why an executor ended, from the reason of Spark's removal ({@link LossReason}) and what the
 * driver kept of the executor ({@link ExecutorEvidence}): a pure function of its inputs, so that
 * every case can be tested with made-up histories.
 *
 * <p>The rules, in order; a cause is named only when they decide it, otherwise the diagnosis is
 * {@link Cause#UNDECIDED} (or {@link Cause#LOST}) with what is known:
 *
 * <ul>
 *   <li>The resource manager says the container was killed for its memory (YARN's memory check,
 *       Kubernetes' {@code OOMKilled}): {@link Cause#CONTAINER_KILLED}.
 *   <li>Exit code 137 (SIGKILL) alone: {@link Cause#CONTAINER_KILLED} only if the last sample is
 *       recent (at most {@link #recentMillis} before the removal) and its unreclaimable memory (its
 *       resident set without a pod guard) was within {@value #NEAR_LIMIT_PERCENT}% of the limit, or
 *       the pod guard reported nothing native left to give in that time. Otherwise undecided,
 *       suspecting the container: anything can send a SIGKILL.
 *   <li>Exit code 52, or a task on the executor that failed with {@code java.lang.OutOfMemoryError}
 *       within {@link #recentMillis} before a removal with another exit code: {@link
 *       Cause#JVM_OUT_OF_MEMORY}.
 *   <li>Killed by the driver after tasks on it failed with {@code SparkOutOfMemoryError} within
 *       {@value #FAILURE_WINDOW_MILLIS} ms: {@link Cause#MANAGED_MEMORY_EXHAUSTED}; killed by the
 *       driver otherwise, decommissioned, preempted, exit code 0: {@link Cause#ENDED}.
 *   <li>Another exit code: {@link Cause#EXITED}.
 *   <li>No exit code, and a heartbeat timeout, a lost worker, a dropped connection, a missing or
 *       evicted pod: {@link Cause#LOST}, suspecting the container or the JVM's memory when the
 *       evidence would fit them as above.
 *   <li>Anything else: {@link Cause#UNDECIDED}.
 *   <li>After the application ended, any removal but the resource manager's memory kill and exit
 *       code 52 is {@link Cause#ENDED}: the executors are being stopped.
 * </ul>
 *
 * <p>The container is the one Spark's executor attributes name (YARN's {@code CONTAINER_ID}), else
 * the first {@code container_…} of the removal's reason. The limit is the pod guard's (from the
 * last sample that had one), else the one the resource manager's message names (which the event
 * keeps as well, as the limit the manager enforced), else the container size Spark computed for
 * YARN and Kubernetes (heap + off-heap + memoryOverhead + PySpark memory). Stateless.
 */
final class ExecutorDiagnosis {
  /** Unreclaimable memory within this share of the limit counts as at the limit. */
  static final int NEAR_LIMIT_PERCENT = 90;

  /** How long before the removal a memory failure of a task counts, ms. */
  static final long FAILURE_WINDOW_MILLIS = 300_000;

  /** The span over which ledger parts' growth is measured, ending at the last sample, ms. */
  static final long GROWTH_SPAN_MILLIS = 60_000;

  private static final DateTimeFormatter HOLDERS_TIME =
      DateTimeFormatter.ofPattern("HH:mm:ss", Locale.ROOT).withZone(ZoneOffset.UTC);

  private ExecutorDiagnosis() {}

  /**
   * The limit of executors without a pod guard reading: the container size Spark computed, and how
   * it was computed; or none ({@code bytes} -1), where Spark sizes no container.
   */
  record ContainerLimit(long bytes, String source) {
    static final ContainerLimit NONE = new ContainerLimit(-1, null);

    /**
     * The container size Spark computed for the executors of {@code conf} on YARN and Kubernetes,
     * whose cluster managers kill at it; {@link #NONE} elsewhere.
     */
    static ContainerLimit of(SparkConf conf) {
      String master = conf.get("spark.master", "");
      if (master.startsWith("yarn") || master.startsWith("k8s")) {
        return new ContainerLimit(ContainerSize.bytes(conf), ContainerSize.describe(conf));
      }
      return NONE;
    }
  }

  /**
   * How recent the last sample must be to speak for the moment of the end: three heartbeat
   * intervals, and at least 10 s (the cluster managers report a death within seconds).
   */
  static long recentMillis(long heartbeatMillis) {
    return Math.max(3 * heartbeatMillis, 10_000);
  }

  /**
   * The diagnosis of one removal.
   *
   * @param executorId the executor
   * @param timeMillis when Spark removed it (epoch ms)
   * @param reason Spark's reason
   * @param ev what the driver kept of the executor
   * @param container the container size Spark computed, for want of a pod guard's limit
   * @param heartbeatMillis the executors' heartbeat interval
   * @param revision 1 for the first diagnosis of the executor
   */
  static ExecutorDiagnosisEvent diagnose(
      String executorId,
      long timeMillis,
      String reason,
      ExecutorEvidence.Snapshot ev,
      ContainerLimit container,
      long heartbeatMillis,
      int revision) {
    return diagnose(
        executorId, timeMillis, reason, ev, container, heartbeatMillis, false, revision);
  }

  /**
   * The diagnosis of one removal, {@code afterEnd} telling whether the application had ended before
   * it: executors removed as the application stops are killed or exit on purpose (a standalone
   * worker sends SIGTERM, then SIGKILL), so only a reason that itself names memory (the resource
   * manager's memory kill, exit code 52) keeps its cause; any other is {@link Cause#ENDED}.
   */
  static ExecutorDiagnosisEvent diagnose(
      String executorId,
      long timeMillis,
      String reason,
      ExecutorEvidence.Snapshot ev,
      ContainerLimit container,
      long heartbeatMillis,
      boolean afterEnd,
      int revision) {
    LossReason r = LossReason.parse(reason);
    ExecutorEvidence.Point last = ev.last();

    long limit = -1;
    String limitSource = null;
    long guardLimit = last == null ? -1 : last.figure(ProcessStat.GUARD_LIMIT.gaugeName(), -1);
    if (guardLimit > 0) {
      limit = guardLimit;
      limitSource = "the pod guard's";
    } else if (r.reportedLimit() > 0) {
      limit = r.reportedLimit();
      limitSource = "the cluster manager's message";
    } else if (container.bytes() > 0) {
      limit = container.bytes();
      limitSource = "the container size: " + container.source();
    }
    long unreclaimable =
        last == null ? -1 : positive(last.figure(ProcessStat.GUARD_UNRECLAIMABLE.gaugeName(), -1));
    long rss = last == null ? -1 : lastRss(last);
    long usage = unreclaimable >= 0 ? unreclaimable : rss;
    long age = last == null ? -1 : Math.max(0, timeMillis - last.timeMillis);
    long recent = recentMillis(heartbeatMillis);
    boolean fresh = last != null && age <= recent;
    boolean nearLimit = limit > 0 && usage >= 0 && usage * 100 >= limit * NEAR_LIMIT_PERCENT;
    GuardEpisodeEvent gaveUp = null;
    for (GuardEpisodeEvent g : ev.episodeEvents()) {
      long when = g.isOpen() ? g.getStartMillis() + g.getRecoveryMicros() / 1000 : g.getEndMillis();
      if (g.isNothingLeft() && timeMillis - when <= recent) {
        gaveUp = g;
      }
    }
    ExecutorEvidence.TaskFailure jvmOom = null;
    ExecutorEvidence.TaskFailure sparkOom = null;
    List<String> failed = new ArrayList<>();
    for (ExecutorEvidence.TaskFailure f : ev.failures()) {
      if (timeMillis - f.timeMillis() > FAILURE_WINDOW_MILLIS) {
        continue;
      }
      failed.add(f.line());
      if (f.jvm() && timeMillis - f.timeMillis() <= recent) {
        jvmOom = f;
      } else if (!f.jvm()) {
        sparkOom = f;
      }
    }
    boolean killFits = (fresh && nearLimit) || gaveUp != null;
    String atLimit = atLimit(limit, usage, unreclaimable >= 0, age, last != null, gaveUp);

    Cause cause;
    Cause suspected = null;
    String verdict;
    switch (r.kind()) {
      case MEMORY_KILL -> {
        cause = Cause.CONTAINER_KILLED;
        verdict = r.detail();
      }
      case SIGKILL -> {
        if (killFits) {
          cause = Cause.CONTAINER_KILLED;
          verdict = r.detail() + ", and " + atLimit;
        } else {
          cause = Cause.UNDECIDED;
          suspected = Cause.CONTAINER_KILLED;
          verdict =
              r.detail()
                  + ", which the kernel's OOM killer sends at the container's limit, but so can"
                  + " anything else, and nothing shows the limit reached: "
                  + atLimit;
        }
      }
      case JVM_OOM -> {
        cause = Cause.JVM_OUT_OF_MEMORY;
        verdict = r.detail() + (jvmOom == null ? "" : " (" + jvmOom.line() + ")");
      }
      case EXIT -> {
        if (jvmOom != null) {
          cause = Cause.JVM_OUT_OF_MEMORY;
          verdict = jvmOom.line() + ", then the executor ended with " + r.detail();
        } else {
          cause = Cause.EXITED;
          verdict = "it ended with " + r.detail();
        }
      }
      case DRIVER_KILLED -> {
        if (sparkOom != null) {
          cause = Cause.MANAGED_MEMORY_EXHAUSTED;
          verdict =
              r.detail()
                  + " after tasks on it failed with SparkOutOfMemoryError: Spark's execution memory"
                  + " could not give them what they asked for";
        } else {
          cause = Cause.ENDED;
          verdict = r.detail() + " (dynamic allocation, exclusion after failures, or the user)";
        }
      }
      case ENDED -> {
        cause = Cause.ENDED;
        verdict = r.detail();
      }
      case LOST -> {
        cause = Cause.LOST;
        suspected = suspect(killFits, jvmOom);
        verdict = r.detail() + ", and Spark gave no exit code: " + fits(suspected, atLimit, jvmOom);
      }
      default -> {
        cause = Cause.UNDECIDED;
        suspected = suspect(killFits, jvmOom);
        verdict = r.detail() + ": " + fits(suspected, atLimit, jvmOom);
      }
    }

    if (afterEnd
        && r.kind() != LossReason.Kind.MEMORY_KILL
        && r.kind() != LossReason.Kind.JVM_OOM) {
      cause = Cause.ENDED;
      suspected = null;
      verdict = "removed as the application ended (" + r.detail() + ")";
    }
    long heapUsed = last == null ? -1 : last.part(LedgerReader.JVM_HEAP_USED, -1);
    long heapCommitted = last == null ? -1 : last.part(LedgerReader.JVM_HEAP_COMMITTED, -1);
    Map<String, Long> grown = new LinkedHashMap<>();
    long grownOver = grownParts(ev.points(), grown);
    return new ExecutorDiagnosisEvent(
        executorId,
        timeMillis,
        reason,
        r.exitCode(),
        cause,
        suspected,
        verdict,
        limit,
        limitSource,
        last == null ? -1 : last.timeMillis,
        rss,
        unreclaimable,
        heapUsed,
        heapCommitted,
        grownOver,
        grown,
        ev.episodes(),
        ev.crossings(),
        ev.growth(),
        failed,
        revision,
        ev.container() != null ? ev.container() : containerIn(reason),
        r.reportedLimit(),
        r.reportedUsage(),
        heapHolders(cause, suspected, ev.heapHolders()));
  }

  private static final Pattern CONTAINER = Pattern.compile("\\bcontainer_[0-9e]+(?:_[0-9]+)+");

  /** The first YARN container id a removal's reason names ({@code container_…}), or null. */
  static String containerIn(String reason) {
    if (reason == null) {
      return null;
    }
    Matcher m = CONTAINER.matcher(reason);
    return m.find() ? m.group() : null;
  }

  /**
   * For a JVM out of memory, or one the evidence would fit: the last heap holders the executor
   * reported, the analysis's time, trigger and note first; empty otherwise or if it reported none.
   */
  static List<String> heapHolders(Cause cause, Cause suspected, HeapHoldersEvent h) {
    if (h == null || (cause != Cause.JVM_OUT_OF_MEMORY && suspected != Cause.JVM_OUT_OF_MEMORY)) {
      return List.of();
    }
    List<String> out = new ArrayList<>();
    out.add(
        "at "
            + HOLDERS_TIME.format(Instant.ofEpochMilli(h.getTimeMillis()))
            + " UTC ("
            + h.getTrigger()
            + "): "
            + h.getNote());
    out.addAll(h.lines());
    return out;
  }

  private static Cause suspect(boolean killFits, ExecutorEvidence.TaskFailure jvmOom) {
    return jvmOom != null ? Cause.JVM_OUT_OF_MEMORY : killFits ? Cause.CONTAINER_KILLED : null;
  }

  /** What the evidence says about a cause it fits, or that it fits none. */
  private static String fits(Cause suspected, String atLimit, ExecutorEvidence.TaskFailure jvmOom) {
    if (suspected == Cause.JVM_OUT_OF_MEMORY) {
      return jvmOom.line() + " just before: the JVM running out of memory would fit, undecided";
    }
    if (suspected == Cause.CONTAINER_KILLED) {
      return atLimit + ": a container kill would fit, undecided";
    }
    return "what ended it is undecided; " + atLimit;
  }

  /** The evidence about the limit, in words. */
  private static String atLimit(
      long limit,
      long usage,
      boolean unreclaimable,
      long age,
      boolean sampled,
      GuardEpisodeEvent gaveUp) {
    String what = unreclaimable ? "unreclaimable memory" : "resident set";
    StringBuilder b = new StringBuilder();
    if (!sampled) {
      b.append("the executor sent no sample");
    } else if (limit <= 0) {
      b.append("no memory limit is known (no pod guard limit, no container size)");
    } else if (usage < 0) {
      b.append("the last sample, ").append(secs(age)).append(" before, had no memory figure");
    } else {
      b.append("the last sample, ")
          .append(secs(age))
          .append(" before the removal, had its ")
          .append(what)
          .append(" at ")
          .append(String.format(Locale.ROOT, "%.1f%%", 100.0 * usage / limit))
          .append(" of the ")
          .append(Bytes.format(limit))
          .append(" limit");
    }
    if (gaveUp != null) {
      b.append("; the pod guard's episode ")
          .append(gaveUp.getEpisodeId())
          .append(" found nothing native left to give");
    }
    return b.toString();
  }

  private static String secs(long millis) {
    return String.format(Locale.ROOT, "%.1f s", millis / 1000.0);
  }

  private static long positive(long v) {
    return v > 0 ? v : -1;
  }

  private static long lastRss(ExecutorEvidence.Point p) {
    long rss = p.part(LedgerReader.RSS, -1);
    return rss > 0 ? rss : positive(p.figure(ArrowProcessStat.RSS.gaugeName(), -1));
  }

  /**
   * Fills {@code out} with the resident ledger parts (and the unexplained remainder) that grew by
   * at least {@link GuardEpisodeEvent#MIN_GROWTH} bytes from the oldest point within {@value
   * #GROWTH_SPAN_MILLIS} ms before the newest to the newest, largest first; returns the span
   * compared, ms (0 if fewer than two points).
   */
  static long grownParts(List<ExecutorEvidence.Point> points, Map<String, Long> out) {
    if (points.size() < 2) {
      return 0;
    }
    ExecutorEvidence.Point last = points.get(points.size() - 1);
    ExecutorEvidence.Point base = null;
    for (ExecutorEvidence.Point p : points) {
      if (p != last && last.timeMillis - p.timeMillis <= GROWTH_SPAN_MILLIS) {
        base = p;
        break;
      }
    }
    if (base == null) {
      return 0;
    }
    boolean heapResident = last.part(LedgerReader.JVM_HEAP_RESIDENT, -1) >= 0;
    List<Map.Entry<String, Long>> grew = new ArrayList<>();
    for (String part : last.parts()) {
      if (!LedgerReader.adds(part, heapResident)) {
        continue;
      }
      long before = base.part(part, 0);
      long d = last.part(part, 0) - before;
      if (d >= GuardEpisodeEvent.MIN_GROWTH) {
        grew.add(Map.entry(part, d));
      }
    }
    grew.sort((a, b) -> Long.compare(b.getValue(), a.getValue()));
    for (Map.Entry<String, Long> e : grew) {
      out.put(e.getKey(), e.getValue());
    }
    return last.timeMillis - base.timeMillis;
  }
}
