package org.nativepool.spark.ui;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEnvironmentUpdate;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.status.AppHistoryServerPlugin;
import org.apache.spark.status.ElementTrackingStore;
import org.apache.spark.util.JsonProtocol;
import org.apache.spark.util.kvstore.InMemoryStore;
import org.apache.spark.util.kvstore.RocksDB;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nativepool.spark.events.ExecutorDiagnosisEvent.Cause;
import org.nativepool.spark.events.ExecutorDiagnosisEvent;
import org.nativepool.spark.events.ExecutorSampleEvent;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.events.HeapHolder;
import org.nativepool.spark.events.HeapHoldersEvent;

/**
 * The History Server's side of the Native Memory page without a History Server: the plugin found by
 * {@code ServiceLoader} as Spark's {@code FsHistoryProvider} finds it, its listener fed an event
 * log's lines as Spark's replay reads them ({@code JsonProtocol}), the store flushed as the
 * replay's end flushes it, and the page drawn from what the store keeps; no library needed.
 */
class NativeMemoryHistoryPluginTest {
  private static final long MIB = 1L << 20;
  private static final long T0 = 1_700_000_000_000L;

  /** An event log: the environment, an executor's samples and its end, one JSON line each. */
  private static List<String> eventLog() {
    List<String> lines = new ArrayList<>();
    lines.add(
        "{\"Event\":\"SparkListenerEnvironmentUpdate\",\"JVM Information\":{},"
            + "\"Spark Properties\":{\"spark.memory.offHeap.enabled\":\"true\","
            + "\"spark.memory.offHeap.size\":\"256m\"},\"Hadoop Properties\":{},"
            + "\"System Properties\":{},\"Classpath Entries\":{}}");
    for (int i = 0; i < 10; i++) {
      Map<String, Long> f = new LinkedHashMap<>();
      f.put("guardLimit", 2048 * MIB);
      f.put("ledger.jvm.heap.committed", 1024 * MIB);
      f.put("ledger.jvm.direct", (100 + 50 * i) * MIB);
      lines.add(
          JsonProtocol.sparkEventToJsonString(
              new ExecutorSampleEvent("7", T0 + i * 10_000L, i, f)));
    }
    lines.add(
        JsonProtocol.sparkEventToJsonString(
            new GrowthReportEvent(
                "7",
                T0 + 80_000,
                "jvm.heap.afterGc",
                100 * MIB,
                300 * MIB,
                200,
                400,
                List.of(),
                List.of(HOLDER),
                "40 samples kept by the JVM",
                GrowthReportEvent.TASK)));
    lines.add(
        JsonProtocol.sparkEventToJsonString(
            new HeapHoldersEvent(
                "driver", T0 + 85_000, "on demand by alice", 0, "12 samples", List.of(HOLDER))));
    lines.add(
        JsonProtocol.sparkEventToJsonString(
            new ExecutorDiagnosisEvent(
                "7",
                T0 + 95_000,
                "Command exited with code 1",
                1,
                Cause.EXITED,
                null,
                "it ended with exit code 1",
                2048 * MIB,
                "the pod guard's",
                T0 + 90_000,
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
                1)));
    return lines;
  }

  /** A heap holder as a growth report names it. */
  static final HeapHolder HOLDER =
      new HeapHolder(
          "long[]",
          131072,
          21,
          21 * MIB,
          T0 + 10_000,
          T0 + 70_000,
          List.of("org.example.LeakedRecord.<init>:41", "org.example.Job.task:76"),
          List.of(
              "org.example.LeakedRecord.values",
              "java.lang.Object[] element",
              "java.util.ArrayList.elementData (size: 27)",
              "static org.example.Job.LEAK"),
          "Threads / Stack Variable");

  /** Replays {@code lines} into {@code listeners}, as Spark's replay bus dispatches them. */
  private static void replay(List<String> lines, List<SparkListener> listeners) {
    for (String line : lines) {
      SparkListenerEvent e = JsonProtocol.sparkEventFromJson(line);
      for (SparkListener l : listeners) {
        if (e instanceof SparkListenerEnvironmentUpdate u) {
          l.onEnvironmentUpdate(u);
        } else {
          l.onOtherEvent(e);
        }
      }
    }
  }

  private static ElementTrackingStore store(InMemoryStore kv) {
    return new ElementTrackingStore(
        kv, new SparkConf().set("spark.appStateStore.asyncTracking.enable", "false"));
  }

  /** The plugin's listeners as a Java list, by the Scala list's iterator (Scala 2.12 and 2.13). */
  private static List<SparkListener> listeners(scala.collection.immutable.List<SparkListener> l) {
    List<SparkListener> out = new ArrayList<>();
    scala.collection.Iterator<SparkListener> it = l.iterator();
    while (it.hasNext()) {
      out.add(it.next());
    }
    return out;
  }

  @Test
  void sparksServiceLoaderFindsThePlugin() {
    boolean found = false;
    for (AppHistoryServerPlugin p : ServiceLoader.load(AppHistoryServerPlugin.class)) {
      found |= p instanceof NativeMemoryHistoryPlugin;
    }
    assertTrue(found, "META-INF/services/org.apache.spark.status.AppHistoryServerPlugin");
  }

  @Test
  void theReplayedLogIsKeptInTheStoreAndDrawnFromIt() {
    InMemoryStore kv = new InMemoryStore();
    ElementTrackingStore tracking = store(kv);
    List<SparkListener> listeners =
        listeners(new NativeMemoryHistoryPlugin().createListeners(new SparkConf(), tracking));
    assertEquals(1, listeners.size());
    replay(eventLog(), listeners);
    tracking.close(false); // what FsHistoryProvider does at the end of the replay

    NativeMemoryTimeline.Snapshot s = NativeMemoryHistoryPlugin.read(kv);
    assertEquals(256 * MIB, s.offHeapBudget());
    assertEquals(1, s.executors().size());
    assertEquals(10, s.executors().get(0).times().length);
    String html = NativeMemoryPage.render(s, "replayed");
    assertTrue(html.contains("<h2 id=\"executor-7\">Executor 7: exited by itself</h2>"), "h2");
    assertTrue(
        html.contains(
            "<title>off-heap budget (spark.memory.offHeap.size): bounds this chart, not the"
                + " resident set: 256.0 MiB</title>"),
        "budget line");
    assertTrue(html.contains("<title>memory limit (pod guard): 2.0 GiB</title>"), "limit line");
    assertEquals(2, s.holders().size(), "the executor's and the driver's heap holders");
    assertTrue(html.contains("<h3>Executor 7</h3>"), html);
    assertTrue(html.contains("<h3>Driver</h3>"), html);
    assertTrue(html.contains("<td>long[131072]</td>"), html);
    assertTrue(html.contains("static org.example.Job.LEAK ←<br>root: Threads / Stack Variable"));
    assertFalse(html.contains("who holds the heap</a>"), "no action in the History Server");
  }

  @Test
  void aDiskStoreKeepsTheEntryAsTheHistoryServerReopensIt(@TempDir Path dir) throws Exception {
    NativeMemoryTimeline tl = new NativeMemoryTimeline();
    NativeMemoryListener l = new NativeMemoryListener(tl);
    replay(eventLog(), List.of(l));
    String json = new ObjectMapper().writeValueAsString(tl.snapshot());
    try (RocksDB db = new RocksDB(dir.resolve("store").toFile())) {
      db.write(new NativeMemoryHistoryPlugin.Entry(NativeMemoryHistoryPlugin.Entry.KEY, json));
    }
    try (RocksDB db = new RocksDB(dir.resolve("store").toFile())) {
      NativeMemoryTimeline.Snapshot s = NativeMemoryHistoryPlugin.read(db);
      assertEquals(
          NativeMemoryPage.content(tl.snapshot()), NativeMemoryPage.content(s), "the same page");
    }
  }

  @Test
  void anApplicationWithoutThePluginsEventsGetsNoPage() {
    InMemoryStore kv = new InMemoryStore();
    ElementTrackingStore tracking = store(kv);
    List<SparkListener> listeners =
        listeners(new NativeMemoryHistoryPlugin().createListeners(new SparkConf(), tracking));
    replay(eventLog().subList(0, 1), listeners);
    tracking.close(false);
    assertNull(NativeMemoryHistoryPlugin.read(kv));
  }
}
