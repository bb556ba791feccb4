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
import java.util.List;
import org.apache.spark.util.JsonProtocol;
import org.junit.jupiter.api.Test;

/**
 * The heap holders as they travel: in a growth report and an on-demand analysis through the event
 * log (Spark's {@code JsonProtocol}, what the History Server replays) and plugin RPC (Java
 * serialisation), their lines, and the rule by which an analysis confirms a rise of the heap.
 */
class HeapHoldersEventTest {
  private static final long MIB = 1 << 20;
  private static final long T0 = 1_700_000_000_000L;

  static HeapHolder holder() {
    return new HeapHolder(
        "byte[]",
        104857600,
        3,
        300 * MIB,
        T0,
        T0 + 2_000,
        List.of("$line14.$read$$iw.<init>:1", "$line14.$read.<init>:22"),
        List.of("$line14.$read$$iw.res0", "$line14.$read.$iw", "static $line14.$read$.INSTANCE"),
        "Threads / Handle Area");
  }

  static GrowthReportEvent report() {
    return new GrowthReportEvent(
        "driver",
        T0 + 5_000,
        "jvm.heap.afterGc",
        100 * MIB,
        400 * MIB,
        3,
        9,
        List.of(),
        List.of(holder()),
        "72 samples kept by the JVM",
        GrowthReportEvent.HEAP_READING);
  }

  @Test
  void aGrowthReportWithHolders_replaysFromTheEventLogAsTheSameHolders() throws Exception {
    GrowthReportEvent e = report();
    String line = JsonProtocol.sparkEventToJsonString(e);
    JsonNode json = new ObjectMapper().readTree(line);
    assertEquals("byte[]", json.get("heapHolders").get(0).get("type").asText());
    assertEquals(
        "static $line14.$read$.INSTANCE",
        json.get("heapHolders").get(0).get("chain").get(2).asText());
    GrowthReportEvent r = (GrowthReportEvent) JsonProtocol.sparkEventFromJson(line);
    assertEquals(e.getHeapHolders(), r.getHeapHolders());
    assertEquals(e.describe(), r.describe());
    assertEquals(GrowthReportEvent.HEAP_READING, r.getBoundary());
  }

  @Test
  void aGrowthReportOfAnOlderLogReadsWithoutHolders() {
    String line =
        "{\"Event\":\"org.nativepool.spark.events.GrowthReportEvent\",\"executorId\":\"1\","
            + "\"timeMillis\":1,\"part\":\"native.allocated\",\"fromBytes\":0,\"toBytes\":1,"
            + "\"tasks\":4,\"taskCount\":8,\"owners\":[]}";
    GrowthReportEvent r = (GrowthReportEvent) JsonProtocol.sparkEventFromJson(line);
    assertEquals(List.of(), r.getHeapHolders());
    assertEquals(GrowthReportEvent.TASK, r.getBoundary());
    assertEquals(null, r.heapHoldersEvent());
  }

  @Test
  void anOnDemandAnalysisTravelsByRpcAndTheEventLog() throws Exception {
    HeapHoldersEvent e =
        new HeapHoldersEvent("3", T0, "on demand by alice", 0, "12 samples", List.of(holder()));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(e);
    }
    try (ObjectInputStream in =
        new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      assertEquals(e, in.readObject());
    }
    assertEquals(e, JsonProtocol.sparkEventFromJson(JsonProtocol.sparkEventToJsonString(e)));
  }

  @Test
  void theReportLineNamesTypeSizeStackAndPathButNoValue() {
    assertEquals(
        "nativepool: executor driver ledger: jvm.heap.afterGc keeps growing: its floor rose from"
            + " 100.0 MiB to 400.0 MiB over 3 heap readings (100.0 MiB per heap reading); heap"
            + " holders: 72 samples kept by the JVM; 1) 3 × byte[104857600] (300.0 MiB sampled),"
            + " allocated 22:13:20 to 22:13:22 UTC at $line14.$read$$iw.<init>:1 <"
            + " $line14.$read.<init>:22, held by $line14.$read$$iw.res0 ← $line14.$read.$iw ←"
            + " static $line14.$read$.INSTANCE ← root Threads / Handle Area",
        report().describe());
  }

  private static HeapHoldersEvent analysis(List<HeapHolder> h, int recent, int live, long bytes) {
    return new HeapHoldersEvent("1", T0, "t", 0, "n", h, recent, live, bytes);
  }

  @Test
  void anAnalysisConfirmsARiseByLiveBytesOfAtLeastFivePercentOfIt() {
    List<HeapHolder> some = List.of(holder());
    // 5% of a 300 MiB rise live: large objects, always sampled
    assertTrue(analysis(some, 10, 1, 15 * MIB).confirmsGrowth(300 * MIB));
    // a driver starting: 1.2 MiB of live samples in a 70 MiB rise
    assertFalse(analysis(some, 43, 16, 1200 * 1024).confirmsGrowth(70 * MIB));
    // garbage the collections have not reached: a few small live samples of many
    assertFalse(analysis(some, 88, 10, 100_000).confirmsGrowth(200 * MIB));
    // the JVM's own small live growth beside a rise of garbage (a spark-shell loading classes)
    assertFalse(analysis(some, 253, 81, 389 * 1024).confirmsGrowth(317 * MIB));
    // nothing live, or no analysis
    assertFalse(new HeapHoldersEvent("1", T0, "t", 0, "n", List.of(), 10, 0, 0).confirmsGrowth(1));
    assertFalse(new HeapHoldersEvent("1", T0, "t", 0, "refused", List.of()).confirmsGrowth(1));
  }
}
