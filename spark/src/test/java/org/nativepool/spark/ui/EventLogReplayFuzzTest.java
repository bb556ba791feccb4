package org.nativepool.spark.ui;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.ReplayListenerBus;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEnvironmentUpdate;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.status.ElementTrackingStore;
import org.apache.spark.util.JsonProtocol;
import org.apache.spark.util.kvstore.InMemoryStore;
import org.nativepool.spark.events.ExecutorSampleEvent;

/**
 * Replays fuzzed event logs the way Spark's History Server does, then draws the Native Memory page:
 * Spark's own {@link ReplayListenerBus} parses each line ({@code JsonProtocol}: the plugin's events
 * by Jackson, through their {@code @JsonCreator}s) and feeds the plugin's {@link
 * NativeMemoryHistoryPlugin} listener; the store is flushed as the replay's end flushes it, and the
 * page is drawn from what the store keeps. Every {@code *Event} class of {@code
 * org.nativepool.spark.events} is in the seed corpus, from real event logs (written by a
 * SparkContext with the plugin's driver side: {@code EventLogCorpusTest}).
 *
 * <p>The properties:
 *
 * <ul>
 *   <li>a line naming one of the plugin's events, however malformed, never stops the replay: a
 *       sentinel event after the fuzzed lines still reaches the page (lines that are not JSON, or
 *       malformed events of Spark's own, stop Spark's replay whatever the plugin does, and are
 *       left out);
 *   <li>the plugin's listener never throws;
 *   <li>the page is well-formed HTML with nothing unescaped ({@link HtmlCheck}).
 * </ul>
 */
class EventLogReplayFuzzTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String SENTINEL =
      JsonProtocol.sparkEventToJsonString(
          new ExecutorSampleEvent("sentinel", 1_700_000_000_000L, 0, Map.of("guardLimit", 1L)));

  /** The plugin's listener, with every throw recorded instead of swallowed by Spark's bus. */
  private static final class Recording extends SparkListener {
    final SparkListener inner;
    final List<Throwable> thrown = new ArrayList<>();

    Recording(SparkListener inner) {
      this.inner = inner;
    }

    private void run(Runnable r) {
      try {
        r.run();
      } catch (RuntimeException | Error e) {
        thrown.add(e);
      }
    }

    @Override
    public void onOtherEvent(SparkListenerEvent event) {
      run(() -> inner.onOtherEvent(event));
    }

    @Override
    public void onEnvironmentUpdate(SparkListenerEnvironmentUpdate event) {
      run(() -> inner.onEnvironmentUpdate(event));
    }

    @Override
    public void onTaskEnd(SparkListenerTaskEnd event) {
      run(() -> inner.onTaskEnd(event));
    }
  }

  /**
   * Whether {@code line} belongs in a replay this target can hold the plugin to: one of the
   * plugin's events (whatever else is in it), or an event Spark itself reads.
   */
  static boolean replayable(String line) {
    JsonNode node;
    try {
      node = JSON.readTree(line);
    } catch (Exception e) {
      return false; // not JSON: Spark's replay fails on it, plugin or not
    }
    if (node == null || !node.isObject()) {
      return false;
    }
    JsonNode event = node.get("Event");
    if (event != null && event.isTextual() && event.asText().startsWith("org.nativepool.spark.")) {
      return true;
    }
    try {
      JsonProtocol.sparkEventFromJson(line);
      return true;
    } catch (Exception | AssertionError e) {
      // Spark's own event, malformed (its reader asserts some shapes), or a class Spark cannot
      // load: not the plugin's door
      return false;
    }
  }

  @FuzzTest(maxDuration = "2m")
  @DictionaryEntries({
    "\"Event\":\"org.nativepool.spark.events.ExecutorSampleEvent\"",
    "\"Event\":\"org.nativepool.spark.events.ExecutorDiagnosisEvent\"",
    "\"Event\":\"org.nativepool.spark.events.GuardEpisodeEvent\"",
    "\"Event\":\"org.nativepool.spark.events.GrowthReportEvent\"",
    "\"Event\":\"org.nativepool.spark.events.LedgerCrossingEvent\"",
    "\"Event\":\"org.nativepool.spark.events.ReservedThresholdEvent\"",
    "\"Event\":\"org.nativepool.spark.events.StagePeaksEvent\"",
    "\"executorId\":", "\"timeMillis\":", "\"figures\":", "<script>", "\"", "&", "<", "null", "-1",
    "9223372036854775807", "NaN", "[]", "{}"
  })
  void aReplayedLogNeverStopsAndDrawsAWellFormedPage(byte[] input) throws Exception {
    List<String> lines = new ArrayList<>();
    // Lines as Spark's replay reads them (Scala's getLines: a bare CR ends a line too).
    for (String line : new String(input, StandardCharsets.UTF_8).split("\r\n|\n|\r", -1)) {
      if (replayable(line)) {
        lines.add(line);
      }
    }
    lines.add(SENTINEL);

    InMemoryStore kv = new InMemoryStore();
    ElementTrackingStore store =
        new ElementTrackingStore(
            kv, new SparkConf().set("spark.appStateStore.asyncTracking.enable", "false"));
    scala.collection.Iterator<SparkListener> created =
        new NativeMemoryHistoryPlugin().createListeners(new SparkConf(), store).iterator();
    Recording listener = new Recording(created.next());
    ReplayListenerBus bus = new ReplayListenerBus();
    bus.addListener(listener);
    boolean completed =
        bus.replay(
            new ByteArrayInputStream(String.join("\n", lines).getBytes(StandardCharsets.UTF_8)),
            "fuzzed event log",
            false,
            ReplayListenerBus.SELECT_ALL_FILTER());
    assertTrue(completed, "the replay stopped before its end");
    assertEquals(List.of(), listener.thrown, "the plugin's listener threw");
    store.close(false); // what FsHistoryProvider does at the end of the replay

    NativeMemoryTimeline.Snapshot s = NativeMemoryHistoryPlugin.read(kv);
    assertNotNull(s, "the replay kept no timeline");
    assertTrue(
        s.executors().stream().anyMatch(e -> e.executorId().equals("sentinel")),
        "the sentinel after the fuzzed lines never reached the page");
    HtmlCheck.assertWellFormed(NativeMemoryPage.render(s, "replayed"));
  }
}
