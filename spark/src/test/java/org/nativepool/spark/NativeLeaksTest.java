package org.nativepool.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Reservation leaks against Spark's real memory managers, without a Spark context: a reservation
 * still open when its pool closes is one leak of its {@code size()}, whoever closes the pool, and
 * names its creator when allocation sites are on; and the flat layouts of the leak natives.
 */
class NativeLeaksTest {
  private static final long MIB = SparkMemory.MIB;

  private SparkMemory spark;
  private SparkTaskUpstream up;

  @BeforeAll
  static void load() {
    NativeBridge.ensureLoaded();
  }

  @AfterEach
  void tearDown() {
    NativeBridge.configureArrow(false);
    if (up != null) {
      up.close();
    }
    if (spark != null) {
      assertEquals(0, spark.cleanUp(), "Spark still held bytes for the task");
    }
  }

  private TaskPool open(long task, long chunk) {
    spark = new SparkMemory(64 * MIB, 1);
    up = new SparkTaskUpstream(spark.task(task), task);
    return TaskPool.open(up, task, PoolKind.GREEDY_UNIFIED, 0, chunk);
  }

  private static List<NativeLeaks.Leak> leaksOf(long task) {
    return NativeLeaks.recent().stream().filter(l -> l.taskAttemptId() == task).toList();
  }

  @Test
  void aUserClosingThePoolWithAReservationOpenLeaksItsSizeNotItsLocalSlack() {
    TaskPool pool = open(9301, 8 * MIB); // chunked: the reservation keeps a local slack
    NativeReservation r = pool.newReservation("open-at-close", false, null);
    assertTrue(r.tryGrow(1000));
    assertTrue(r.localSlack() > 0, "the Go size is larger than what the user reserved");
    assertNull(r.site(), "sites off: nothing captured");
    ProcessStats before = NativeBridge.processStats();

    pool.close();

    ProcessStats after = NativeBridge.processStats();
    assertEquals(before.leaks() + 1, after.leaks());
    assertEquals(before.leakedBytes() + 1000, after.leakedBytes());
    assertEquals(
        List.of(new NativeLeaks.Leak(9301, "open-at-close", NativeLeaks.Kind.RESERVATION, 1000, "", 0)),
        leaksOf(9301));
  }

  @Test
  void aReservationClosedByItsUserIsNoLeakAndWithSitesOnALeakNamesItsCreator() {
    NativeBridge.configureArrow(true);
    TaskPool pool = open(9302, 0);
    NativeReservation closed = pool.newReservation("closed", false, null);
    assertTrue(closed.tryGrow(MIB));
    closed.close();
    NativeReservation open = pool.newReservation("left-open", false, null);
    assertTrue(open.tryGrow(MIB));
    assertTrue(
        open.site()
            .startsWith(
                "org.nativepool.spark.NativeLeaksTest."
                    + "aReservationClosedByItsUserIsNoLeakAndWithSitesOnALeakNamesItsCreator"
                    + " (NativeLeaksTest.java:"),
        open.site());

    pool.close();

    List<NativeLeaks.Leak> leaks = leaksOf(9302);
    assertEquals(1, leaks.size(), leaks::toString);
    assertEquals("left-open", leaks.get(0).consumer());
    assertEquals(open.site(), leaks.get(0).site());
  }

  @Test
  void theFlatLayoutsParseAndABadLineIsRefused() {
    assertEquals(
        List.of(
            new NativeLeaks.Leak(7, "op", NativeLeaks.Kind.EXPORT, 30, "a.B.c (B.java:7)", 20),
            new NativeLeaks.Leak(8, "java", NativeLeaks.Kind.JAVA_ARROW, 5, "", 5)),
        NativeLeaks.parse("7\top\texport\t30\t20\ta.B.c (B.java:7)\n8\tjava\tjava-arrow\t5\t5\t\n"));
    assertEquals(List.of(), NativeLeaks.parse(""));
    assertThrows(IllegalStateException.class, () -> NativeLeaks.parse("7\top\n"));
    assertThrows(IllegalArgumentException.class, () -> NativeLeaks.parse("7\top\tnope\t1\t0\t\n"));
    assertEquals(
        List.of(new LiveNative.Owner("op", "", 64, 1)), LiveNative.parse("op\t\t64\t1\n"));
    assertThrows(IllegalArgumentException.class, () -> LiveNative.top(-1));
    assertEquals(List.of(), LiveNative.top(0));
  }
}
