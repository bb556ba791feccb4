package org.nativepool.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.jni.LeakKind;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.ProcessStats;
import org.nativepool.spark.testing.SparkMemory;

/**
 * Reservation leaks against Spark's real memory managers, without a Spark context: a reservation
 * still open when its pool closes is one leak of its {@code size()}, whoever closes the pool, and
 * names its creator when allocation sites are on; and the flat layouts of the leak natives.
 */
class LeaksTest {
  private static final long MIB = SparkMemory.MIB;

  private SparkMemory spark;
  private SparkTaskUpstream up;

  @BeforeAll
  static void load() {
    Natives.ensureLoaded();
  }

  @AfterEach
  void tearDown() {
    ExecutorState.setAllocationSites(false);
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

  private static List<Leaks.Leak> leaksOf(long task) {
    return Leaks.recent().stream().filter(l -> l.taskAttemptId() == task).toList();
  }

  @Test
  void aUserClosingThePoolWithAReservationOpenLeaksItsSizeNotItsLocalSlack() {
    TaskPool pool = open(9301, 8 * MIB); // chunked: the reservation keeps a local slack
    Reservation r = pool.newReservation("open-at-close", false, null);
    assertTrue(r.tryGrow(1000));
    assertTrue(r.localSlack() > 0, "the Go size is larger than what the user reserved");
    assertNull(r.site(), "sites off: nothing captured");
    ProcessStats before = Natives.processStats();

    pool.close();

    ProcessStats after = Natives.processStats();
    assertEquals(before.leaks() + 1, after.leaks());
    assertEquals(before.leakedBytes() + 1000, after.leakedBytes());
    assertEquals(
        List.of(new Leaks.Leak(9301, "open-at-close", LeakKind.RESERVATION, 1000, "", 0)),
        leaksOf(9301));
  }

  @Test
  void aReservationClosedByItsUserIsNoLeakAndWithSitesOnALeakNamesItsCreator() {
    ExecutorState.setAllocationSites(true);
    TaskPool pool = open(9302, 0);
    Reservation closed = pool.newReservation("closed", false, null);
    assertTrue(closed.tryGrow(MIB));
    closed.close();
    Reservation open = pool.newReservation("left-open", false, null);
    assertTrue(open.tryGrow(MIB));
    assertTrue(
        open.site()
            .startsWith(
                "org.nativepool.spark.memory.LeaksTest."
                    + "aReservationClosedByItsUserIsNoLeakAndWithSitesOnALeakNamesItsCreator"
                    + " (LeaksTest.java:"),
        open.site());

    pool.close();

    List<Leaks.Leak> leaks = leaksOf(9302);
    assertEquals(1, leaks.size(), leaks::toString);
    assertEquals("left-open", leaks.get(0).consumer());
    assertEquals(open.site(), leaks.get(0).site());
  }

  @Test
  void theFlatLayoutsParseAndABadLineIsRefused() {
    assertEquals(
        List.of(
            new Leaks.Leak(7, "op", LeakKind.EXPORT, 30, "a.B.c (B.java:7)", 20),
            new Leaks.Leak(8, "java", LeakKind.JAVA_ARROW, 5, "", 5)),
        Leaks.parse("7\top\texport\t30\t20\ta.B.c (B.java:7)\n8\tjava\tjava-arrow\t5\t5\t\n"));
    assertEquals(List.of(), Leaks.parse(""));
    assertThrows(IllegalStateException.class, () -> Leaks.parse("7\top\n"));
    assertThrows(IllegalArgumentException.class, () -> Leaks.parse("7\top\tnope\t1\t0\t\n"));
  }
}
