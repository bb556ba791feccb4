package org.nativepool.spark.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.events.GuardEpisodeEvent;
import org.nativepool.spark.testing.DriverContext;
import org.nativepool.spark.testing.LogCapture;

/**
 * The driver side's handling of the executors' pod guard episodes, on a real SparkContext (its
 * listener bus carries what the driver posts) without the executor plugin: episodes of executors
 * "7" and "8" are handed to {@link DriverSide#receive} as Spark's plugin endpoint would.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class GuardEpisodeDriverTest {
  private static final long MIB = 1L << 20;

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
                .setAppName("GuardEpisodeDriverTest")
                .set("spark.ui.enabled", "false"));
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

  private static GuardEpisodeEvent episode(String executor, long id, long spilled, long reaction) {
    return new GuardEpisodeEvent(
        executor,
        id,
        1_000,
        1_900,
        4096 * MIB,
        82 * MIB,
        4050 * MIB,
        4100 * MIB,
        3000 * MIB,
        3200 * MIB,
        spilled,
        reaction,
        900_000,
        0,
        2,
        false,
        Map.of("jvm.direct", 180 * MIB),
        Map.of("sort (task 3)", spilled));
  }

  private long gauge(String name) {
    Gauge<?> g = registry.getGauges().get(name);
    assertTrue(g != null, name + " in " + registry.getNames());
    return (Long) g.getValue();
  }

  @Test
  void episodesArePostedLoggedAndCountedAcrossExecutors() throws Exception {
    assertEquals(0L, gauge(GuardEpisodes.GUARD_EPISODES));
    assertEquals(0L, gauge(GuardEpisodes.GUARD_SPILLED));
    assertEquals(-1L, gauge(GuardEpisodes.GUARD_LAST_REACTION), "none yet");

    GuardEpisodeEvent first = episode("7", 1, 64 * MIB, 4_600);
    GuardEpisodeEvent second = episode("8", 3, 200 * MIB, 12_400);
    assertEquals(null, driver.receive(first));
    driver.receive(second);
    sc.listenerBus().waitUntilEmpty();

    assertEquals(
        List.of(first, second),
        posted.stream().filter(e -> e instanceof GuardEpisodeEvent).toList(),
        "both on the bus, so in the event log");
    assertEquals(2L, gauge(GuardEpisodes.GUARD_EPISODES));
    assertEquals(264 * MIB, gauge(GuardEpisodes.GUARD_SPILLED));
    assertEquals(12L, gauge(GuardEpisodes.GUARD_LAST_REACTION), "the last one's, in ms");
    List<String> lines = log.messages();
    assertTrue(lines.contains(first.summary()), lines::toString);
    assertTrue(
        lines.contains(
            "nativepool: executor 8 had pod guard episode 3: spilled 200.0 MiB, reaction 12.4 ms,"
                + " recovered in 900.0 ms; grew outside native memory 200.0 MiB, most in"
                + " jvm.direct (+180.0 MiB)"),
        lines::toString);

    driver.receive(episode("7", 2, 0, -1)); // nothing native spilled
    assertEquals(3L, gauge(GuardEpisodes.GUARD_EPISODES));
    assertEquals(264 * MIB, gauge(GuardEpisodes.GUARD_SPILLED));
    assertEquals(-1L, gauge(GuardEpisodes.GUARD_LAST_REACTION));
  }
}
