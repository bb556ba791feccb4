package org.nativepool.spark.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.Configurator;
import org.apache.logging.log4j.core.config.Property;
import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.config.PoolSettings;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.memory.TaskPool;
import org.nativepool.spark.testing.LocalSpark;
import org.nativepool.spark.testing.SparkMemory;

/**
 * Go's records reach log4j through {@link GoLog} in a {@code local[2]} SparkSession: each on
 * its Go package's logger, with the task, stage and partition in the text, whichever thread made
 * them; and a record whose logger log4j has disabled never crosses into Java.
 *
 * <p>An in-test appender on log4j's root logger captures the events; the levels of {@code
 * org.nativepool} (INFO) and {@code org.nativepool.pool} (WARN) are set in log4j before the plugin
 * starts, and put back afterwards.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class GoLogTest {
  private static final long MIB = SparkMemory.MIB;
  private static final String THRESHOLD_UP = "nativepool: task pool reserved bytes rose to a threshold";

  private static SparkSession spark;
  private static JavaSparkContext jsc;
  private static Capture capture;

  /** Keeps every event it is given (immutable copies). */
  static final class Capture extends AbstractAppender {
    private final List<LogEvent> events = new ArrayList<>();

    Capture() {
      super("NativeLogTestCapture", null, null, true, Property.EMPTY_ARRAY);
    }

    @Override
    public synchronized void append(LogEvent event) {
      event.getThreadName(); // log4j reads the thread name lazily: take it on the logging thread
      events.add(event.toImmutable());
    }

    synchronized List<LogEvent> events() {
      return new ArrayList<>(events);
    }

    synchronized void clear() {
      events.clear();
    }

    /** Events of one logger. */
    List<LogEvent> of(String logger) {
      return events().stream()
          .filter(e -> e.getLoggerName().equals(logger))
          .collect(Collectors.toList());
    }

    /** Events of the Go side's loggers (org.nativepool.*, not the Java module's). */
    List<LogEvent> ofGo() {
      return events().stream()
          .filter(
              e ->
                  (e.getLoggerName().equals(GoLog.ROOT)
                          || e.getLoggerName().startsWith(GoLog.ROOT + "."))
                      && !e.getLoggerName().startsWith(GoLog.ROOT + ".spark"))
          .collect(Collectors.toList());
    }
  }

  @BeforeAll
  static void startSpark() {
    LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
    Configuration config = ctx.getConfiguration();
    capture = new Capture();
    capture.start();
    config.addAppender(capture);
    config.getRootLogger().addAppender(capture, null, null);
    ctx.updateLoggers();
    Configurator.setLevel(GoLog.ROOT, Level.INFO);
    Configurator.setLevel(GoLog.ROOT + ".pool", Level.WARN);
    spark =
        LocalSpark.builder("local[2]", "GoLogTest", "128m")
            .config("spark.nativepool.chunkSize", "1m")
            .config("spark.nativepool.task.reservedThresholds", "2m")
            .config("spark.nativepool.logging", "true")
            .config("spark.nativepool.goMemoryLimit", "300m")
            .getOrCreate();
    jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
  }

  @AfterAll
  static void stopSpark() {
    LocalSpark.stop(spark);
    LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
    Configuration config = ctx.getConfiguration();
    config.getRootLogger().removeAppender(capture.getName());
    config.removeLogger(GoLog.ROOT + ".pool");
    config.removeLogger(GoLog.ROOT);
    ctx.updateLoggers();
    capture.stop();
    GoLog.configure(null); // Go takes log4j's levels back
  }

  @BeforeEach
  void clearEvents() {
    capture.clear();
  }

  /**
   * One task: grows past the 2 MiB threshold on its own thread, falls back below it, then grows
   * past it again from a thread that has no TaskContext. Returns "taskAttemptId stageId.attempt
   * partition".
   */
  private static Iterator<String> crossTheThresholdOnAndOffTheTaskThread(Iterator<Integer> rows)
      throws InterruptedException {
    TaskContext ctx = TaskContext.get();
    Reservation r = TaskPool.openForCurrentTask().newReservation("logger", false, null);
    r.grow(3 * MIB);
    r.shrink(3 * MIB);
    AtomicReference<Throwable> failed = new AtomicReference<>();
    Thread off =
        new Thread(
            () -> {
              try {
                r.grow(3 * MIB);
              } catch (Throwable t) {
                failed.set(t);
              }
            },
            "np-off-task-" + ctx.taskAttemptId());
    off.start();
    off.join();
    if (failed.get() != null) {
      throw new IllegalStateException("grow off the task thread failed", failed.get());
    }
    r.shrink(3 * MIB);
    String id =
        "task "
            + ctx.taskAttemptId()
            + " stage "
            + ctx.stageId()
            + "."
            + ctx.stageAttemptNumber()
            + " partition "
            + ctx.partitionId();
    return List.of(id).iterator();
  }

  @Test
  void aGoRecordMadeForATaskArrivesOnItsPackagesLoggerWithTheTaskStageAndPartition() {
    List<String> tasks =
        jsc.parallelize(Arrays.asList(1, 2), 2)
            .mapPartitions(GoLogTest::crossTheThresholdOnAndOffTheTaskThread)
            .collect();

    List<LogEvent> ups =
        capture.of("org.nativepool.bridge").stream()
            .filter(e -> e.getMessage().getFormattedMessage().contains(THRESHOLD_UP))
            .collect(Collectors.toList());
    assertEquals(2 * tasks.size(), ups.size(), () -> "threshold records: " + texts(ups));
    for (String task : tasks) {
      List<LogEvent> mine =
          ups.stream()
              .filter(e -> e.getMessage().getFormattedMessage().startsWith("[" + task + "] "))
              .collect(Collectors.toList());
      assertEquals(2, mine.size(), () -> task + ": " + texts(ups));
      for (LogEvent e : mine) {
        assertEquals(Level.WARN, e.getLevel());
        String text = e.getMessage().getFormattedMessage();
        assertTrue(text.matches(".* threshold=2097152 reserved=\\d+$"), text);
        assertTrue(!text.contains("task="), "the task is in the prefix only: " + text);
      }
      String offThread = "np-off-task-" + task.split(" ")[1];
      assertTrue(
          mine.stream().anyMatch(e -> e.getThreadName().equals(offThread)),
          () -> "one record was made on " + offThread + ", which has no TaskContext: " + threads(mine));
    }
  }

  private static List<Long> growAndShrinkWithLoggingOn(Iterator<Integer> rows) {
    Reservation r = TaskPool.openForCurrentTask().newReservation("logged", false, null);
    for (int i = 0; i < 8; i++) {
      r.grow(MIB / 4);
    }
    r.shrink(r.size());
    return List.of(TaskContext.get().taskAttemptId());
  }

  @Test
  void aRecordWhoseLoggerLog4jDisabledNeverReachesJava() {
    long receivedBefore = GoLog.received();
    long belowBefore = GoLog.belowLevel();
    jsc.parallelize(Arrays.asList(1, 2), 2)
        .mapPartitions(rows -> growAndShrinkWithLoggingOn(rows).iterator())
        .collect();
    long received = GoLog.received() - receivedBefore;
    assertEquals(0, GoLog.belowLevel() - belowBefore, "Go sent a record SLF4J had disabled");
    assertTrue(
        capture.of("org.nativepool.pool").isEmpty(),
        () -> "pool is at WARN: " + texts(capture.of("org.nativepool.pool")));
    assertEquals(
        capture.ofGo().size(),
        received,
        () -> "every record Go sent was logged: " + texts(capture.ofGo()));

    // The control: with org.nativepool.pool at INFO the same job's pool records (the Logging
    // decorator's, one per operation) arrive, each naming its task.
    Configurator.setLevel(GoLog.ROOT + ".pool", Level.INFO);
    GoLog.configure(null);
    try {
      List<Long> ids =
          jsc.parallelize(Arrays.asList(1, 2), 2)
              .mapPartitions(rows -> growAndShrinkWithLoggingOn(rows).iterator())
              .collect();
      List<LogEvent> pool = capture.of("org.nativepool.pool");
      for (long id : ids) {
        assertTrue(
            pool.stream()
                .anyMatch(
                    e ->
                        e.getLevel() == Level.INFO
                            && e.getMessage()
                                .getFormattedMessage()
                                .matches(
                                    "\\[task " + id + " stage \\d+\\.0 partition \\d\\] grow .*"
                                        + "consumer=logged.* bytes=262144 .*")),
            () -> "task " + id + ": " + texts(pool));
      }
    } finally {
      Configurator.setLevel(GoLog.ROOT + ".pool", Level.WARN);
      GoLog.configure(null);
    }
  }

  @Test
  void theProcessMemoryLineOfTheGoSideReachesLog4j() {
    Natives.configureRuntime0(0, 0, 0);
    List<LogEvent> lines =
        capture.of("org.nativepool.bridge").stream()
            .filter(
                e ->
                    e.getMessage()
                        .getFormattedMessage()
                        .startsWith("nativepool: process memory policy "))
            .collect(Collectors.toList());
    assertEquals(1, lines.size(), () -> texts(capture.ofGo()));
    assertEquals(Level.INFO, lines.get(0).getLevel());
  }

  /**
   * {@value PoolSettings#LOG_LEVEL} wins over log4j's configuration for every nativepool
   * logger, and Go gates on it: at ERROR the threshold warnings of a task are not even sent.
   */
  @Test
  void theLogLevelSettingOverridesLog4jAndGoGatesOnIt() {
    try {
      GoLog.configure("error");
      for (String part : GoLog.levels().split(",")) {
        assertTrue(part.endsWith("=ERROR"), GoLog.levels());
      }
      long receivedBefore = GoLog.received();
      jsc.parallelize(Arrays.asList(1, 2), 2)
          .mapPartitions(GoLogTest::crossTheThresholdOnAndOffTheTaskThread)
          .collect();
      assertEquals(0, GoLog.received() - receivedBefore, () -> texts(capture.ofGo()));
      assertTrue(capture.ofGo().isEmpty(), () -> texts(capture.ofGo()));
    } finally {
      Configurator.setLevel(GoLog.ROOT + ".spark", Level.INFO); // log4j2-test.properties
      Configurator.setLevel(GoLog.ROOT + ".pool", Level.WARN);
      Configurator.setLevel(GoLog.ROOT, Level.INFO);
      GoLog.configure(null);
    }
  }

  /** The level names the configuration accepts are the ones Go declares. */
  @Test
  void theConfiguredLevelNamesAreGosLevelNames() {
    assertEquals(GoLoggers.LEVEL_NAMES, NativePoolConf.LOG_LEVELS);
  }

  @Test
  void logLevelSettingIsALevelName() {
    assertEquals(GoLog.DEBUG, GoLog.parseLevel(" debug "));
    assertEquals(GoLog.OFF, GoLog.parseLevel("OFF"));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> GoLog.parseLevel("loud"));
    assertEquals(
        "nativepool: log level 'loud': not one of TRACE, DEBUG, INFO, WARN, ERROR, OFF",
        e.getMessage());
  }

  @Test
  void logLevelIsReadFromTheSparkConfiguration() {
    SparkConf conf = new SparkConf(false);
    assertEquals(
        "DEBUG",
        PoolSettings.fromConf(conf.clone().set(NativePoolConf.LOG_LEVEL.key(), " debug "))
            .logLevel());
    assertEquals(null, PoolSettings.fromConf(conf).logLevel());
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> PoolSettings.fromConf(conf.clone().set(NativePoolConf.LOG_LEVEL.key(), "chatty")));
    assertEquals(
        "nativepool: spark.nativepool.logLevel = 'chatty': not a level (TRACE, DEBUG, INFO, WARN,"
            + " ERROR or OFF)",
        e.getMessage());
  }

  @Test
  void aTaskKnownOnlyByIdIsNamedByIdAndAnUnknownTaskIsNotNamed() {
    assertEquals("[task 987654] m", GoLog.text(987654, null, "m"));
    assertEquals("m", GoLog.text(-1, null, "m"));
  }

  private static String texts(List<LogEvent> events) {
    return events.stream()
        .map(e -> e.getLoggerName() + " " + e.getLevel() + " " + e.getMessage().getFormattedMessage())
        .collect(Collectors.joining("\n  ", "\n  ", ""));
  }

  private static String threads(List<LogEvent> events) {
    return events.stream().map(LogEvent::getThreadName).collect(Collectors.joining(", "));
  }
}
