package org.nativepool.spark.driver;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.nativepool.spark.config.Bytes;

/**
 * What the reason string of Spark's {@code SparkListenerExecutorRemoved} says, read as Spark 4.1
 * writes it on each cluster manager (the string is the {@code ExecutorLossReason}'s message):
 *
 * <ul>
 *   <li>standalone: {@code Command exited with code N} (the worker's {@code ExecutorRunner}),
 *       {@code worker lost: …}, {@code Worker shutting down};
 *   <li>YARN: {@code Container killed by YARN for exceeding physical memory limits. 5.5 GB of 5.5
 *       GB physical memory used. …} (and the virtual memory form; the NodeManager's own {@code
 *       Container [pid=…,containerID=…] is running …B beyond the 'PHYSICAL' memory limit. Current
 *       usage: …} where Spark passes its diagnostics on), {@code Container marked as
 *       failed: … Exit status: N. …}, {@code Container from a bad node: … Exit status: N. …},
 *       {@code Container container_… was preempted.}, {@code Executor for container … exited
 *       because of a YARN event (e.g., preemption) …};
 *   <li>Kubernetes: {@code The executor with id N exited with exit code 137(SIGKILL, possible
 *       container OOM).} followed by the pod's status, whose container statuses may say {@code
 *       termination reason: OOMKilled}; {@code The executor with id N was deleted by a user or the
 *       framework.}; {@code … was not found in the cluster …}; an eviction ({@code Evicted});
 *   <li>any manager: {@code Executor heartbeat timed out after N ms}, {@code Remote RPC client
 *       disassociated. Likely due to containers exceeding thresholds, or network issues. …}, {@code
 *       Executor killed by driver.}, {@code Executor decommission: …}, {@code Stale executor after
 *       cluster manager re-registered.}, {@code Executor Process Lost}.
 * </ul>
 *
 * <p>The exit codes that mean something here: 137 (SIGKILL, what the kernel's OOM killer sends at a
 * memory cgroup's limit, but not only it), 52 (Spark's {@code SparkExitCode.OOM}: the executor's
 * uncaught-exception handler after an {@code OutOfMemoryError}), 143 (SIGTERM), 0, and -1, which
 * Kubernetes uses for "unknown". Immutable.
 *
 * @param kind what the reason says
 * @param exitCode the process's exit code, or null if the reason names none
 * @param detail what the reason says, in a few words, e.g. {@code Kubernetes reports the container
 *     OOMKilled}
 * @param reportedUsage the memory the resource manager found in use when it killed the container,
 *     bytes (YARN's message); -1 if none
 * @param reportedLimit the limit the resource manager enforced, bytes (YARN's message); -1 if none
 */
record LossReason(
    Kind kind, Integer exitCode, String detail, long reportedUsage, long reportedLimit) {
  /** What a reason says. */
  enum Kind {
    /** The resource manager says the container was killed for its memory. */
    MEMORY_KILL,
    /** Exit code 137, SIGKILL, with nothing saying why. */
    SIGKILL,
    /** Exit code 52: the JVM threw {@code OutOfMemoryError}. */
    JVM_OOM,
    /** Another exit code. */
    EXIT,
    /** {@code Executor killed by driver.}: dynamic allocation, exclusion, or the user. */
    DRIVER_KILLED,
    /** Decommissioned, preempted, or a clean exit: the executor ended on purpose. */
    ENDED,
    /** The driver lost it without an exit code. */
    LOST,
    /** Nothing recognised. */
    UNKNOWN
  }

  /** Spark's exit code after an {@code OutOfMemoryError} ({@code SparkExitCode.OOM}). */
  static final int SPARK_OOM_EXIT = 52;

  /** SIGKILL's exit code: 128 + 9. */
  static final int SIGKILL_EXIT = 137;

  /** SIGTERM's exit code: 128 + 15. */
  static final int SIGTERM_EXIT = 143;

  private static final Pattern YARN_MEMORY =
      Pattern.compile(
          "Container killed by YARN for exceeding (?:(physical|virtual) )?memory limits"
              + "|is running beyond (physical|virtual) memory limits"
              + "|is running \\S+ beyond the '(PHYSICAL|VIRTUAL)' memory limit"
              + "|Pod/Container killed for exceeding memory limits");

  private static final Pattern YARN_USAGE =
      Pattern.compile(
          "([0-9]+(?:\\.[0-9]+)? [KMGT]B) of ([0-9]+(?:\\.[0-9]+)? [KMGT]B) (physical|virtual) memory"
              + " used");

  private static final Pattern OOM_KILLED =
      Pattern.compile("termination reason:\\s*OOMKilled|\\bOOMKilled\\b");

  private static final Pattern EXIT_CODE =
      Pattern.compile(
          "Command exited with code (-?\\d+)"
              + "|exited with exit code (-?\\d+)"
              + "|Exit status: (-?\\d+)"
              + "|Exit code is (-?\\d+)"
              + "|exit code: (-?\\d+)");

  private static final Pattern HEARTBEAT =
      Pattern.compile("Executor heartbeat timed out after \\d+ ms");

  /** Reads a removal's reason string (null reads as empty). */
  static LossReason parse(String reason) {
    String r = reason == null ? "" : reason;
    Integer code = exitCode(r);
    Matcher yarn = YARN_MEMORY.matcher(r);
    if (yarn.find()) {
      long usage = -1;
      long limit = -1;
      String kind =
          yarn.group(1) != null
              ? yarn.group(1)
              : yarn.group(2) != null
                  ? yarn.group(2)
                  : yarn.group(3) != null ? yarn.group(3).toLowerCase(Locale.ROOT) : null;
      String used = null;
      String of = null;
      Matcher u = YARN_USAGE.matcher(r);
      if (u.find()) {
        used = u.group(1);
        of = u.group(2);
        usage = size(used);
        limit = size(of);
        kind = u.group(3);
      }
      boolean byYarn = r.contains("YARN") || yarn.group(2) != null || yarn.group(3) != null;
      String detail;
      if (byYarn) {
        // ContainerExitStatus.KILLED_EXCEEDED_PMEM (-104) and KILLED_EXCEEDED_VMEM (-103): the
        // statuses Spark's YarnAllocator writes this message for
        String status =
            "physical".equals(kind)
                ? " (exit status -104, KILLED_EXCEEDED_PMEM)"
                : "virtual".equals(kind) ? " (exit status -103, KILLED_EXCEEDED_VMEM)" : "";
        detail =
            "killed by YARN's memory check"
                + status
                + ": the NodeManager found the container's process tree "
                + (used != null ? "using " + used + " of its " + of + " " : "over its ")
                + (kind == null ? "" : kind + " ")
                + "memory limit";
      } else {
        detail =
            "the cluster manager killed the container for exceeding its "
                + (kind == null ? "" : kind + " ")
                + "memory limit"
                + (used != null ? " (" + used + " of " + of + " used)" : "");
      }
      return new LossReason(Kind.MEMORY_KILL, code, detail, usage, limit);
    }
    if (OOM_KILLED.matcher(r).find()) {
      return of(Kind.MEMORY_KILL, code, "Kubernetes reports the container OOMKilled");
    }
    if (r.contains("Executor killed by driver")) {
      return of(Kind.DRIVER_KILLED, code, "the driver killed it");
    }
    if (r.startsWith("Executor decommission") || r.contains("Finished decommissioning")) {
      return of(Kind.ENDED, code, "decommissioned");
    }
    if (r.contains("was preempted") || r.contains("because of a YARN event")) {
      return of(Kind.ENDED, code, "YARN preempted its container");
    }
    if (r.contains("brief reason: Evicted") || r.contains("reason: Evicted")) {
      return of(Kind.LOST, code, "Kubernetes evicted its pod" + podMessage(r));
    }
    if (r.contains("was deleted by a user or the framework")) {
      return of(Kind.LOST, code, "its pod was deleted by a user or the framework");
    }
    if (r.contains("was not found in the cluster")) {
      return of(Kind.LOST, code, "its pod was not found in the cluster");
    }
    Matcher hb = HEARTBEAT.matcher(r);
    if (hb.find()) {
      return of(Kind.LOST, code, "its " + hb.group().substring("Executor ".length()));
    }
    if (r.contains("Remote RPC client disassociated")) {
      return of(Kind.LOST, code, "its connection to the driver dropped");
    }
    if (r.startsWith("worker lost")) {
      return of(Kind.LOST, code, "its worker was lost");
    }
    if (r.contains("Worker shutting down")) {
      return of(Kind.LOST, code, "its worker shut down");
    }
    if (r.contains("Stale executor") || r.contains("Yarn deallocated")) {
      return of(Kind.LOST, code, "the cluster manager dropped it");
    }
    if (code != null) {
      switch (code) {
        case SIGKILL_EXIT:
          return of(Kind.SIGKILL, code, "exit code 137 is a SIGKILL");
        case SPARK_OOM_EXIT:
          return of(
              Kind.JVM_OOM,
              code,
              "exit code 52 is Spark's exit after an OutOfMemoryError in the executor's JVM");
        case 0:
          return of(Kind.ENDED, code, "it exited cleanly");
        default:
          return of(Kind.EXIT, code, explain(code));
      }
    }
    if (r.contains("Executor Process Lost") || r.contains("lost for unknown reasons")) {
      return of(Kind.LOST, null, "the cluster manager lost its process");
    }
    return of(Kind.UNKNOWN, null, "Spark's reason names no exit code and no cause known here");
  }

  private static LossReason of(Kind kind, Integer code, String detail) {
    return new LossReason(kind, code, detail, -1, -1);
  }

  /** The first exit code the reason names, or null (Kubernetes' -1 means unknown: null). */
  static Integer exitCode(String r) {
    Matcher m = EXIT_CODE.matcher(r);
    while (m.find()) {
      for (int g = 1; g <= m.groupCount(); g++) {
        if (m.group(g) != null) {
          try {
            int c = Integer.parseInt(m.group(g));
            if (c != -1) {
              return c;
            }
          } catch (NumberFormatException e) {
            // too long to be an exit code: look further
          }
        }
      }
    }
    return null;
  }

  /** An exit code in words, as Spark's {@code ExecutorExitCode.explainExitCode} and the shell. */
  static String explain(int code) {
    String base = "exit code " + code;
    switch (code) {
      case 1:
        return base + " (a generic failure: see the executor's log)";
      case 50:
        return base + " (an uncaught exception)";
      case 51:
        return base + " (an uncaught exception, and logging it failed)";
      case 53:
        return base + " (it failed to create a local directory: spark.local.dir?)";
      case 56:
        return base + " (it could not send heartbeats to the driver)";
      case 57:
        return base + " (Spark's task reaper killed it)";
      case 58:
        return base + " (its block manager failed to re-register)";
      case 134:
        return base + " (SIGABRT: the JVM aborted, see its hs_err file)";
      case 139:
        return base + " (SIGSEGV: a crash in native code, see the JVM's hs_err file)";
      case SIGTERM_EXIT:
        return base + " (SIGTERM: stopped by its worker, node or cluster manager)";
      default:
        if (code > 128 && code < 160) {
          return base + " (died from signal " + (code - 128) + ")";
        }
        if (code < 0) {
          return base + " (the cluster manager's own status)";
        }
        return base;
    }
  }

  /** The pod's status message from a Kubernetes reason, as {@code : message}, or empty. */
  private static String podMessage(String r) {
    Matcher m = Pattern.compile("following message: ([^\\n]+)").matcher(r);
    return m.find() && !m.group(1).equals("N/A") ? ": " + m.group(1).strip() : "";
  }

  /**
   * YARN's {@code 5.5 GB} as bytes (binary units, as Hadoop's {@code StringUtils} prints), rounded
   * half up, at most {@link Long#MAX_VALUE}; computed exactly, so no figure of the message is
   * misread. The text is what {@link #YARN_USAGE} matched: digits, an optional fraction, a unit.
   */
  static long size(String s) {
    String[] p = s.trim().split(" ");
    int shift =
        switch (p[1].toUpperCase(Locale.ROOT)) {
          case "KB" -> 10;
          case "MB" -> 20;
          case "GB" -> 30;
          case "TB" -> 40;
          default -> 0;
        };
    BigInteger bytes =
        new BigDecimal(p[0])
            .multiply(BigDecimal.valueOf(2).pow(shift))
            .setScale(0, RoundingMode.HALF_UP)
            .toBigIntegerExact();
    return bytes.bitLength() < 64 ? bytes.longValue() : Long.MAX_VALUE;
  }

  /** For tests and logs: the reason in one line. */
  @Override
  public String toString() {
    return kind
        + (exitCode == null ? "" : " " + exitCode)
        + ": "
        + detail
        + (reportedLimit > 0
            ? " [" + Bytes.format(reportedUsage) + "/" + Bytes.format(reportedLimit) + "]"
            : "");
  }
}
