package org.nativepool.spark.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.spark.ExceptionFailure;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.AccumulableInfo;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.TaskInfo;
import org.apache.spark.scheduler.TaskLocality;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.events.ExecutorDiagnosisEvent;
import org.nativepool.spark.events.ExecutorDiagnosisEvent.Cause;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.LedgerSample;
import org.nativepool.spark.testing.DriverContext;
import org.nativepool.spark.testing.LogCapture;

/**
 * The driver side's diagnosis of executors Spark removes, on a real SparkContext (its listener bus
 * delivers the removals and task ends, and carries what the driver posts) without the executor
 * plugin: executors "7" and "8" send samples to {@link DriverSide#receive} as Spark's plugin
 * endpoint would, then Spark's removal events are posted to the bus as the scheduler backend posts
 * them.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ExecutorDiagnosisDriverTest {
  private static final long MIB = 1L << 20;
  private static final long LIMIT = 2048 * MIB;

  private SparkContext sc;
  private final MetricRegistry registry = new MetricRegistry();
  private final List<SparkListenerEvent> posted = new CopyOnWriteArrayList<>();
  private DriverSide driver;
  private LogCapture log;

  @BeforeEach
  void start() {
    sc =
        new SparkContext(
            new SparkConf()
                .setMaster("local[1]")
                .setAppName("ExecutorDiagnosisDriverTest")
                .set("spark.ui.enabled", "false")
                .set("spark.executor.heartbeatInterval", "1s"));
    sc.addSparkListener(
        new SparkListener() {
          @Override
          public void onOtherEvent(SparkListenerEvent event) {
            posted.add(event);
          }
        });
    driver = new DriverSide();
    driver.init(sc, new DriverContext(sc.conf(), registry));
    log = LogCapture.attach(DriverSide.class.getName());
  }

  @AfterEach
  void stop() {
    if (log != null) {
      log.close();
    }
    if (sc != null) {
      sc.stop();
    }
  }

  /** A sample of {@code id} read {@code ago} ms ago, with the guard's figures and two parts. */
  private static ExecutorSample sample(String id, long ago, long unreclaimable, long direct) {
    Map<String, Long> gauges = new LinkedHashMap<>();
    gauges.put("reserved", 32 * MIB);
    gauges.put("guardLimit", LIMIT);
    gauges.put("guardUnreclaimable", unreclaimable);
    gauges.put("guardReserve", 40 * MIB);
    Map<String, Long> parts = new LinkedHashMap<>();
    parts.put("jvm.heap.committed", 512 * MIB);
    parts.put("jvm.heap.used", 300 * MIB);
    parts.put("jvm.direct", direct);
    parts.put("rss", unreclaimable);
    long t = System.currentTimeMillis() - ago;
    return new ExecutorSample(
        id, t, t, gauges, 32 * MIB, 32 * MIB, new LedgerSample(parts, Map.of(), 0, Map.of()));
  }

  private long gauge(String name) {
    Gauge<?> g = registry.getGauges().get(name);
    assertTrue(g != null, name + " in " + registry.getNames());
    return (Long) g.getValue();
  }

  private List<ExecutorDiagnosisEvent> diagnoses() {
    return posted.stream()
        .filter(e -> e instanceof ExecutorDiagnosisEvent)
        .map(e -> (ExecutorDiagnosisEvent) e)
        .toList();
  }

  @Test
  void aKilledExecutorGetsAWarnLineAnEventAndACount() throws Exception {
    // 30 s of samples, 1 s apart, with direct buffers growing to the limit
    for (int i = 30; i >= 1; i--) {
      long grown = (30 - i) * 10 * MIB;
      driver.receive(sample("7", i * 1000L, LIMIT - 300 * MIB + grown, 100 * MIB + grown));
    }
    sc.listenerBus()
        .post(
            new SparkListenerExecutorRemoved(
                System.currentTimeMillis(), "7", "Command exited with code 137"));
    sc.listenerBus().waitUntilEmpty();

    List<ExecutorDiagnosisEvent> ds = diagnoses();
    assertEquals(1, ds.size(), ds::toString);
    ExecutorDiagnosisEvent d = ds.get(0);
    assertEquals("7", d.getExecutorId());
    assertEquals(Cause.CONTAINER_KILLED, d.getCause(), d::describe);
    assertEquals(LIMIT, d.getLimit());
    assertEquals(290 * MIB, d.getGrownParts().get("jvm.direct"), d::describe);
    assertTrue(log.messages().contains(d.describe()), log.messages()::toString);
    assertTrue(
        d.describe()
            .startsWith(
                "nativepool: executor 7 ended: killed by its container's memory limit (exit code"
                    + " 137): exit code 137 is a SIGKILL, and the last sample, "),
        d::describe);
    assertEquals(1L, gauge("lost.containerKilled"));
    assertEquals(0L, gauge("lost.undecided"));

    // Spark reports the same executor removed again, with nothing more: no second diagnosis.
    sc.listenerBus()
        .post(
            new SparkListenerExecutorRemoved(
                System.currentTimeMillis(), "7", "Worker shutting down"));
    sc.listenerBus().waitUntilEmpty();
    assertEquals(1, diagnoses().size());
  }

  @Test
  void aTaskOutOfMemoryThenExit52IsTheJvmsAndADroppedConnectionIsRevisedByTheExitCode()
      throws Exception {
    driver.receive(sample("8", 500, 900 * MIB, 50 * MIB));
    TaskInfo info =
        new TaskInfo(
            41,
            3,
            0,
            3,
            System.currentTimeMillis() - 2000,
            "8",
            "localhost",
            TaskLocality.PROCESS_LOCAL(),
            false);
    ExceptionFailure oom =
        new ExceptionFailure(
            new OutOfMemoryError("Java heap space"),
            scala.collection.immutable.List$.MODULE$.<AccumulableInfo>empty());
    sc.listenerBus().post(new SparkListenerTaskEnd(2, 0, "ResultTask", oom, info, null, null));
    String rpc =
        "Remote RPC client disassociated. Likely due to containers exceeding thresholds, or network"
            + " issues. Check driver logs for WARN messages.";
    sc.listenerBus().post(new SparkListenerExecutorRemoved(System.currentTimeMillis(), "8", rpc));
    sc.listenerBus().waitUntilEmpty();
    ExecutorDiagnosisEvent first = diagnoses().get(0);
    assertEquals(Cause.LOST, first.getCause(), first::describe);
    assertEquals(Cause.JVM_OUT_OF_MEMORY, first.getSuspected(), first::describe);
    assertEquals(
        List.of("task 41 (3.0) in stage 2.0: java.lang.OutOfMemoryError: Java heap space"),
        first.getFailedTasks());
    assertEquals(1L, gauge("lost.lost"));

    sc.listenerBus()
        .post(
            new SparkListenerExecutorRemoved(
                System.currentTimeMillis(), "8", "Command exited with code 52"));
    sc.listenerBus().waitUntilEmpty();
    List<ExecutorDiagnosisEvent> ds = diagnoses();
    assertEquals(2, ds.size(), ds::toString);
    ExecutorDiagnosisEvent revised = ds.get(1);
    assertEquals(Cause.JVM_OUT_OF_MEMORY, revised.getCause(), revised::describe);
    assertEquals(2, revised.getRevision());
    assertEquals(300 * MIB, revised.getLastHeapUsed());
    assertTrue(
        revised.describe().startsWith("nativepool: executor 8 ended (revised): JVM out of memory"),
        revised::describe);
    assertTrue(log.messages().contains(revised.describe()), log.messages()::toString);
    assertEquals(0L, gauge("lost.lost"), "the revision moves the count");
    assertEquals(1L, gauge("lost.jvmOutOfMemory"));
  }

  @Test
  void anExecutorTheDriverKilledEndedNormally() throws Exception {
    driver.receive(sample("9", 500, 900 * MIB, 50 * MIB));
    sc.listenerBus()
        .post(
            new SparkListenerExecutorRemoved(
                System.currentTimeMillis(), "9", "Executor killed by driver."));
    sc.listenerBus().waitUntilEmpty();
    ExecutorDiagnosisEvent d = diagnoses().get(0);
    assertEquals(Cause.ENDED, d.getCause());
    assertTrue(log.messages().contains(d.describe()), "logged (at INFO)");
    assertEquals(1L, gauge("lost.ended"));
  }
}
