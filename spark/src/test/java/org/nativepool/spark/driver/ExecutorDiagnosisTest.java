package org.nativepool.spark.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.events.ExecutorDiagnosisEvent.Cause;
import org.nativepool.spark.events.ExecutorDiagnosisEvent;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.events.GuardEpisodeEvent;
import org.nativepool.spark.events.HeapHolder;
import org.nativepool.spark.events.HeapHoldersEvent;
import org.nativepool.spark.events.LedgerCrossingEvent;
import org.nativepool.spark.events.LedgerSample;

/**
 * {@link ExecutorDiagnosis} and {@link ExecutorEvidence} as pure functions: made-up sample
 * histories on a made-up clock (epoch ms from {@link #T0}), and removal reasons as Spark 4.1 writes
 * them on standalone, YARN and Kubernetes; no Spark and no library needed.
 */
class ExecutorDiagnosisTest {
  private static final long MIB = 1L << 20;
  private static final long T0 = 1_700_000_000_000L;
  private static final long HEARTBEAT = 1_000;
  private static final long LIMIT = 4096 * MIB;

  /** A sample at {@code t} with a guard limit (or none: 0) and these ledger parts. */
  private static ExecutorSample sample(
      long t, long guardLimit, long unreclaimable, long direct, long heapUsed) {
    Map<String, Long> gauges = new LinkedHashMap<>();
    gauges.put("reserved", 64 * MIB);
    gauges.put("guardLimit", guardLimit > 0 ? guardLimit : -1);
    gauges.put("guardUnreclaimable", guardLimit > 0 ? unreclaimable : -1);
    gauges.put("guardReserve", guardLimit > 0 ? 82 * MIB : 0);
    gauges.put("rssBytes", unreclaimable + 10 * MIB);
    Map<String, Long> parts = new LinkedHashMap<>();
    parts.put("jvm.heap.resident", 1024 * MIB);
    parts.put("jvm.heap.committed", 1024 * MIB);
    parts.put("jvm.heap.used", heapUsed);
    parts.put("jvm.direct", direct);
    parts.put("netty.shared.direct", 48 * MIB);
    parts.put("netty.shared.used", 2 * MIB + direct / 4);
    parts.put("native.reserved", 64 * MIB);
    parts.put("rss", unreclaimable + 10 * MIB);
    parts.put("unexplained", 20 * MIB);
    return new ExecutorSample(
        "7",
        t,
        t / 1000,
        gauges,
        64 * MIB,
        64 * MIB,
        new LedgerSample(parts, Map.of(), 0, Map.of()));
  }

  /**
   * Evidence of an executor whose direct buffers grow by 5 MiB per second for 120 s, ending at
   * {@code end}, with unreclaimable memory {@code endUnreclaimable} at the end.
   */
  private static ExecutorEvidence growing(long end, long guardLimit, long endUnreclaimable) {
    ExecutorEvidence ev = new ExecutorEvidence();
    for (long t = end - 120_000; t <= end; t += 500) {
      long grown = (t - (end - 120_000)) / 1000 * 5 * MIB;
      ev.add(
          sample(
              t, guardLimit, endUnreclaimable - 600 * MIB + grown, 100 * MIB + grown, 700 * MIB));
    }
    return ev;
  }

  private static ExecutorDiagnosisEvent diagnose(String reason, ExecutorEvidence ev, long removal) {
    return ExecutorDiagnosis.diagnose(
        "7",
        removal,
        reason,
        ev == null ? ExecutorEvidence.Snapshot.EMPTY : ev.snapshot(),
        ExecutorDiagnosis.ContainerLimit.NONE,
        HEARTBEAT,
        1);
  }

  @Test
  void standaloneExit137AtTheGuardsLimitIsAContainerKillWithTheGrowthBeforeIt() {
    ExecutorEvidence ev = growing(T0, LIMIT, LIMIT - 20 * MIB);
    ExecutorDiagnosisEvent d = diagnose("Command exited with code 137", ev, T0 + 800);
    assertEquals(Cause.CONTAINER_KILLED, d.getCause());
    assertNull(d.getSuspected());
    assertEquals(137, d.getExitCode());
    assertEquals(LIMIT, d.getLimit());
    assertEquals("the pod guard's", d.getLimitSource());
    assertEquals(T0, d.getLastSampleMillis());
    assertEquals(800, d.getSampleAgeMillis());
    assertEquals(LIMIT - 20 * MIB, d.getLastUnreclaimable());
    assertEquals(700 * MIB, d.getLastHeapUsed());
    assertEquals(1024 * MIB, d.getLastHeapCommitted());
    assertEquals(60_000, d.getGrownOverMillis());
    assertEquals(
        List.of("jvm.direct"),
        List.copyOf(d.getGrownParts().keySet()),
        "only jvm.direct grew; detail (netty used) and accounting parts do not count: "
            + d.getGrownParts());
    assertEquals(300 * MIB, d.getGrownParts().get("jvm.direct"));
    assertTrue(
        d.getVerdict()
            .startsWith(
                "exit code 137 is a SIGKILL, and the last sample, 0.8 s before the removal, had"
                    + " its unreclaimable memory at 99.5% of the 4.0 GiB limit"),
        d.getVerdict());
    String line = d.describe();
    assertTrue(
        line.startsWith(
            "nativepool: executor 7 ended: killed by its container's memory limit (exit code"
                + " 137): exit code 137 is a SIGKILL"),
        line);
    assertTrue(
        line.contains(
            "Limit 4.0 GiB (the pod guard's); last sample 0.8 s before the removal: unreclaimable"
                + " 4,076.0 MiB (99.5% of the limit), RSS 4.0 GiB, heap 700.0 MiB used of 1.0 GiB"
                + " committed; grew over the last 60.0 s: jvm.direct +300.0 MiB; Spark's reason:"
                + " Command exited with code 137"),
        line);
  }

  @Test
  void exit137LongAfterALowSampleIsUndecidedAndSaysWhatIsKnown() {
    ExecutorEvidence ev = growing(T0, LIMIT, 1600 * MIB);
    ExecutorDiagnosisEvent d = diagnose("Command exited with code 137", ev, T0 + 300_000);
    assertEquals(Cause.UNDECIDED, d.getCause());
    assertEquals(Cause.CONTAINER_KILLED, d.getSuspected());
    assertTrue(
        d.getVerdict()
            .endsWith(
                "nothing shows the limit reached: the last sample, 300.0 s before the removal,"
                    + " had its unreclaimable memory at 39.1% of the 4.0 GiB limit"),
        d.getVerdict());
    assertTrue(
        d.describe()
            .startsWith(
                "nativepool: executor 7 ended: undecided (killed by its container's memory limit"
                    + " would fit) (exit code 137): "),
        d.describe());

    ExecutorDiagnosisEvent recentButLow = diagnose("Command exited with code 137", ev, T0 + 500);
    assertEquals(Cause.UNDECIDED, recentButLow.getCause(), "recent, but far below the limit");

    ExecutorDiagnosisEvent none = diagnose("Command exited with code 137", null, T0);
    assertEquals(Cause.UNDECIDED, none.getCause());
    assertTrue(none.getVerdict().endsWith("the executor sent no sample"), none.getVerdict());
    assertTrue(
        none.describe().contains("No memory limit known; no sample from it"), none.describe());
  }

  @Test
  void theGuardFindingNothingLeftToGiveDecidesAKillEvenWithoutAFreshSample() {
    ExecutorEvidence ev = growing(T0, LIMIT, 3000 * MIB);
    ev.add(
        new GuardEpisodeEvent(
            "7",
            4,
            T0 + 2_000,
            0,
            LIMIT,
            82 * MIB,
            LIMIT - 60 * MIB,
            LIMIT - 10 * MIB,
            3000 * MIB,
            3900 * MIB,
            512 * MIB,
            4_000,
            3_000_000,
            0,
            1,
            true,
            Map.of("jvm.direct", 800 * MIB),
            Map.of("sort (task 9)", 512 * MIB)));
    ExecutorDiagnosisEvent d = diagnose("Command exited with code 137", ev, T0 + 12_000);
    assertEquals(Cause.CONTAINER_KILLED, d.getCause());
    assertTrue(
        d.getVerdict().endsWith("the pod guard's episode 4 found nothing native left to give"),
        d.getVerdict());
    assertEquals(1, d.getGuardEpisodes().size());
    assertTrue(
        d.getGuardEpisodes().get(0).startsWith("pod guard episode 4: spilled 512.0 MiB"),
        d.getGuardEpisodes()::toString);
  }

  @Test
  void kubernetesOomKilledDecidesWithoutSamplesAndAPlainSigkillDoesNot() {
    String oomKilled =
        "\nThe executor with id 7 exited with exit code 137(SIGKILL, possible container OOM).\n"
            + "The API gave the following brief reason: N/A\n"
            + "The API gave the following message: N/A\n\n"
            + "The API gave the following container statuses:\n\n"
            + "\t container name: spark-kubernetes-executor\n"
            + "\t container image: spark:4.1.3\n"
            + "\t container state: terminated\n"
            + "\t container started at: 2026-12-03T08:00:00Z\n"
            + "\t container finished at: 2026-12-03T08:10:00Z\n"
            + "\t exit code: 137\n"
            + "\t termination reason: OOMKilled\n";
    ExecutorDiagnosisEvent d = diagnose(oomKilled, null, T0);
    assertEquals(Cause.CONTAINER_KILLED, d.getCause());
    assertEquals(137, d.getExitCode());
    assertEquals("Kubernetes reports the container OOMKilled", d.getVerdict());
    assertTrue(
        d.describe().contains("Spark's reason: The executor with id 7 exited with exit code 137"),
        d.describe());
    assertFalse(d.describe().contains("\n"), "one line");

    String sigkill =
        oomKilled.replace("termination reason: OOMKilled", "termination reason: Error");
    ExecutorDiagnosisEvent u = diagnose(sigkill, null, T0);
    assertEquals(Cause.UNDECIDED, u.getCause());
    assertEquals(Cause.CONTAINER_KILLED, u.getSuspected());
  }

  @Test
  void yarnsMemoryKillGivesTheLimitWhenNoGuardHadOne() {
    String yarn =
        "Container killed by YARN for exceeding physical memory limits. 5.5 GB of 5.5 GB physical"
            + " memory used. Consider boosting spark.executor.memoryOverhead.";
    ExecutorDiagnosisEvent d = diagnose(yarn, growing(T0, 0, 5000 * MIB), T0 + 2_000);
    assertEquals(Cause.CONTAINER_KILLED, d.getCause());
    assertNull(d.getExitCode());
    assertEquals(
        "killed by YARN's memory check (exit status -104, KILLED_EXCEEDED_PMEM): the NodeManager"
            + " found the container's process tree using 5.5 GB of its 5.5 GB physical memory"
            + " limit",
        d.getVerdict());
    assertEquals(Math.round(5.5 * 1024) * MIB, d.getLimit());
    assertEquals("the cluster manager's message", d.getLimitSource());
    assertEquals(-1, d.getLastUnreclaimable(), "no guard");
    assertEquals(5010 * MIB, d.getLastRss());
  }

  @Test
  void theContainerSizeIsTheLimitWithoutAGuardAndTheResidentSetIsComparedToIt() {
    ExecutorEvidence ev = growing(T0, 0, 4000 * MIB);
    ExecutorDiagnosisEvent d =
        ExecutorDiagnosis.diagnose(
            "7",
            T0 + 1_000,
            "Command exited with code 137",
            ev.snapshot(),
            new ExecutorDiagnosis.ContainerLimit(
                LIMIT,
                "executor memory 1.0 GiB + off-heap 2.6 GiB + memoryOverhead 384.0 MiB = 4.0 GiB"),
            HEARTBEAT,
            1);
    assertEquals(Cause.CONTAINER_KILLED, d.getCause());
    assertTrue(d.getLimitSource().startsWith("the container size: executor memory"));
    assertTrue(
        d.getVerdict().contains("had its resident set at 97.9% of the 4.0 GiB limit"),
        d.getVerdict());
    assertTrue(d.describe().contains("RSS 3.9 GiB (97.9% of the limit)"), d.describe());
  }

  @Test
  void exit52AndOutOfMemoryErrorsInTasksAreTheJvmsOwn() {
    ExecutorEvidence ev = growing(T0, LIMIT, 2000 * MIB);
    ev.add(
        new ExecutorEvidence.TaskFailure(
            T0 + 1_000,
            "task 41 (3.0) in stage 2.0: java.lang.OutOfMemoryError: Java heap space",
            true));
    ExecutorDiagnosisEvent d = diagnose("Command exited with code 52", ev, T0 + 1_500);
    assertEquals(Cause.JVM_OUT_OF_MEMORY, d.getCause());
    assertEquals(
        "exit code 52 is Spark's exit after an OutOfMemoryError in the executor's JVM (task 41"
            + " (3.0) in stage 2.0: java.lang.OutOfMemoryError: Java heap space)",
        d.getVerdict());
    assertEquals(
        List.of("task 41 (3.0) in stage 2.0: java.lang.OutOfMemoryError: Java heap space"),
        d.getFailedTasks());

    ExecutorDiagnosisEvent sigterm = diagnose("Command exited with code 143", ev, T0 + 2_000);
    assertEquals(Cause.JVM_OUT_OF_MEMORY, sigterm.getCause(), "OnOutOfMemoryError='kill %p'");
    assertTrue(
        sigterm
            .getVerdict()
            .endsWith(
                "then the executor ended with exit code 143 (SIGTERM:"
                    + " stopped by its worker, node or cluster manager)"),
        sigterm.getVerdict());

    ExecutorDiagnosisEvent later = diagnose("Command exited with code 143", ev, T0 + 200_000);
    assertEquals(Cause.EXITED, later.getCause(), "an OOM minutes before does not explain it");
    assertEquals(1, later.getFailedTasks().size(), "but it is shown");

    ExecutorDiagnosisEvent k8s52 =
        diagnose("The executor with id 7 exited with exit code 52(JVM OOM).", null, T0);
    assertEquals(Cause.JVM_OUT_OF_MEMORY, k8s52.getCause());
  }

  @Test
  void aJvmOutOfHeapSpaceNamesTheLastHeapHoldersKnownAndOtherEndsDoNot() {
    ExecutorEvidence ev = growing(T0, LIMIT, 2000 * MIB);
    HeapHolder h =
        new HeapHolder(
            "long[]",
            131072,
            21,
            21 * MIB,
            T0 - 60_000,
            T0 - 1_000,
            List.of("org.example.LeakedRecord.<init>:41"),
            List.of("org.example.LeakedRecord.values", "static org.example.Job.LEAK"),
            "Threads / Stack Variable");
    ev.add(
        new GrowthReportEvent(
            "7",
            T0 - 500,
            "jvm.heap.afterGc",
            100 * MIB,
            900 * MIB,
            200,
            400,
            List.of(),
            List.of(h),
            "60 samples kept by the JVM",
            GrowthReportEvent.TASK));
    ev.add(new HeapHoldersEvent("7", T0, "on demand by bob", 0, "refused: busy", List.of()));
    ev.add(
        new ExecutorEvidence.TaskFailure(
            T0 + 1_000,
            "task 41 (3.0) in stage 2.0: java.lang.OutOfMemoryError: Java heap space",
            true));
    ExecutorDiagnosisEvent d = diagnose("Command exited with code 52", ev, T0 + 1_500);
    assertEquals(Cause.JVM_OUT_OF_MEMORY, d.getCause());
    assertEquals(2, d.getHeapHolders().size(), d.getHeapHolders().toString());
    assertTrue(
        d.getHeapHolders().get(0).contains("(growth of jvm.heap.afterGc): 60 samples"),
        d.getHeapHolders().get(0));
    assertEquals(h.describe(), d.getHeapHolders().get(1));
    assertTrue(d.describe().contains("; last heap holders: at "), d.describe());
    assertTrue(
        d.getGrowthReports().get(0).endsWith("(4.0 MiB per task)"),
        "the growth line without its holders: " + d.getGrowthReports());

    ExecutorDiagnosisEvent killed = diagnose("Command exited with code 137", ev, T0 + 200_000);
    assertEquals(List.of(), killed.getHeapHolders(), "only for a JVM out of memory");
  }

  @Test
  void otherExitCodesAreTheExecutorsOwn() {
    ExecutorDiagnosisEvent d = diagnose("Command exited with code 1", null, T0);
    assertEquals(Cause.EXITED, d.getCause());
    assertEquals(
        "it ended with exit code 1 (a generic failure: see the executor's log)", d.getVerdict());
    assertEquals(
        Cause.EXITED,
        diagnose(
                "Container marked as failed: container_1_0001_01_000003 on host: h. Exit status:"
                    + " 134. Possible causes: Unknown executor exit code (134) (died from signal"
                    + " 6?) Diagnostics: .",
                null,
                T0)
            .getCause());
    assertEquals(
        "it ended with exit code 139 (SIGSEGV: a crash in native code, see the JVM's hs_err file)",
        diagnose("Command exited with code 139", null, T0).getVerdict());
  }

  @Test
  void lossWithoutACodeIsLostAndSuspectsTheContainerOnlyWhenTheEvidenceFits() {
    String rpc =
        "Remote RPC client disassociated. Likely due to containers exceeding thresholds, or network"
            + " issues. Check driver logs for WARN messages.";
    ExecutorDiagnosisEvent atLimit = diagnose(rpc, growing(T0, LIMIT, LIMIT - 10 * MIB), T0 + 900);
    assertEquals(Cause.LOST, atLimit.getCause());
    assertEquals(Cause.CONTAINER_KILLED, atLimit.getSuspected());
    assertTrue(
        atLimit
            .getVerdict()
            .startsWith(
                "its connection to the driver dropped, and Spark gave"
                    + " no exit code: the last sample"),
        atLimit.getVerdict());
    assertTrue(atLimit.getVerdict().endsWith(": a container kill would fit, undecided"));

    ExecutorDiagnosisEvent low = diagnose(rpc, growing(T0, LIMIT, 1000 * MIB), T0 + 900);
    assertEquals(Cause.LOST, low.getCause());
    assertNull(low.getSuspected());

    ExecutorDiagnosisEvent hb =
        diagnose(
            "Executor heartbeat timed out after 125000 ms",
            growing(T0, LIMIT, LIMIT),
            T0 + 125_000);
    assertEquals(Cause.LOST, hb.getCause());
    assertNull(hb.getSuspected(), "the last sample is two minutes old");
    assertTrue(
        hb.getVerdict().startsWith("its heartbeat timed out after 125000 ms"), hb.getVerdict());
  }

  @Test
  void endsOnPurposeAreNormalUnlessTasksRanOutOfSparksMemory() {
    ExecutorDiagnosisEvent killed = diagnose("Executor killed by driver.", null, T0);
    assertEquals(Cause.ENDED, killed.getCause());
    assertTrue(killed.isNormal());
    assertEquals(
        Cause.ENDED,
        diagnose("Executor decommission: Finished decommissioning", null, T0).getCause());
    assertEquals(
        Cause.ENDED,
        diagnose("Container container_1_0001_01_000002 on host: h was preempted.", null, T0)
            .getCause());
    assertEquals(Cause.ENDED, diagnose("Command exited with code 0", null, T0).getCause());

    ExecutorEvidence ev = new ExecutorEvidence();
    ev.add(
        new ExecutorEvidence.TaskFailure(
            T0 - 30_000,
            "task 3 (1.0) in stage 5.0: org.apache.spark.memory.SparkOutOfMemoryError:"
                + " [UNABLE_TO_ACQUIRE_MEMORY]",
            false));
    ExecutorDiagnosisEvent managed = diagnose("Executor killed by driver.", ev, T0);
    assertEquals(Cause.MANAGED_MEMORY_EXHAUSTED, managed.getCause());
    assertFalse(managed.isNormal());
    assertEquals(1, managed.getFailedTasks().size());
  }

  @Test
  void afterTheApplicationEndedOnlyAReasonNamingMemoryKeepsItsCause() {
    ExecutorEvidence ev = growing(T0, LIMIT, LIMIT - 20 * MIB);
    for (String reason :
        List.of(
            "Command exited with code 137",
            "Command exited with code 143",
            "The executor with id 7 was deleted by a user or the framework.",
            "Remote RPC client disassociated. Likely due to containers exceeding thresholds, or"
                + " network issues. Check driver logs for WARN messages.")) {
      ExecutorDiagnosisEvent d =
          ExecutorDiagnosis.diagnose(
              "7",
              T0 + 500,
              reason,
              ev.snapshot(),
              ExecutorDiagnosis.ContainerLimit.NONE,
              HEARTBEAT,
              true,
              1);
      assertEquals(Cause.ENDED, d.getCause(), reason);
      assertTrue(d.getVerdict().startsWith("removed as the application ended ("), d.getVerdict());
    }
    ExecutorDiagnosisEvent oom =
        ExecutorDiagnosis.diagnose(
            "7",
            T0 + 500,
            "Command exited with code 52",
            ev.snapshot(),
            ExecutorDiagnosis.ContainerLimit.NONE,
            HEARTBEAT,
            true,
            1);
    assertEquals(Cause.JVM_OUT_OF_MEMORY, oom.getCause());
  }

  @Test
  void aReasonWithNothingKnownIsUndecided() {
    ExecutorDiagnosisEvent d = diagnose("", null, T0);
    assertEquals(Cause.UNDECIDED, d.getCause());
    assertNull(d.getExitCode());
    assertTrue(
        d.getVerdict().startsWith("Spark's reason names no exit code and no cause known here"));
    assertEquals(Cause.UNDECIDED, diagnose("something new", null, T0).getCause());
  }

  @Test
  void reasonsAsEachClusterManagerWritesThem() {
    Object[][] cases = {
      {"Command exited with code 137", LossReason.Kind.SIGKILL, 137},
      {"Command exited with code 52", LossReason.Kind.JVM_OOM, 52},
      {"Command exited with code 0", LossReason.Kind.ENDED, 0},
      {"Command exited with code 1", LossReason.Kind.EXIT, 1},
      {
        "The executor with id 3 exited with exit code 137(SIGKILL, possible container OOM).",
        LossReason.Kind.SIGKILL,
        137
      },
      {
        "The executor with id 3 exited with exit code 137.\n\t termination reason: OOMKilled",
        LossReason.Kind.MEMORY_KILL,
        137
      },
      {
        "The executor with id 3 exited with exit code -1(unexpected).",
        LossReason.Kind.UNKNOWN,
        null
      },
      {
        "The executor with id 3 was deleted by a user or the framework.", LossReason.Kind.LOST, null
      },
      {
        "The executor with ID 3 (registered at 1 ms) was not found in the cluster at the polling"
            + " time",
        LossReason.Kind.LOST,
        null
      },
      {
        "The executor with id 3 exited with exit code 137.\n"
            + "The API gave the following brief reason: Evicted\n"
            + "The API gave the following message: The node was low on resource: memory.",
        LossReason.Kind.LOST,
        137
      },
      {
        "Container killed by YARN for exceeding memory limits. 40.6 GB of 40 GB physical memory"
            + " used. Consider boosting spark.yarn.executor.memoryOverhead.",
        LossReason.Kind.MEMORY_KILL,
        null
      },
      {
        "Container killed by YARN for exceeding virtual memory limits. 9.3 GB of 8.4 GB virtual"
            + " memory used. Consider boosting spark.executor.memoryOverhead or boosting"
            + " yarn.nodemanager.vmem-pmem-ratio or disabling"
            + " yarn.nodemanager.vmem-check-enabled.",
        LossReason.Kind.MEMORY_KILL,
        null
      },
      {
        "Container marked as failed: container_1_01_000003 on host: h. Exit status: 137. Possible"
            + " causes: Unknown executor exit code (137) (died from signal 9?) Diagnostics:"
            + " [2024-01-01 10:00:00.000]Container killed on request. Exit code is 137",
        LossReason.Kind.SIGKILL,
        137
      },
      {
        "Container from a bad node: container_1_01_000003 on host: h. Exit status: 1. Possible"
            + " causes: Uncaught exception Diagnostics: .",
        LossReason.Kind.EXIT,
        1
      },
      {
        "Executor for container container_1_01_000002 exited because of a YARN event (e.g.,"
            + " preemption) and not because of an error in the running job.",
        LossReason.Kind.ENDED,
        null
      },
      {"Executor heartbeat timed out after 130542 ms", LossReason.Kind.LOST, null},
      {
        "Remote RPC client disassociated. Likely due to containers exceeding thresholds, or network"
            + " issues. Check driver logs for WARN messages.",
        LossReason.Kind.LOST,
        null
      },
      {"worker lost: Not receiving heartbeat for 60 seconds", LossReason.Kind.LOST, null},
      {"Worker shutting down", LossReason.Kind.LOST, null},
      {"Stale executor after cluster manager re-registered.", LossReason.Kind.LOST, null},
      {"Executor Process Lost", LossReason.Kind.LOST, null},
      {"Executor killed by driver.", LossReason.Kind.DRIVER_KILLED, null},
      {"Executor decommission: worker decommissioned", LossReason.Kind.ENDED, null},
      {"Unable to send heartbeats to driver.", LossReason.Kind.UNKNOWN, null},
      {null, LossReason.Kind.UNKNOWN, null},
    };
    for (Object[] c : cases) {
      LossReason r = LossReason.parse((String) c[0]);
      assertEquals(c[1], r.kind(), "kind of " + c[0]);
      assertEquals(c[2], r.exitCode(), "exit code of " + c[0]);
    }
    LossReason vmem = LossReason.parse((String) cases[11][0]);
    assertEquals(Math.round(8.4 * (1L << 30)), vmem.reportedLimit());
    assertEquals(Math.round(9.3 * (1L << 30)), vmem.reportedUsage());
    assertEquals(
        "Kubernetes evicted its pod: The node was low on resource: memory.",
        LossReason.parse((String) cases[9][0]).detail());
  }

  @Test
  void theEvidenceKeepsAMinuteAtOnePerSecondAndTenMinutesAtOnePer30Seconds() {
    ExecutorEvidence ev = new ExecutorEvidence();
    long end = T0 + 20 * 60_000;
    for (long t = T0; t <= end; t += 100) {
      ev.add(sample(t, LIMIT, 1000 * MIB, 100 * MIB, 500 * MIB));
    }
    List<ExecutorEvidence.Point> points = ev.snapshot().points();
    assertTrue(points.size() <= 81, "at most 81 points: " + points.size());
    assertEquals(end, points.get(points.size() - 1).timeMillis, "the newest is kept");
    assertTrue(end - points.get(0).timeMillis <= ExecutorEvidence.COARSE_SPAN_MILLIS);
    assertTrue(end - points.get(0).timeMillis > ExecutorEvidence.COARSE_SPAN_MILLIS - 31_000);
    long fine = points.stream().filter(p -> end - p.timeMillis <= 60_000).count();
    assertTrue(fine >= 60 && fine <= 61, "one per second over the last minute: " + fine);
    for (int i = 1; i < points.size(); i++) {
      long gap = points.get(i).timeMillis - points.get(i - 1).timeMillis;
      boolean old = end - points.get(i).timeMillis > 60_000;
      assertTrue(gap >= (old ? 30_000 : 1_000) || i == points.size() - 1, "gap " + gap);
    }

    for (int i = 0; i < 20; i++) {
      ev.add(
          new LedgerCrossingEvent(
              "7", T0 + i, "jvm.direct", 256 * MIB, true, 300 * MIB, 230 * MIB));
      ev.add(new ExecutorEvidence.TaskFailure(T0 + i, "task " + i, true));
    }
    ExecutorEvidence.Snapshot s = ev.snapshot();
    assertEquals(ExecutorEvidence.CROSSINGS_KEPT, s.crossings().size());
    assertEquals(ExecutorEvidence.FAILURES_KEPT, s.failures().size());
    assertEquals("task 19", s.failures().get(s.failures().size() - 1).line(), "the last ones");
    assertEquals("jvm.direct rose to 300.0 MiB, crossing 256.0 MiB", s.crossings().get(0));
  }

  @Test
  void taskFailuresForMemoryAreToldApart() {
    assertEquals(Boolean.TRUE, ExecutorEnds.memoryFailure("java.lang.OutOfMemoryError", ""));
    assertEquals(
        Boolean.FALSE,
        ExecutorEnds.memoryFailure("org.apache.spark.memory.SparkOutOfMemoryError", null));
    assertEquals(
        Boolean.TRUE,
        ExecutorEnds.memoryFailure(
            "org.apache.spark.SparkException",
            "org.apache.spark.SparkException: boom\n"
                + "Caused by: java.lang.OutOfMemoryError: Java heap space\n"));
    assertNull(ExecutorEnds.memoryFailure("java.lang.IllegalStateException", "at x.y(Z.java:1)"));
  }

  /**
   * On YARN the diagnosis names the executor's container (from its attributes) and the limit YARN
   * enforced with what it measured, whatever the pod guard's limit.
   */
  @Test
  void yarnsMemoryKillNamesTheContainerAndTheLimitYarnEnforced() {
    String yarn =
        "Container killed by YARN for exceeding physical memory limits. 1.2 GB of 1.1 GB physical"
            + " memory used. Consider boosting spark.executor.memoryOverhead.";
    ExecutorEvidence ev = growing(T0, 1152 * MIB, 1100 * MIB);
    ev.container("container_1765000000000_0001_01_000002");
    ExecutorDiagnosisEvent d = diagnose(yarn, ev, T0 + 1_000);
    assertEquals(Cause.CONTAINER_KILLED, d.getCause());
    assertTrue(d.getVerdict().startsWith("killed by YARN's memory check (exit status -104"));
    assertEquals("container_1765000000000_0001_01_000002", d.getContainer());
    assertEquals(Math.round(1.1 * (1L << 30)), d.getManagerLimit());
    assertEquals(Math.round(1.2 * (1L << 30)), d.getManagerUsage());
    assertEquals(1152 * MIB, d.getLimit(), "the guard's, which the samples carry");
    assertTrue(
        d.describe().contains("Container container_1765000000000_0001_01_000002; YARN's limit"),
        d::describe);
    assertEquals("1.1 GiB, enforced by YARN (1.2 GiB in use)", d.limitText());
    assertTrue(d.describe().contains("jvm.direct +"), "the part that grew: " + d.describe());
  }

  @Test
  void theNodeManagersOwnWordingIsAMemoryKillAndItsContainerIsTakenFromTheReason() {
    String nm =
        "Container marked as failed: container_1765000000000_0001_01_000003 on host: h. Exit"
            + " status: 143. Diagnostics: Container [pid=4242,containerID=container_1765000000000"
            + "_0001_01_000003] is running 139427328B beyond the 'PHYSICAL' memory limit. Current"
            + " usage: 1.2 GB of 1.1 GB physical memory used; 3.1 GB of 2.3 GB virtual memory used."
            + " Killing container.";
    LossReason r = LossReason.parse(nm);
    assertEquals(LossReason.Kind.MEMORY_KILL, r.kind());
    assertEquals(143, r.exitCode());
    assertTrue(r.detail().contains("killed by YARN's memory check"), r.detail());
    assertTrue(r.detail().contains("using 1.2 GB of its 1.1 GB physical memory limit"), r.detail());
    ExecutorDiagnosisEvent d = diagnose(nm, null, T0);
    assertEquals("container_1765000000000_0001_01_000003", d.getContainer());
    assertNull(ExecutorDiagnosis.containerIn("Executor heartbeat timed out after 130542 ms"));
  }
}
