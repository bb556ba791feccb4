package org.nativepool.spark.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.util.JsonProtocol;
import org.junit.jupiter.api.Test;

/**
 * {@link GuardEpisodeEvent}: through the event log as Spark writes and replays it ({@code
 * JsonProtocol}, what the History Server does), through Java serialisation as plugin RPC sends it,
 * and its log lines; no library needed.
 */
class GuardEpisodeEventTest {
  private static final long MIB = 1L << 20;

  private static GuardEpisodeEvent episode(long endMillis, boolean nothingLeft) {
    Map<String, Long> grown = new LinkedHashMap<>();
    grown.put("jvm.direct", 120 * MIB);
    grown.put("netty.shared.direct", 32 * MIB);
    grown.put("unexplained", 2 * MIB);
    Map<String, Long> spills = new LinkedHashMap<>();
    spills.put("sort (task 12)", 400 * MIB);
    spills.put("agg (task 13)", 112 * MIB);
    return new GuardEpisodeEvent(
        "3",
        7,
        1_700_000_000_000L,
        endMillis,
        4_400 * MIB,
        32 * MIB,
        4_300 * MIB,
        4_390 * MIB,
        3_000 * MIB,
        3_150 * MIB,
        512 * MIB,
        4_812,
        830_249,
        2 * MIB,
        3,
        nothingLeft,
        grown,
        spills);
  }

  @Test
  void theEventLogLineReplaysAsTheSameEventWithItsMapsInOrder() throws Exception {
    GuardEpisodeEvent e = episode(1_700_000_000_830L, false);
    String line = JsonProtocol.sparkEventToJsonString(e);
    JsonNode json = new ObjectMapper().readTree(line);
    assertEquals(GuardEpisodeEvent.class.getName(), json.get("Event").asText());
    assertEquals("3", json.get("executorId").asText());
    assertEquals(7, json.get("episodeId").asLong());
    assertEquals(512 * MIB, json.get("spilled").asLong());
    assertEquals(120 * MIB, json.get("grownParts").get("jvm.direct").asLong());
    assertFalse(json.has("open"), "derived figures are not written: " + line);
    assertFalse(json.has("grewOutsideNative"), line);

    SparkListenerEvent replayed = JsonProtocol.sparkEventFromJson(line);
    assertEquals(e, replayed);
    GuardEpisodeEvent r = (GuardEpisodeEvent) replayed;
    assertEquals(
        List.of("jvm.direct", "netty.shared.direct", "unexplained"),
        List.copyOf(r.getGrownParts().keySet()),
        "largest first, as written");
    assertEquals(List.of("sort (task 12)", "agg (task 13)"), List.copyOf(r.getSpills().keySet()));
    assertEquals(e.describe(), r.describe());
  }

  @Test
  void pluginRpcCarriesItThroughJavaSerialisation() throws Exception {
    GuardEpisodeEvent e = episode(0, true);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(e);
    }
    Object back;
    try (ObjectInputStream in =
        new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      back = in.readObject();
    }
    assertEquals(e, back);
    assertTrue(((GuardEpisodeEvent) back).isOpen());
  }

  @Test
  void theExecutorsLineNamesEverythingAnOperatorNeeds() {
    assertEquals(
        "nativepool: executor 3: pod guard episode 7: the headroom fell under the 32.0 MiB reserve"
            + " of the 4,400.0 MiB limit; unreclaimable 4,300.0 MiB at the start, 4,390.0 MiB at"
            + " the peak; grew outside native memory: 150.0 MiB (ledger: jvm.direct +120.0 MiB,"
            + " netty.shared.direct +32.0 MiB, unexplained +2.0 MiB); spilled 512.0 MiB (sort (task"
            + " 12) 400.0 MiB, agg (task 13) 112.0 MiB); reaction 4.8 ms; recovered in 830.2 ms; Go"
            + " heap returned 2.0 MiB",
        episode(1_700_000_000_830L, false).describe());
    String open = episode(0, true).describe();
    assertTrue(
        open.endsWith(
            "; reaction 4.8 ms; still short after 830.2 ms; Go heap returned 2.0 MiB; nothing"
                + " native is left to give: the kernel decides"),
        open);
    assertTrue(
        episode(1_700_000_000_830L, true)
            .describe()
            .endsWith("; nothing native was left to give: the kernel decided"));
  }

  @Test
  void theDriversLineIsAShortSummary() {
    assertEquals(
        "nativepool: executor 3 had pod guard episode 7: spilled 512.0 MiB, reaction 4.8 ms,"
            + " recovered in 830.2 ms; grew outside native memory 150.0 MiB, most in jvm.direct"
            + " (+120.0 MiB)",
        episode(1_700_000_000_830L, false).summary());
  }

  @Test
  void whatTheGuardHeldOfSparksOffHeapMemoryIsNamedAndReplayed() throws Exception {
    GuardEpisodeEvent e =
        new GuardEpisodeEvent(
            "2", 1, 1_700_000_000_000L, 1_700_000_002_000L, 1_400 * MIB, 32 * MIB, 1_380 * MIB,
            1_390 * MIB, 1_300 * MIB, 1_350 * MIB, 7 * MIB, 900, 2_000_000, 0, 1, true,
            56 * MIB, 48 * MIB, 1_200L, Map.of(), Map.of("sort (task 3)", 7 * MIB));
    assertTrue(
        e.describe()
            .contains(
                "; reaction 0.9 ms; held Spark's free off-heap memory, 48.0 MiB at most (56.0"
                    + " MiB taken, the first after 1.2 ms); recovered in 2000.0 ms"),
        e.describe());
    assertTrue(
        e.describe()
            .endsWith(
                "; nothing native was left to give and nothing more free to hold: the kernel"
                    + " decided"),
        e.describe());
    assertTrue(e.summary().contains(", held 48.0 MiB of Spark's off-heap memory"), e.summary());
    String line = JsonProtocol.sparkEventToJsonString(e);
    GuardEpisodeEvent back = (GuardEpisodeEvent) JsonProtocol.sparkEventFromJson(line);
    assertEquals(e, back);
    assertEquals(1_200L, back.getOffHeapReactionMicros());

    // An event log written before the guard held off-heap memory has no such fields.
    String old =
        line.replaceAll(",\\s*\"offHeap(Taken|Peak|ReactionMicros)\":-?\\d+", "");
    assertFalse(old.contains("offHeap"), old);
    GuardEpisodeEvent before = (GuardEpisodeEvent) JsonProtocol.sparkEventFromJson(old);
    assertEquals(0, before.getOffHeapTaken());
    assertEquals(-1, before.getOffHeapReactionMicros());
    assertFalse(before.describe().contains("off-heap"), before.describe());
  }

  @Test
  void anEpisodeWithoutSpillOrLedgerGrowthSaysSo() {
    GuardEpisodeEvent e =
        new GuardEpisodeEvent(
            "1", 2, 1, 2, 1L << 30, 32 * MIB, 1L << 30, 1L << 30, 900 * MIB, 990 * MIB, 0, -1,
            1_500, 0, 1, true, null, null);
    String line = e.describe();
    assertTrue(line.contains("(no ledger part grew by 1 MiB or more)"), line);
    assertTrue(line.contains("; nothing spilled; no reaction; recovered in 1.5 ms"), line);
    assertTrue(e.getSpills().isEmpty() && e.getGrownParts().isEmpty());
  }
}
