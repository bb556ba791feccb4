package org.nativepool.spark.ledger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.config.LedgerSettings;
import org.nativepool.spark.config.LedgerThreshold;
import org.nativepool.spark.events.LedgerCrossingEvent;
import org.nativepool.spark.jni.Natives;

/**
 * {@link ExecutorLedger} against this JVM's own ledger, without Spark: a listener that throws does
 * not stop the others, the log line, the counter or the message to the driver, nor later
 * notifications.
 */
class ExecutorLedgerTest {
  @BeforeAll
  static void load() {
    Natives.ensureLoaded();
  }

  private static ExecutorLedger ledger(List<Object> toDriver) {
    return new ExecutorLedger(
        "7",
        new LedgerSettings(
            List.of(new LedgerThreshold(LedgerReader.RSS, 1)),
            0.1,
            List.of(),
            LedgerSettings.defaults().growthWindow(),
            LedgerSettings.defaults().growthWindows(),
            LedgerSettings.defaults().growthMinBytes()),
        new LedgerReader(),
        null,
        toDriver::add,
        n -> List.of());
  }

  /**
   * A long-running executor meets a new consumer name in every task (engines name consumers per
   * operator instance or task): the per-consumer peaks keep the largest {@value
   * ExecutorLedger#CONSUMER_PEAKS_KEPT} names, since the last reset and per sample interval, and
   * never grow past that, however many tasks end.
   */
  @Test
  void consumerPeaksStayBoundedAndKeepTheLargest() {
    ExecutorLedger l = ledger(new ArrayList<>());
    int kept = ExecutorLedger.CONSUMER_PEAKS_KEPT;
    List<Long> all = new ArrayList<>();
    for (long task = 0; task < 20_000; task++) {
      // Each task's consumer has a name of its own; every 1000th is the big one.
      long bytes = task % 1000 == 0 ? (1L << 30) + task : 1024 + task % 977;
      all.add(bytes);
      l.poolClosed(task, bytes, Map.of("agg[task " + task + "]", bytes));
    }
    all.sort(java.util.Comparator.reverseOrder());
    Map<String, Long> peaks = l.consumerPeaks();
    assertEquals(kept, peaks.size());
    for (long task = 0; task < 20_000; task += 1000) {
      assertEquals((1L << 30) + task, peaks.get("agg[task " + task + "]"), "a large peak is kept");
    }
    long smallestKept = peaks.values().stream().mapToLong(Long::longValue).min().orElseThrow();
    assertEquals(all.get(kept - 1), smallestKept, "only the largest are kept");

    assertEquals(ExecutorLedger.CONSUMERS_PER_SAMPLE, l.takeSample().consumerPeaks().size());
    l.poolClosed(20_001, 5, Map.of("late", 5L));
    assertEquals(kept, l.consumerPeaks().size(), "a name smaller than all kept is not kept");
    l.resetPeaks();
    assertTrue(l.consumerPeaks().isEmpty());
  }

  @Test
  void aListenerThatThrowsStopsNothingElse() {
    List<Object> toDriver = new ArrayList<>();
    List<LedgerCrossingEvent> seen = new ArrayList<>();
    ExecutorLedger l = ledger(toDriver);
    l.addListener(
        new LedgerListener() {
          @Override
          public void onCrossing(LedgerCrossingEvent c) {
            throw new IllegalStateException("a broken listener");
          }
        });
    l.addListener(
        new LedgerListener() {
          @Override
          public void onCrossing(LedgerCrossingEvent c) {
            seen.add(c);
          }
        });
    l.readNow(); // the RSS is above one byte: one upward crossing
    assertEquals(1, seen.size(), "the second listener is told");
    assertTrue(seen.get(0).isUp());
    assertEquals(List.of(seen.get(0)), toDriver, "and the driver");
    l.readNow();
    assertEquals(1, seen.size(), "no second crossing while above");
    assertTrue(l.latest().rss() > 0);
  }
}
