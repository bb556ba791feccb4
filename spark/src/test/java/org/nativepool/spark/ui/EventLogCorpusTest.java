package org.nativepool.spark.ui;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.MetricRegistry;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.driver.DriverSide;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.events.GuardEpisodeEvent;
import org.nativepool.spark.events.LedgerCrossingEvent;
import org.nativepool.spark.events.LedgerSample;
import org.nativepool.spark.events.ReservedThresholdEvent;
import org.nativepool.spark.events.StagePeaksEvent;
import org.nativepool.spark.testing.DriverContext;
import org.nativepool.spark.testing.EventLogs;

/**
 * Writes the seed corpus of {@link EventLogReplayFuzzTest}: a real event log, written by Spark's
 * event logger for a SparkContext whose driver side ({@link DriverSide}) is fed executors'
 * samples and told of their loss in Spark's, YARN's and Kubernetes' words, with every other event
 * class of the plugin posted on the bus as the executors' and driver's code posts them. The log's
 * lines of the plugin (and the environment) become one seed, and each line a seed of its own. Runs
 * only with {@code -Dnativepool.writeFuzzSeeds=true} (it rewrites files under src/test/resources).
 */
@Tag("spark")
@EnabledIfSystemProperty(named = "nativepool.writeFuzzSeeds", matches = "true")
class EventLogCorpusTest {
  private static final long MIB = 1L << 20;
  private static final Path SEEDS =
      Path.of(
          "src/test/resources/org/nativepool/spark/ui/EventLogReplayFuzzTestInputs/"
              + "aReplayedLogNeverStopsAndDrawsAWellFormedPage");

  /** Executor id → the reason Spark gives for its loss. */
  private static final Map<String, String> LOSSES =
      Map.of(
          "1",
          "Command exited with code 137",
          "2",
          "Container container_1700000000000_0001_01_000002 on host: node-2.example is running"
              + " beyond physical memory limits. Current usage: 4.1 GB of 4 GB physical memory"
              + " used; 6.2 GB of 8.4 GB virtual memory used. Killing container.",
          "3",
          "The executor with id 3 exited with exit code 137(SIGKILL, possible container OOM).\n"
              + "The API gave the following container statuses:\n\n"
              + "\t container name: spark-kubernetes-executor\n"
              + "\t container image: apache/spark:4.1.3\n"
              + "\t container state: terminated\n"
              + "\t container started at: 2026-01-01T00:00:00Z\n"
              + "\t container finished at: 2026-01-01T00:10:00Z\n"
              + "\t exit code: 137\n"
              + "\t termination reason: OOMKilled");

  @TempDir Path logDir;

  /**
   * The environment event with only what the page reads (the off-heap settings): the rest is this
   * machine's (its classpath, paths and JVM options), 90 KB that would only slow the fuzzer.
   */
  private static String withoutMachine(String line) {
    if (!line.contains("SparkListenerEnvironmentUpdate")) {
      return line;
    }
    try {
      ObjectMapper json = new ObjectMapper();
      ObjectNode node = (ObjectNode) json.readTree(line);
      ObjectNode spark = json.createObjectNode();
      node.get("Spark Properties")
          .properties()
          .forEach(
              e -> {
                if (e.getKey().startsWith("spark.memory.offHeap.")) {
                  spark.set(e.getKey(), e.getValue());
                }
              });
      for (String section : List.of("JVM Information", "Hadoop Properties", "System Properties",
          "Metrics Properties", "Classpath Entries")) {
        if (node.has(section)) {
          node.set(section, json.createObjectNode());
        }
      }
      node.set("Spark Properties", spark);
      return json.writeValueAsString(node);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void writesTheSeedsFromARealEventLog() throws Exception {
    SparkContext sc =
        new SparkContext(
            new SparkConf()
                .setMaster("local[1]")
                .setAppName("EventLogCorpusTest")
                .set("spark.ui.enabled", "false")
                .set("spark.eventLog.enabled", "true")
                .set("spark.eventLog.dir", logDir.toUri().toString())
                .set("spark.eventLog.compress", "false")
                .set("spark.memory.offHeap.enabled", "true")
                .set("spark.memory.offHeap.size", "256m")
                .set(NativePoolConf.EVENT_LOG_SAMPLE_EVERY.key(), "1"));
    try {
      DriverSide driver = new DriverSide();
      driver.init(sc, new DriverContext(sc.conf(), new MetricRegistry()));
      long now = System.currentTimeMillis();
      for (String id : List.of("1", "2", "3")) {
        for (int i = 5; i >= 1; i--) {
          Map<String, Long> gauges = new LinkedHashMap<>();
          gauges.put("guardLimit", 4096 * MIB);
          gauges.put("guardUnreclaimable", (4000 - i) * MIB);
          gauges.put("reserved", 64 * MIB);
          Map<String, Long> parts = new LinkedHashMap<>();
          parts.put("jvm.heap.committed", 1024 * MIB);
          parts.put("jvm.direct", (2500 - 100 * i) * MIB);
          parts.put("native.reserved", 64 * MIB);
          driver.receive(
              new ExecutorSample(
                  id, now - i * 1000L, 5 - i, gauges, 0, 0, new LedgerSample(parts, Map.of(), 0, Map.of())));
        }
      }
      var bus = sc.listenerBus();
      bus.post(new LedgerCrossingEvent("1", now - 3000, "jvm.direct", 2048 * MIB, true, 2200 * MIB, 1900 * MIB));
      bus.post(new GrowthReportEvent("1", now - 2500, "jvm.direct", 100 * MIB, 400 * MIB, 100, 300, List.of()));
      bus.post(new ReservedThresholdEvent("2", now - 2000, 64 * MIB, true, 80 * MIB));
      bus.post(
          new GuardEpisodeEvent(
              "2", 1, now - 1800, now - 1700, 4096 * MIB, 40 * MIB, 4010 * MIB, 4040 * MIB,
              1500 * MIB, 1900 * MIB, 64 * MIB, 3_000, 1_000_000, 0, 1, false,
              Map.of("jvm.direct", 300 * MIB), Map.of("sort (task 3)", 64 * MIB)));
      bus.post(
          new StagePeaksEvent(
              3, 0, now - 1500, Map.of("1", 64 * MIB, "2", 32 * MIB), Map.of("1", 64 * MIB),
              96 * MIB, 96 * MIB, null, 40 * MIB, Map.of("sort", 40 * MIB)));
      for (Map.Entry<String, String> loss : LOSSES.entrySet()) {
        bus.post(new SparkListenerExecutorRemoved(now, loss.getKey(), loss.getValue()));
      }
      bus.waitUntilEmpty();
    } finally {
      sc.stop();
    }
    List<String> ours =
        EventLogs.lines(logDir).stream()
            .filter(l -> l.contains("org.nativepool.spark.") || l.contains("SparkListenerEnvironmentUpdate"))
            .map(EventLogCorpusTest::withoutMachine)
            .toList();
    assertTrue(ours.stream().anyMatch(l -> l.contains("ExecutorDiagnosisEvent")), "diagnoses logged");
    Files.createDirectories(SEEDS);
    Files.writeString(SEEDS.resolve("real-event-log"), String.join("\n", ours) + "\n", StandardCharsets.UTF_8);
    int i = 0;
    for (String line : ours) {
      String name = line.replaceAll(".*\"Event\":\"(?:org\\.nativepool\\.spark\\.events\\.)?([A-Za-z]+)\".*", "$1");
      Files.writeString(SEEDS.resolve(String.format("line-%02d-%s", i++, name)), line + "\n", StandardCharsets.UTF_8);
    }
  }
}
