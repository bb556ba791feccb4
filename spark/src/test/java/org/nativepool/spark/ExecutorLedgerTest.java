package org.nativepool.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link ExecutorLedger} against this JVM's own ledger, without Spark: a listener that throws does
 * not stop the others, the log line, the counter or the message to the driver, nor later
 * notifications.
 */
class ExecutorLedgerTest {
  @BeforeAll
  static void load() {
    NativeBridge.ensureLoaded();
  }

  @Test
  void aListenerThatThrowsStopsNothingElse() {
    List<Object> toDriver = new ArrayList<>();
    List<LedgerCrossing> seen = new ArrayList<>();
    ExecutorLedger l =
        new ExecutorLedger(
            "7",
            new LedgerSettings(
                List.of(new LedgerSettings.Threshold(MemoryLedger.RSS, 1)),
                0.1,
                List.of(),
                LedgerSettings.DEFAULT_GROWTH_WINDOW,
                LedgerSettings.DEFAULT_GROWTH_WINDOWS,
                LedgerSettings.DEFAULT_GROWTH_MIN_BYTES),
            new MemoryLedger(),
            null,
            toDriver::add,
            n -> List.of());
    l.addListener(
        new LedgerListener() {
          @Override
          public void onCrossing(LedgerCrossing c) {
            throw new IllegalStateException("a broken listener");
          }
        });
    l.addListener(
        new LedgerListener() {
          @Override
          public void onCrossing(LedgerCrossing c) {
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
