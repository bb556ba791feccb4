package org.nativepool.spark.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.nativepool.spark.config.Bytes;

/**
 * Why an executor ended: the driver side's diagnosis of one removal of an executor by Spark, from
 * the reason Spark gave ({@code SparkListenerExecutorRemoved}), the tasks that failed on it and
 * what the executor reported before its end (its samples, pod guard episodes, ledger threshold
 * crossings and growth reports). The driver logs it ({@link #describe()}, at WARN unless the
 * executor ended normally) and posts it to Spark's listener bus, so the event log keeps it and the
 * History Server replays it.
 *
 * <p>The diagnosis names a {@link Cause} only when the evidence decides it; otherwise the cause is
 * {@link Cause#UNDECIDED} and {@link #getSuspected()} says which cause the reason alone would point
 * to, with the evidence that does not confirm it. Figures unknown to the driver are -1 (bytes,
 * times) or null (the exit code).
 *
 * <p>A removal is diagnosed again when Spark reports the same executor removed a second time with
 * more to say (on standalone the driver may first see the connection drop, then the exit code); the
 * later event has a higher {@link #getRevision()} and supersedes the earlier one.
 *
 * <p>Immutable; Jackson-readable for the event log, one JSON line: {@code
 * {"Event":"org.nativepool.spark.events.ExecutorDiagnosisEvent","executorId":"7",
 * "timeMillis":…,"reason":"…","exitCode":137,"cause":"CONTAINER_KILLED",…}}.
 */
@JsonDeserialize(using = ExecutorDiagnosisEvent.Json.class)
public final class ExecutorDiagnosisEvent implements SparkListenerEvent {
  /**
   * Jackson's reader of the event in an event log: every field read leniently, so that a malformed
   * event never stops the History Server's replay ({@link LenientEventDeserializer}).
   */
  public static final class Json extends LenientEventDeserializer<ExecutorDiagnosisEvent> {
    private static final long serialVersionUID = 1L;

    /** The reader. */
    public Json() {
      super(ExecutorDiagnosisEvent.class);
    }
  }

  /** Why an executor ended, as far as the evidence decides. */
  public enum Cause {
    /**
     * Killed by its container's memory limit: the kernel's OOM killer (exit code 137, SIGKILL) or
     * the resource manager (YARN's memory check, Kubernetes' {@code OOMKilled}).
     */
    CONTAINER_KILLED("killed by its container's memory limit"),
    /** The JVM threw {@code OutOfMemoryError} (Spark's exit code 52): its heap, as a rule. */
    JVM_OUT_OF_MEMORY("JVM out of memory"),
    /**
     * Tasks on it failed with {@code SparkOutOfMemoryError}: Spark's managed execution memory could
     * not give them what they asked for, and Spark removed the executor.
     */
    MANAGED_MEMORY_EXHAUSTED("Spark's managed memory exhausted"),
    /** The executor's process exited with a code of its own (not a kill, not a JVM OOM). */
    EXITED("exited by itself"),
    /**
     * The driver lost it: heartbeat timeout, a lost worker or node, a dropped connection, a pod
     * gone missing or evicted. Spark gave no exit code, so what ended the process is not known.
     */
    LOST("lost"),
    /**
     * Ended on purpose: killed by the driver (dynamic allocation), decommissioned, preempted, or
     * stopped with the application.
     */
    ENDED("ended normally"),
    /**
     * The evidence does not decide; {@link #getSuspected()} says what the reason alone suggests.
     */
    UNDECIDED("undecided");

    private final String label;

    Cause(String label) {
      this.label = label;
    }

    /** The cause in words, e.g. {@code killed by its container's memory limit}. */
    public String label() {
      return label;
    }

    /**
     * The cause's key in the driver's gauge names, e.g. {@code containerKilled} for {@link
     * #CONTAINER_KILLED}.
     */
    public String key() {
      StringBuilder b = new StringBuilder();
      boolean up = false;
      for (char c : name().toLowerCase(Locale.ROOT).toCharArray()) {
        if (c == '_') {
          up = true;
        } else {
          b.append(up ? Character.toUpperCase(c) : c);
          up = false;
        }
      }
      return b.toString();
    }
  }

  /** The most characters of Spark's reason kept (Kubernetes' reasons list whole pod statuses). */
  public static final int REASON_KEPT = 2000;

  private final String executorId;
  private final long timeMillis;
  private final String reason;
  private final Integer exitCode;
  private final Cause cause;
  private final Cause suspected;
  private final String verdict;
  private final long limit;
  private final String limitSource;
  private final long lastSampleMillis;
  private final long lastRss;
  private final long lastUnreclaimable;
  private final long lastHeapUsed;
  private final long lastHeapCommitted;
  private final long grownOverMillis;
  private final Map<String, Long> grownParts;
  private final List<String> guardEpisodes;
  private final List<String> crossings;
  private final List<String> growthReports;
  private final List<String> failedTasks;
  private final int revision;
  private final String container;
  private final long managerLimit;
  private final long managerUsage;
  private final List<String> heapHolders;

  /**
   * One diagnosis, nothing known of its container. Maps and lists are copied in their order; null
   * reads as empty.
   *
   * @param executorId the executor
   * @param timeMillis when Spark removed it (epoch ms)
   * @param reason the reason Spark gave, cut to {@value #REASON_KEPT} characters
   * @param exitCode the process's exit code Spark reported; null if none
   * @param cause the diagnosis
   * @param suspected for {@link Cause#UNDECIDED} and {@link Cause#LOST}: the cause the evidence
   *     would fit without deciding it; null if none
   * @param verdict one sentence: why this cause, or why undecided
   * @param limit the memory limit the executor lived under, bytes; -1 if none is known
   * @param limitSource where {@code limit} comes from (the pod guard, the container size Spark
   *     computed, the resource manager's message); null if none
   * @param lastSampleMillis when the executor's last sample was read (epoch ms); -1 if it sent none
   * @param lastRss its resident set in that sample, bytes; -1 if unknown
   * @param lastUnreclaimable what its pod guard found the kernel could not reclaim, bytes; -1 if
   *     the guard was off
   * @param lastHeapUsed the JVM heap's used bytes in that sample; -1 if unknown
   * @param lastHeapCommitted the JVM heap's committed bytes in that sample; -1 if unknown
   * @param grownOverMillis the span {@code grownParts} compares, ending at the last sample, ms
   * @param grownParts ledger part → bytes it grew by over that span, largest first
   * @param guardEpisodes the pod guard's last episodes before the end, one line each
   * @param crossings the last threshold crossings (ledger parts, reserved bytes), one line each
   * @param growthReports the last growth reports, one line each
   * @param failedTasks the last tasks that failed on it for lack of memory, one line each
   * @param revision 1 for the first diagnosis of the executor, then one more per revision
   */
  public ExecutorDiagnosisEvent(
      String executorId,
      long timeMillis,
      String reason,
      Integer exitCode,
      Cause cause,
      Cause suspected,
      String verdict,
      long limit,
      String limitSource,
      long lastSampleMillis,
      long lastRss,
      long lastUnreclaimable,
      long lastHeapUsed,
      long lastHeapCommitted,
      long grownOverMillis,
      Map<String, Long> grownParts,
      List<String> guardEpisodes,
      List<String> crossings,
      List<String> growthReports,
      List<String> failedTasks,
      int revision) {
    this(
        executorId,
        timeMillis,
        reason,
        exitCode,
        cause,
        suspected,
        verdict,
        limit,
        limitSource,
        lastSampleMillis,
        lastRss,
        lastUnreclaimable,
        lastHeapUsed,
        lastHeapCommitted,
        grownOverMillis,
        grownParts,
        guardEpisodes,
        crossings,
        growthReports,
        failedTasks,
        revision,
        null,
        -1,
        -1,
        null);
  }

  /**
   * One diagnosis with what the cluster manager said of the container and the heap's last holders;
   * Jackson's creator when the event log is replayed (an event logged before these four existed
   * reads as none).
   *
   * @param container the container the executor ran in, as the cluster manager names it (YARN's
   *     {@code container_…}); null if unknown
   * @param managerLimit the memory limit the cluster manager says it enforced when it killed the
   *     container (YARN's message), bytes; -1 (or 0) if it said none
   * @param managerUsage the memory it found in use then, bytes; -1 (or 0) if it said none
   * @param heapHolders for a JVM out of memory (or one it would fit): the last heap holders the
   *     executor reported before its end, its analysis's line first, then one line per holder
   * @see #ExecutorDiagnosisEvent(String, long, String, Integer, Cause, Cause, String, long, String,
   *     long, long, long, long, long, long, Map, List, List, List, List, int) the other parameters
   */
  @JsonCreator
  public ExecutorDiagnosisEvent(
      @JsonProperty("executorId") String executorId,
      @JsonProperty("timeMillis") long timeMillis,
      @JsonProperty("reason") String reason,
      @JsonProperty("exitCode") Integer exitCode,
      @JsonProperty("cause") Cause cause,
      @JsonProperty("suspected") Cause suspected,
      @JsonProperty("verdict") String verdict,
      @JsonProperty("limit") long limit,
      @JsonProperty("limitSource") String limitSource,
      @JsonProperty("lastSampleMillis") long lastSampleMillis,
      @JsonProperty("lastRss") long lastRss,
      @JsonProperty("lastUnreclaimable") long lastUnreclaimable,
      @JsonProperty("lastHeapUsed") long lastHeapUsed,
      @JsonProperty("lastHeapCommitted") long lastHeapCommitted,
      @JsonProperty("grownOverMillis") long grownOverMillis,
      @JsonProperty("grownParts") Map<String, Long> grownParts,
      @JsonProperty("guardEpisodes") List<String> guardEpisodes,
      @JsonProperty("crossings") List<String> crossings,
      @JsonProperty("growthReports") List<String> growthReports,
      @JsonProperty("failedTasks") List<String> failedTasks,
      @JsonProperty("revision") int revision,
      @JsonProperty("container") String container,
      @JsonProperty("managerLimit") long managerLimit,
      @JsonProperty("managerUsage") long managerUsage,
      @JsonProperty("heapHolders") List<String> heapHolders) {
    this.executorId = executorId;
    this.timeMillis = timeMillis;
    this.reason =
        reason == null
            ? ""
            : reason.length() > REASON_KEPT ? reason.substring(0, REASON_KEPT) + "…" : reason;
    this.exitCode = exitCode;
    this.cause = cause == null ? Cause.UNDECIDED : cause;
    this.suspected = suspected;
    this.verdict = verdict == null ? "" : verdict;
    this.limit = limit;
    this.limitSource = limitSource;
    this.lastSampleMillis = lastSampleMillis;
    this.lastRss = lastRss;
    this.lastUnreclaimable = lastUnreclaimable;
    this.lastHeapUsed = lastHeapUsed;
    this.lastHeapCommitted = lastHeapCommitted;
    this.grownOverMillis = grownOverMillis;
    this.grownParts =
        Collections.unmodifiableMap(
            grownParts == null ? new LinkedHashMap<>() : new LinkedHashMap<>(grownParts));
    this.guardEpisodes = copy(guardEpisodes);
    this.crossings = copy(crossings);
    this.growthReports = copy(growthReports);
    this.failedTasks = copy(failedTasks);
    this.revision = revision;
    this.container = container;
    this.managerLimit = managerLimit > 0 ? managerLimit : -1;
    this.managerUsage = managerUsage > 0 ? managerUsage : -1;
    this.heapHolders = copy(heapHolders);
  }

  private static List<String> copy(List<String> l) {
    return l == null ? List.of() : List.copyOf(l);
  }

  /** The container the executor ran in, as the cluster manager names it; null if unknown. */
  public String getContainer() {
    return container;
  }

  /** The limit the cluster manager says it enforced (YARN's message), bytes; -1 if none. */
  public long getManagerLimit() {
    return managerLimit;
  }

  /** The memory the cluster manager found in use when it killed the container, bytes; -1. */
  public long getManagerUsage() {
    return managerUsage;
  }

  /**
   * The limit the executor's container was held to, in words, for the Native Memory page: the one
   * the cluster manager says it enforced, with what it measured ({@code 1.0 GiB, enforced by YARN
   * (1.1 GiB in use)}), else {@link #getLimit()} with its source; {@code none known} without either.
   */
  public String limitText() {
    if (managerLimit > 0) {
      return Bytes.format(managerLimit)
          + ", enforced by "
          + (reason.contains("YARN") ? "YARN" : "the cluster manager")
          + (managerUsage > 0 ? " (" + Bytes.format(managerUsage) + " in use)" : "");
    }
    if (limit > 0) {
      return Bytes.format(limit) + (limitSource == null ? "" : " (" + limitSource + ")");
    }
    return "none known";
  }

  /** The executor. */
  public String getExecutorId() {
    return executorId;
  }

  /** When Spark removed it (epoch ms). */
  public long getTimeMillis() {
    return timeMillis;
  }

  /** The reason Spark gave, cut to {@value #REASON_KEPT} characters. */
  public String getReason() {
    return reason;
  }

  /** The exit code Spark reported; null if it reported none. */
  public Integer getExitCode() {
    return exitCode;
  }

  /** The diagnosis. */
  public Cause getCause() {
    return cause;
  }

  /**
   * For an undecided diagnosis or a lost executor: the cause the evidence would fit without
   * deciding it (e.g. {@link Cause#CONTAINER_KILLED} for an exit code 137 long after the last
   * sample); null if none.
   */
  public Cause getSuspected() {
    return suspected;
  }

  /** One sentence: why this cause, or why the evidence does not decide. */
  public String getVerdict() {
    return verdict;
  }

  /** The memory limit the executor lived under, bytes; -1 if none is known. */
  public long getLimit() {
    return limit;
  }

  /** Where {@link #getLimit()} comes from; null if no limit is known. */
  public String getLimitSource() {
    return limitSource;
  }

  /** When the executor's last sample was read (epoch ms); -1 if it sent none. */
  public long getLastSampleMillis() {
    return lastSampleMillis;
  }

  /** Its resident set in the last sample, bytes; -1 if unknown. */
  public long getLastRss() {
    return lastRss;
  }

  /** What its pod guard last found the kernel could not reclaim, bytes; -1 if unknown. */
  public long getLastUnreclaimable() {
    return lastUnreclaimable;
  }

  /** The JVM heap's used bytes in the last sample; -1 if unknown. */
  public long getLastHeapUsed() {
    return lastHeapUsed;
  }

  /** The JVM heap's committed bytes in the last sample; -1 if unknown. */
  public long getLastHeapCommitted() {
    return lastHeapCommitted;
  }

  /** The span {@link #getGrownParts()} compares, ending at the last sample, ms (0: none). */
  public long getGrownOverMillis() {
    return grownOverMillis;
  }

  /** Ledger part → bytes it grew by over {@link #getGrownOverMillis()}, largest first. */
  public Map<String, Long> getGrownParts() {
    return grownParts;
  }

  /** The pod guard's last episodes before the end, one line each, oldest first. */
  public List<String> getGuardEpisodes() {
    return guardEpisodes;
  }

  /** The last threshold crossings before the end, one line each, oldest first. */
  public List<String> getCrossings() {
    return crossings;
  }

  /** The last growth reports before the end, one line each, oldest first. */
  public List<String> getGrowthReports() {
    return growthReports;
  }

  /** The last tasks that failed on the executor for lack of memory, one line each, oldest first. */
  public List<String> getFailedTasks() {
    return failedTasks;
  }

  /**
   * For a JVM out of memory, or one it would fit: the last heap holders the executor reported
   * before its end (its analysis's line first, then one line per holder); empty otherwise.
   */
  public List<String> getHeapHolders() {
    return heapHolders;
  }

  /** 1 for the executor's first diagnosis, then one more per revision. */
  public int getRevision() {
    return revision;
  }

  /** How long before the removal the last sample was read, ms; -1 if there was none. */
  @JsonIgnore
  public long getSampleAgeMillis() {
    return lastSampleMillis < 0 ? -1 : Math.max(0, timeMillis - lastSampleMillis);
  }

  /** Whether the executor ended on purpose ({@link Cause#ENDED}): logged at INFO, not WARN. */
  @JsonIgnore
  public boolean isNormal() {
    return cause == Cause.ENDED;
  }

  /**
   * The driver's line, e.g. {@code nativepool: executor 7 ended: killed by its container's memory
   * limit (exit code 137): Kubernetes reports the container OOMKilled. Limit 4.0 GiB (pod guard);
   * last sample 0.8 s before the removal: unreclaimable 4,090.0 MiB (99.9% of the limit), RSS 4.0
   * GiB, heap 600.0 MiB used of 1.0 GiB committed; grew over the last 60.0 s: jvm.direct +300.0
   * MiB; pod guard: …; crossings: …; growth reports: …; tasks failed for memory: …; Spark's reason:
   * …}. Parts without evidence are left out.
   */
  public String describe() {
    StringBuilder b =
        new StringBuilder("nativepool: executor ")
            .append(executorId)
            .append(revision > 1 ? " ended (revised): " : " ended: ")
            .append(cause.label());
    if (suspected != null) {
      b.append(" (").append(suspected.label()).append(" would fit)");
    }
    b.append(exitCode == null ? " (no exit code)" : " (exit code " + exitCode + ")");
    if (!verdict.isEmpty()) {
      b.append(": ").append(verdict);
    }
    b.append(verdict.endsWith(".") ? " " : ". ");
    if (container != null) {
      b.append("Container ").append(container).append("; ");
    }
    if (managerLimit > 0) {
      b.append(reason.contains("YARN") ? "YARN's" : "The cluster manager's")
          .append(" limit ")
          .append(Bytes.format(managerLimit));
      if (managerUsage > 0) {
        b.append(", ").append(Bytes.format(managerUsage)).append(" in use");
      }
      b.append("; ");
    }
    if (limit > 0) {
      b.append("Limit ").append(Bytes.format(limit));
      if (limitSource != null) {
        b.append(" (").append(limitSource).append(')');
      }
      b.append("; ");
    } else {
      b.append("No memory limit known; ");
    }
    if (lastSampleMillis < 0) {
      b.append("no sample from it");
    } else {
      b.append("last sample ").append(seconds(getSampleAgeMillis())).append(" before the removal:");
      String sep = " ";
      if (lastUnreclaimable >= 0) {
        b.append(sep).append("unreclaimable ").append(Bytes.mib(lastUnreclaimable));
        if (limit > 0) {
          b.append(" (").append(percent(lastUnreclaimable, limit)).append(" of the limit)");
        }
        sep = ", ";
      }
      if (lastRss >= 0) {
        b.append(sep).append("RSS ").append(Bytes.format(lastRss));
        if (limit > 0 && lastUnreclaimable < 0) {
          b.append(" (").append(percent(lastRss, limit)).append(" of the limit)");
        }
        sep = ", ";
      }
      if (lastHeapUsed >= 0) {
        b.append(sep).append("heap ").append(Bytes.format(lastHeapUsed)).append(" used");
        if (lastHeapCommitted >= 0) {
          b.append(" of ").append(Bytes.format(lastHeapCommitted)).append(" committed");
        }
      }
    }
    if (grownOverMillis > 0) {
      b.append("; grew over the last ").append(seconds(grownOverMillis)).append(": ");
      if (grownParts.isEmpty()) {
        b.append("no ledger part by 1 MiB or more");
      } else {
        int n = 0;
        for (Map.Entry<String, Long> e : grownParts.entrySet()) {
          if (n == GuardEpisodeEvent.PARTS_NAMED) {
            b.append(", …");
            break;
          }
          b.append(n++ > 0 ? ", " : "")
              .append(e.getKey())
              .append(" +")
              .append(Bytes.format(e.getValue()));
        }
      }
    }
    list(b, "pod guard", guardEpisodes);
    list(b, "crossings", crossings);
    list(b, "growth reports", growthReports);
    list(b, "tasks failed for memory", failedTasks);
    list(b, "last heap holders", heapHolders);
    if (!reason.isEmpty()) {
      b.append("; Spark's reason: ").append(reason.strip().replaceAll("\\s*\\n\\s*", " / "));
    }
    return b.toString();
  }

  private static void list(StringBuilder b, String what, List<String> lines) {
    if (!lines.isEmpty()) {
      b.append("; ").append(what).append(": ").append(String.join(" | ", lines));
    }
  }

  /** Milliseconds as seconds with one decimal, e.g. {@code 0.8 s}. */
  static String seconds(long millis) {
    return String.format(Locale.ROOT, "%.1f s", millis / 1000.0);
  }

  /** {@code part} as a percentage of {@code whole} with one decimal, e.g. {@code 99.9%}. */
  static String percent(long part, long whole) {
    return String.format(Locale.ROOT, "%.1f%%", 100.0 * part / whole);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ExecutorDiagnosisEvent e
        && Objects.equals(executorId, e.executorId)
        && timeMillis == e.timeMillis
        && reason.equals(e.reason)
        && Objects.equals(exitCode, e.exitCode)
        && cause == e.cause
        && suspected == e.suspected
        && verdict.equals(e.verdict)
        && limit == e.limit
        && Objects.equals(limitSource, e.limitSource)
        && lastSampleMillis == e.lastSampleMillis
        && lastRss == e.lastRss
        && lastUnreclaimable == e.lastUnreclaimable
        && lastHeapUsed == e.lastHeapUsed
        && lastHeapCommitted == e.lastHeapCommitted
        && grownOverMillis == e.grownOverMillis
        && grownParts.equals(e.grownParts)
        && guardEpisodes.equals(e.guardEpisodes)
        && crossings.equals(e.crossings)
        && growthReports.equals(e.growthReports)
        && failedTasks.equals(e.failedTasks)
        && revision == e.revision
        && Objects.equals(container, e.container)
        && managerLimit == e.managerLimit
        && managerUsage == e.managerUsage
        && heapHolders.equals(e.heapHolders);
  }

  @Override
  public int hashCode() {
    return Objects.hash(executorId, timeMillis, cause, revision);
  }

  @Override
  public String toString() {
    return "ExecutorDiagnosisEvent(" + describe() + ")";
  }
}
