package org.nativepool.spark.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.testing.DriverContext;

/**
 * The driver side's bookkeeping of executors that come and go, on a real SparkContext (its listener
 * bus delivers the removals) without the executor plugin: samples of executors "7" and "8" are
 * handed to {@link DriverSide#receive} as Spark's plugin endpoint would, and the plugin's gauges
 * are read from the registry its context gave it.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ExecutorRemovalTest {
  private SparkContext sc;
  private final MetricRegistry registry = new MetricRegistry();
  private DriverSide driver;

  @BeforeEach
  void start() {
    sc =
        new SparkContext(
            new SparkConf()
                .setMaster("local[1]")
                .setAppName("ExecutorRemovalTest")
                .set("spark.ui.enabled", "false")
                .set("spark.executor.heartbeatInterval", "100ms")
                .set(NativePoolConf.EXECUTOR_RESERVED_THRESHOLDS.key(), "1m"));
    driver = new DriverSide();
    driver.init(sc, new DriverContext(sc.conf(), registry));
  }

  @AfterEach
  void stop() {
    if (sc != null) {
      sc.stop();
    }
  }

  private static ExecutorSample sample(String id, long seq, long reserved) {
    return new ExecutorSample(
        id,
        System.currentTimeMillis(),
        seq,
        Map.of("reserved", reserved, "heldFromSpark", reserved),
        reserved,
        reserved,
        null);
  }

  private long gauge(String name) {
    Gauge<?> g = registry.getGauges().get(name);
    assertTrue(g != null, name + " in " + registry.getNames());
    return (Long) g.getValue();
  }

  @Test
  void aRemovedExecutorsGaugesGoAndTheTotalsDropIt() throws Exception {
    driver.receive(sample("7", 0, 3 << 20));
    driver.receive(sample("8", 0, 5 << 20));
    assertEquals(3L << 20, gauge("executor.7.reserved"));
    assertEquals(8L << 20, gauge("total.reserved"));
    assertEquals(2L, gauge("total.executors"));

    long now = System.currentTimeMillis();
    sc.listenerBus().post(new SparkListenerExecutorRemoved(now, "7", "test"));
    sc.listenerBus().waitUntilEmpty();
    assertFalse(
        registry.getNames().stream().anyMatch(n -> n.startsWith("executor.7.")),
        registry.getNames()::toString);
    assertEquals(5L << 20, gauge("executor.8.reserved"));
    assertEquals(5L << 20, gauge("total.reserved"));
    assertEquals(1L, gauge("total.executors"));

    driver.receive(sample("7", 1, 3 << 20)); // in flight when Spark removed it
    assertFalse(
        registry.getNames().stream().anyMatch(n -> n.startsWith("executor.7.")),
        "a late sample does not bring a removed executor back");
    assertEquals(1L, gauge("total.executors"));
  }

  /**
   * A sample and the executor's removal racing on two threads (Spark's plugin endpoint and its
   * listener bus): whichever wins, no gauge of the removed executor is left, and a late sample does
   * not bring it back. Thousands of races, each started together by a barrier; with a check of the
   * removed set before a separate add, samples re-added removed executors within a few hundred.
   */
  @Test
  void aSampleRacingTheRemovalLeavesNoGaugeOfTheRemovedExecutor() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      for (int i = 0; i < 3000; i++) {
        String id = "race-" + i;
        CyclicBarrier start = new CyclicBarrier(2);
        Future<?> sample =
            pool.submit(
                () -> {
                  start.await();
                  driver.receive(sample(id, 0, 1 << 20));
                  return null;
                });
        Future<?> removal =
            pool.submit(
                () -> {
                  start.await();
                  driver.onExecutorRemoved(id);
                  return null;
                });
        sample.get(30, TimeUnit.SECONDS);
        removal.get(30, TimeUnit.SECONDS);
        String prefix = "executor." + id + ".";
        assertFalse(
            registry.getNames().stream().anyMatch(n -> n.startsWith(prefix)),
            "gauges of removed executor " + id + ": " + registry.getNames());
      }
      assertEquals(0L, gauge("total.executors"));
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void anExecutorSilentForTenHeartbeatsIsForgotten() throws Exception {
    driver.receive(sample("8", 0, 1 << 20));
    Thread.sleep(1_200); // ten heartbeats of 100 ms, and some
    driver.receive(sample("9", 0, 2 << 20));
    assertFalse(
        registry.getNames().stream().anyMatch(n -> n.startsWith("executor.8.")),
        registry.getNames()::toString);
    assertEquals(2L << 20, gauge("total.reserved"));
  }
}
