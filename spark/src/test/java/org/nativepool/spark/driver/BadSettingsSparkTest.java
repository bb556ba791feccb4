package org.nativepool.spark.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.nativepool.spark.NativePoolPlugin;
import org.nativepool.spark.memory.TaskPool;
import org.nativepool.spark.testing.LocalSpark;
import org.nativepool.spark.testing.LogCapture;

/**
 * An operator's first mistakes, each in a real local SparkContext with the plugin: a bad value
 * fails the SparkContext at its start with the key, the value and the rule (the driver plugin's
 * check runs before any executor exists), a misspelt key or a budget no grow can get is said at
 * WARN, and a good start says at WARN which nativepool runs, its budget, its pod guard's limit and
 * where its page is. Every value the first operator's report listed is here.
 */
@Tag("spark") // starts SparkContexts
class BadSettingsSparkTest {
  private static LogCapture driverLog;

  @BeforeAll
  static void captureTheDriversLog() {
    driverLog = LogCapture.attach(DriverSide.class.getName());
  }

  @AfterAll
  static void detach() {
    driverLog.close();
  }

  /**
   * Starts a local[1] SparkContext with the plugin, 64 MiB of off-heap memory and {@code
   * settings} ({@code key=value}); runs one task that opens a native pool. Returns the
   * SparkContext's failure message, or null when it started and the task ran.
   */
  private static String start(String... settings) {
    SparkConf conf =
        new SparkConf()
            .setMaster("local[1]")
            .setAppName("BadSettingsSparkTest")
            .set("spark.ui.enabled", "false")
            .set("spark.plugins", NativePoolPlugin.class.getName())
            .set("spark.memory.offHeap.enabled", "true")
            .set("spark.memory.offHeap.size", "64m")
            .set("spark.nativepool.library", LocalSpark.library());
    for (String s : settings) {
      int eq = s.indexOf('=');
      conf.set(s.substring(0, eq), s.substring(eq + 1));
    }
    JavaSparkContext jsc;
    try {
      jsc = new JavaSparkContext(conf);
    } catch (RuntimeException e) {
      return e.getMessage();
    }
    try {
      jsc.parallelize(Arrays.asList(1), 1)
          .foreach(
              x -> {
                try (TaskPool p = TaskPool.openForCurrentTask()) {
                  p.stats();
                }
              });
      return null;
    } finally {
      jsc.stop();
    }
  }

  /** The driver's WARN lines of a start, from {@code from} (an index into the captured log). */
  private static List<String> warningsSince(int from) {
    List<String> all = driverLog.messages();
    return new ArrayList<>(all.subList(from, all.size()));
  }

  /** Each bad value of the report, and the words its failure must have besides the key. */
  static Stream<Arguments> badValues() {
    return Stream.of(
        Arguments.of(
            List.of("spark.nativepool.ledger.hysteresis=1.5"),
            "nativepool: spark.nativepool.ledger.hysteresis = '1.5': must be in [0, 1)"),
        Arguments.of(
            List.of("spark.nativepool.guard.enabled=yes"),
            "nativepool: spark.nativepool.guard.enabled = 'yes': not auto, true or false"),
        Arguments.of(
            List.of("spark.nativepool.guard.reserve=2g", "spark.nativepool.guard.limit=1g"),
            "nativepool: spark.nativepool.guard.reserve = '2g': not below the guard's limit 1.0"
                + " GiB (spark.nativepool.guard.limit)"),
        Arguments.of(
            List.of("spark.nativepool.ledger.growth.window=0"),
            "nativepool: spark.nativepool.ledger.growth.window = '0': must be >= 1"),
        Arguments.of(
            List.of("spark.nativepool.ledger.listeners=com.example.Nope"),
            "nativepool: spark.nativepool.ledger.listeners = 'com.example.Nope': class"
                + " com.example.Nope not found on the driver's classpath"),
        Arguments.of(
            List.of("spark.nativepool.ledger.thresholds=totl=6g"),
            "nativepool: spark.nativepool.ledger.thresholds = 'totl=6g': no ledger part 'totl'"
                + " (did you mean total?), so its threshold could never fire; the parts are total"
                + " (the RSS), rss, unexplained, jvm.heap.resident"),
        Arguments.of(
            List.of("spark.nativepool.poolSize=0"),
            "nativepool: spark.nativepool.poolSize = '0': a fair_unified pool of 0 bytes refuses"
                + " every grow"));
  }

  @ParameterizedTest
  @MethodSource("badValues")
  void aBadValueFailsTheSparkContextNamingTheKeyTheValueAndTheRule(
      List<String> settings, String message) {
    String failure = start(settings.toArray(String[]::new));
    assertNotNull(failure, settings + " started");
    System.out.println("BAD-SETTING " + String.join(" ", settings) + " -> " + failure);
    assertTrue(failure.startsWith(message), failure);
  }

  /**
   * A key the registry does not know (a wrong case here) is ignored by the plugin, so the driver
   * names the closest known key at WARN; the application runs.
   */
  @Test
  void aMisspeltKeyIsWarnedAboutNamingTheClosestKnownKey() {
    int from = driverLog.messages().size();
    assertNull(start("spark.nativepool.chunksize=1m"));
    String w =
        warningsSince(from).stream()
            .filter(m -> m.contains("spark.nativepool.chunksize"))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no warning: " + warningsSince(from)));
    System.out.println("BAD-SETTING spark.nativepool.chunksize=1m -> " + w);
    assertEquals(
        "nativepool: spark.nativepool.chunksize is not a setting of the plugin and is ignored"
            + " (keys are case-sensitive): did you mean spark.nativepool.chunkSize? (every key:"
            + " docs/CONFIGURATION.md)",
        w);
  }

  /**
   * Off-heap memory disabled, or of size 0: native pools could borrow nothing, so every grow would
   * be refused. The plugin's other jobs (the ledger, the page, the pod guard, the diagnosis of lost
   * executors) work without it, so the application starts, with a WARN saying what happens to
   * every grow.
   */
  @Test
  void noOffHeapMemoryIsWarnedAboutSayingEveryGrowWillBeRefused() {
    for (List<String> settings :
        List.of(
            List.of("spark.memory.offHeap.enabled=false"),
            List.of("spark.memory.offHeap.enabled=false", "spark.memory.offHeap.size=0"))) {
      int from = driverLog.messages().size();
      assertNull(start(settings.toArray(String[]::new)), settings::toString);
      String w =
          warningsSince(from).stream()
              .filter(m -> m.contains("spark.memory.offHeap.enabled is"))
              .findFirst()
              .orElseThrow(() -> new AssertionError("no warning for " + settings));
      System.out.println("BAD-SETTING " + String.join(" ", settings) + " -> " + w);
      assertTrue(w.contains("every native grow will be refused"), w);
      assertTrue(w.contains("set spark.memory.offHeap.enabled=true"), w);
    }
  }

  /**
   * Off-heap memory enabled with a size of 0 is refused by Spark itself, before the plugin: the
   * SparkContext fails naming the size, and no native grow is ever refused silently.
   */
  @Test
  void offHeapEnabledWithSizeZeroFailsOrWarns() {
    int from = driverLog.messages().size();
    String failure = start("spark.memory.offHeap.size=0");
    String said =
        failure != null
            ? failure
            : warningsSince(from).stream()
                .filter(m -> m.contains("spark.memory.offHeap.size is 0"))
                .findFirst()
                .orElseThrow(() -> new AssertionError("neither failed nor warned"));
    System.out.println("BAD-SETTING spark.memory.offHeap.size=0 -> " + said);
    assertTrue(said.contains("spark.memory.offHeap.size"), said);
  }

  /**
   * The startup line, at WARN so that spark-shell's default level shows it: the release and Spark
   * line, the budget, the pod guard's limit or none, and where the page is.
   */
  @Test
  void aGoodStartSaysWhatRunsAtWarn() {
    int from = driverLog.messages().size();
    assertNull(start());
    String line =
        warningsSince(from).stream()
            .filter(m -> m.startsWith("nativepool 0.") || m.startsWith("nativepool 1."))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no startup line: " + warningsSince(from)));
    System.out.println("STARTUP-LINE " + line);
    assertTrue(line.contains(" on Spark "), line);
    assertTrue(line.contains("native budget 64.0 MiB of off-heap memory per executor"), line);
    assertTrue(line.contains("pod guard auto: "), line);
    assertTrue(line.contains("no live Native Memory page (the UI is off"), line);
  }
}
