package org.nativepool.spark.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.junit.FuzzTest;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.util.JsonProtocol;
import org.nativepool.spark.events.ExecutorDiagnosisEvent;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.LedgerSample;

/**
 * Fuzzes the driver's reading of an executor's loss ({@link LossReason#parse}, and the diagnosis
 * built on it, {@link ExecutorDiagnosis#diagnose}) with reason strings: the cluster manager's text,
 * which Spark passes on. The properties, for any reason:
 *
 * <ul>
 *   <li>neither parse nor diagnose throws (an exception would be lost in Spark's listener bus, and
 *       the executor's end with it), with or without evidence of the executor's last samples;
 *   <li>an exit code read is a number the reason writes, and a reported usage and limit are the
 *       sizes YARN's "N GB of M GB … memory used" writes, computed exactly;
 *   <li>the diagnosis event survives the event log: written by Spark's JSON protocol and read back,
 *       it says the same.
 * </ul>
 *
 * Seeds: Spark's, YARN's and Kubernetes' own wording of an executor's loss, as the driver's tests
 * quote them (src/test/resources/.../LossReasonFuzzTestInputs).
 */
class LossReasonFuzzTest {
  private static final long MIB = 1L << 20;
  private static final long T0 = 1_700_000_000_000L;
  private static final Pattern YARN_USAGE =
      Pattern.compile(
          "([0-9]+(?:\\.[0-9]+)?) ([KMGT]B) of ([0-9]+(?:\\.[0-9]+)?) ([KMGT]B) (physical|virtual)"
              + " memory used");

  /** Evidence of an executor near its limit: what makes diagnose weigh the reason against it. */
  private static ExecutorEvidence.Snapshot evidence() {
    ExecutorEvidence ev = new ExecutorEvidence();
    for (long t = T0 - 60_000; t <= T0; t += 1000) {
      Map<String, Long> gauges = new LinkedHashMap<>();
      gauges.put("guardLimit", 4096 * MIB);
      gauges.put("guardUnreclaimable", 4000 * MIB);
      Map<String, Long> parts = new LinkedHashMap<>();
      parts.put("jvm.direct", (1000 + (t - T0 + 60_000) / 100) * MIB);
      ev.add(
          new ExecutorSample(
              "7", t, t / 1000, gauges, 64 * MIB, 64 * MIB, new LedgerSample(parts, Map.of(), 0, Map.of())));
    }
    return ev.snapshot();
  }

  private static final ExecutorEvidence.Snapshot EVIDENCE = evidence();

  /**
   * YARN's "5.5 GB" in bytes, exactly (binary units, half up, at most {@link Long#MAX_VALUE}), or
   * -1 if it is not a number.
   */
  static long yarnBytes(String number, String unit) {
    BigDecimal v;
    try {
      v = new BigDecimal(number);
    } catch (NumberFormatException e) {
      return -1;
    }
    int shift = "KMGT".indexOf(unit.charAt(0)) * 10 + 10;
    java.math.BigInteger b =
        v.multiply(BigDecimal.valueOf(2).pow(shift)).setScale(0, RoundingMode.HALF_UP).toBigInteger();
    return b.bitLength() < 64 ? b.longValue() : Long.MAX_VALUE;
  }

  @FuzzTest(maxDuration = "2m")
  @DictionaryEntries({
    "Command exited with code ", "exited with exit code ", "Exit status: ", "Exit code is ",
    "exit code: ", "Container killed by YARN for exceeding physical memory limits. ",
    "is running beyond physical memory limits", " GB of ", " MB physical memory used",
    "termination reason: OOMKilled", "Executor heartbeat timed out after ", " ms",
    "following message: ", "reason: Evicted", "Executor killed by driver.", "137", "52", "-1",
    "2147483648"
  })
  void anyLossReasonIsReadAndDiagnosedWithoutThrowing(byte[] input) {
    String reason = new String(input, StandardCharsets.UTF_8);
    LossReason r = LossReason.parse(reason);
    assertNotNull(r.kind());
    assertFalse(r.detail().isEmpty());
    assertNotNull(r.toString());
    if (r.exitCode() != null) {
      assertTrue(reason.contains(Integer.toString(r.exitCode())), () -> "exit code " + r.exitCode());
    }
    if (r.reportedLimit() >= 0) {
      Matcher m = YARN_USAGE.matcher(reason);
      assertTrue(m.find(), "a reported limit without YARN's figures");
      assertEquals(yarnBytes(m.group(1), m.group(2)), r.reportedUsage(), "usage");
      assertEquals(yarnBytes(m.group(3), m.group(4)), r.reportedLimit(), "limit");
    }
    for (ExecutorEvidence.Snapshot ev : new ExecutorEvidence.Snapshot[] {ExecutorEvidence.Snapshot.EMPTY, EVIDENCE}) {
      for (boolean afterEnd : new boolean[] {false, true}) {
        ExecutorDiagnosisEvent d =
            ExecutorDiagnosis.diagnose(
                "7", T0 + 800, reason, ev, ExecutorDiagnosis.ContainerLimit.NONE, 10_000, afterEnd, 1);
        assertNotNull(d.getCause());
        assertNotNull(d.describe());
        String json = JsonProtocol.sparkEventToJsonString(d);
        ExecutorDiagnosisEvent back = (ExecutorDiagnosisEvent) JsonProtocol.sparkEventFromJson(json);
        assertEquals(d.getReason(), back.getReason());
        assertEquals(d.getCause(), back.getCause());
        assertEquals(d.describe(), back.describe(), "the diagnosis, replayed");
      }
    }
  }
}
