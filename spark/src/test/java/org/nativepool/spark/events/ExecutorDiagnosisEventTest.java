package org.nativepool.spark.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.util.JsonProtocol;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.events.ExecutorDiagnosisEvent.Cause;

/**
 * {@link ExecutorDiagnosisEvent} through the event log as Spark writes and replays it ({@code
 * JsonProtocol}, what the History Server does), and its line; no library needed.
 */
class ExecutorDiagnosisEventTest {
  private static final long MIB = 1L << 20;
  private static final long T0 = 1_700_000_000_000L;

  private static ExecutorDiagnosisEvent killed() {
    Map<String, Long> grown = new LinkedHashMap<>();
    grown.put("jvm.direct", 300 * MIB);
    grown.put("netty.shared.direct", 32 * MIB);
    return new ExecutorDiagnosisEvent(
        "7",
        T0 + 800,
        "Command exited with code 137",
        137,
        Cause.CONTAINER_KILLED,
        null,
        "exit code 137 is a SIGKILL, and the last sample had its unreclaimable memory at 99.5%",
        4096 * MIB,
        "the pod guard's",
        T0,
        4086 * MIB,
        4076 * MIB,
        700 * MIB,
        1024 * MIB,
        60_000,
        grown,
        List.of("pod guard episode 4: spilled 512.0 MiB, no reaction"),
        List.of("jvm.direct rose to 300.0 MiB, crossing 256.0 MiB"),
        List.of(),
        List.of("task 41 (3.0) in stage 2.0: java.lang.OutOfMemoryError: Java heap space"),
        1);
  }

  @Test
  void theEventLogLineReplaysAsTheSameEvent() throws Exception {
    ExecutorDiagnosisEvent e = killed();
    String line = JsonProtocol.sparkEventToJsonString(e);
    JsonNode json = new ObjectMapper().readTree(line);
    assertEquals(ExecutorDiagnosisEvent.class.getName(), json.get("Event").asText());
    assertEquals("CONTAINER_KILLED", json.get("cause").asText());
    assertEquals(137, json.get("exitCode").asInt());
    assertEquals(300 * MIB, json.get("grownParts").get("jvm.direct").asLong());
    assertFalse(json.has("sampleAgeMillis"), "derived figures are not written: " + line);
    assertFalse(json.has("normal"), line);

    SparkListenerEvent replayed = JsonProtocol.sparkEventFromJson(line);
    assertEquals(e, replayed);
    ExecutorDiagnosisEvent r = (ExecutorDiagnosisEvent) replayed;
    assertEquals(
        List.of("jvm.direct", "netty.shared.direct"), List.copyOf(r.getGrownParts().keySet()));
    assertEquals(e.describe(), r.describe());
    assertEquals(800, r.getSampleAgeMillis());
  }

  @Test
  void anUndecidedDiagnosisWithoutExitCodeReplaysWithItsNulls() throws Exception {
    ExecutorDiagnosisEvent e =
        new ExecutorDiagnosisEvent(
            "12",
            T0,
            "",
            null,
            Cause.UNDECIDED,
            null,
            "nothing known",
            -1,
            null,
            -1,
            -1,
            -1,
            -1,
            -1,
            0,
            null,
            null,
            null,
            null,
            null,
            2);
    String line = JsonProtocol.sparkEventToJsonString(e);
    ExecutorDiagnosisEvent r = (ExecutorDiagnosisEvent) JsonProtocol.sparkEventFromJson(line);
    assertEquals(e, r);
    assertNull(r.getExitCode());
    assertNull(r.getSuspected());
    assertEquals(-1, r.getSampleAgeMillis());
    assertEquals(
        "nativepool: executor 12 ended (revised): undecided (no exit code): nothing known. No"
            + " memory limit known; no sample from it",
        r.describe());
  }

  @Test
  void theLineNamesTheEvidenceInOrder() {
    String line = killed().describe();
    assertEquals(
        "nativepool: executor 7 ended: killed by its container's memory limit (exit code 137):"
            + " exit code 137 is a SIGKILL, and the last sample had its unreclaimable memory at"
            + " 99.5%. Limit 4.0 GiB (the pod guard's); last sample 0.8 s before the removal:"
            + " unreclaimable 4,076.0 MiB (99.5% of the limit), RSS 4.0 GiB, heap 700.0 MiB used"
            + " of 1.0 GiB committed; grew over the last 60.0 s: jvm.direct +300.0 MiB,"
            + " netty.shared.direct +32.0 MiB; pod guard: pod guard episode 4: spilled 512.0 MiB,"
            + " no reaction; crossings: jvm.direct rose to 300.0 MiB, crossing 256.0 MiB; tasks"
            + " failed for memory: task 41 (3.0) in stage 2.0: java.lang.OutOfMemoryError: Java"
            + " heap space; Spark's reason: Command exited with code 137",
        line);
  }

  @Test
  void aLongReasonIsCut() {
    String reason = "x".repeat(5000);
    ExecutorDiagnosisEvent e =
        new ExecutorDiagnosisEvent(
            "1",
            T0,
            reason,
            null,
            Cause.LOST,
            null,
            "",
            -1,
            null,
            -1,
            -1,
            -1,
            -1,
            -1,
            0,
            null,
            null,
            null,
            null,
            null,
            1);
    assertEquals(ExecutorDiagnosisEvent.REASON_KEPT + 1, e.getReason().length());
    assertTrue(e.getReason().endsWith("…"));
    assertEquals("containerKilled", Cause.CONTAINER_KILLED.key());
    assertEquals("jvmOutOfMemory", Cause.JVM_OUT_OF_MEMORY.key());
  }
}
