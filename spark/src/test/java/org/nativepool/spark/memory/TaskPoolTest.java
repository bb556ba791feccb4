package org.nativepool.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.TaskContextImpl;
import org.apache.spark.memory.TaskMemoryManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.testing.SparkMemory;
import scala.Option;

/** Opening, joining and closing a task's pool through the Java wrappers. */
class TaskPoolTest {
  private static final long MIB = SparkMemory.MIB;
  private static final long TASK = 900;

  private SparkMemory spark;
  private TaskMemoryManager tmm;
  private SparkTaskUpstream up;
  private TaskPool pool;

  @BeforeAll
  static void loadLibrary() {
    Natives.ensureLoaded();
  }

  @BeforeEach
  void setUp() {
    spark = new SparkMemory(64 * MIB, 1);
    tmm = spark.task(TASK);
    up = new SparkTaskUpstream(tmm, TASK);
    pool = TaskPool.open(up, TASK, PoolKind.FAIR_UNIFIED, 32 * MIB, 2 * MIB);
  }

  @AfterEach
  void tearDown() {
    pool.close();
    up.close();
    assertEquals(0, spark.cleanUp());
  }

  @Test
  void secondOpenOfTheSameTaskJoinsTheSamePool() {
    try (TaskPool joined = TaskPool.open(up, TASK, PoolKind.FAIR_UNIFIED, 32 * MIB, 2 * MIB)) {
      Reservation a = pool.newReservation("a", false, null);
      Reservation b = joined.newReservation("b", false, null);
      a.grow(3 * MIB);
      b.grow(MIB);
      assertEquals(4 * MIB, pool.stats().reserved());
      assertEquals(4 * MIB, joined.stats().reserved());
    }
    // Closing one handle leaves the pool open for the other; b was closed with its handle.
    assertEquals(3 * MIB, pool.stats().reserved());
  }

  @Test
  void secondOpenWithAnotherConfigurationIsIllegalStateNamingBoth() {
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () -> TaskPool.open(up, TASK, PoolKind.GREEDY_UNIFIED, 0, 2 * MIB));
    assertTrue(e.getMessage().contains("fair_unified"), e.getMessage());
    assertTrue(e.getMessage().contains("greedy_unified"), e.getMessage());
    assertEquals(0, pool.stats().reserved(), "the first pool is untouched");
  }

  @Test
  void openWithAnotherTasksUpstreamIsIllegalArgument() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> TaskPool.open(up, TASK + 1, PoolKind.FAIR_UNIFIED, 32 * MIB, 0));
    assertEquals(
        "nativepool: upstream of task 900 cannot open a pool for task 901", e.getMessage());
  }

  @Test
  void negativeSizesAreRejectedBeforeCrossing() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> TaskPool.open(up, TASK, PoolKind.FAIR_UNIFIED, -1, 0));
    assertEquals("nativepool: pool size -1: negative size", e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> TaskPool.open(up, TASK, PoolKind.FAIR_UNIFIED, 0, -8));
    assertEquals("nativepool: chunk size -8: negative size", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> pool.reclaim(-2));
    assertEquals("nativepool: pool of task 900 reclaim(-2): negative size", e.getMessage());
  }

  @Test
  void spillerWithoutCanSpillIsIllegalArgument() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> pool.newReservation("x", false, target -> 0));
    assertEquals("nativepool: consumer 'x' has a spiller but canSpill is false", e.getMessage());
  }

  @Test
  void openAfterTheUpstreamClosedIsIllegalState() {
    SparkTaskUpstream done = new SparkTaskUpstream(tmm, TASK + 2);
    done.close();
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () -> TaskPool.open(done, TASK + 2, PoolKind.GREEDY_UNIFIED, 0, 0));
    assertEquals("nativepool: task 902 completed; cannot open a pool", e.getMessage());
  }

  @Test
  void closeIsIdempotentAndLaterCallsAreIllegalState() {
    Reservation r = pool.newReservation("r", false, null);
    r.grow(MIB);
    pool.close();
    pool.close();
    assertTrue(r.isClosed());
    IllegalStateException e =
        assertThrows(IllegalStateException.class, () -> pool.newReservation("late", false, null));
    assertEquals("nativepool: pool of task 900 is closed", e.getMessage());
    assertEquals(0, tmm.getMemoryConsumptionForThisTask());
  }

  /**
   * A spiller that tries to close its own reservation while that reservation's tryGrow is inside
   * Spark (which asks the task's pool to spill) is refused, loudly, and the reservation survives.
   */
  @Test
  void closingAReservationFromInsideItsOwnNativeCallIsRefused() {
    long task = TASK + 3;
    AtomicReference<Reservation> self = new AtomicReference<>();
    AtomicReference<RuntimeException> refused = new AtomicReference<>();
    try (SparkTaskUpstream greedyUp = new SparkTaskUpstream(spark.task(task), task);
        TaskPool greedy = TaskPool.open(greedyUp, task, PoolKind.GREEDY_UNIFIED, 0, 0)) {
      Reservation r =
          greedy.newReservation(
              "selfish",
              true,
              target -> {
                try {
                  self.get().close();
                } catch (IllegalStateException e) {
                  refused.set(e);
                }
                return 0;
              });
      self.set(r);
      r.grow(64 * MIB); // all of Spark's off-heap pool

      // Spark has nothing left, so it asks our consumer to spill, which runs r's spiller.
      assertTrue(!r.tryGrow(8 * MIB), "Spark had nothing to give");

      RuntimeException e = refused.get();
      assertTrue(e != null, "the spiller ran and tried to close");
      assertEquals(
          "nativepool: reservation 'selfish' is in use by 1 native call(s); close refused",
          e.getMessage());
      assertTrue(!r.isClosed());
      assertEquals(64 * MIB, r.size());
    }
  }

  /** A join learns the task's owner from Go: its own candidate is neither registered nor used. */
  @Test
  void aJoinBorrowsFromTheOwnerTheCreatingOpenRegistered() {
    SparkTaskUpstream candidate = new SparkTaskUpstream(tmm, TASK);
    try (TaskPool joined = TaskPool.open(candidate, TASK, PoolKind.FAIR_UNIFIED, 32 * MIB, 2 * MIB)) {
      assertSame(up, joined.upstream(), "the join's upstream is the task's owner");
      assertSame(up, pool.upstream());
      assertTrue(up.taskHandle() != 0, "the creating open's owner holds the Go task handle");
      assertEquals(0, candidate.taskHandle(), "a join's candidate gets no task handle");
      Reservation b = joined.newReservation("b", false, null);
      b.grow(MIB);
      assertTrue(up.used() >= MIB, "the join borrows through the owner: " + up.used());
      assertEquals(0, candidate.used());
    }
  }

  /**
   * Spark's spill of the owner's consumer is one native call through the Go task handle, and a
   * spiller that closes the task's pool from inside it is refused (the Go close would wait for the
   * very spill that runs it), loudly, and the pool survives.
   */
  @Test
  void closingThePoolFromInsideSparksSpillOfTheTaskIsRefused() throws Exception {
    AtomicReference<RuntimeException> refused = new AtomicReference<>();
    Reservation r =
        pool.newReservation(
            "spills",
            true,
            target -> {
              try {
                pool.close();
              } catch (IllegalStateException e) {
                refused.set(e);
              }
              return 0;
            });
    r.grow(8 * MIB);

    long freed = up.memoryConsumer().spill(64 * MIB, null);

    assertEquals(0, freed, "the spiller freed nothing and the pool keeps no slack in Spark");
    RuntimeException e = refused.get();
    assertTrue(e != null, "the spiller ran and tried to close");
    assertEquals(
        "nativepool: pool of task 900 is in use by 1 native call(s); close refused",
        e.getMessage());
    assertTrue(!pool.isClosed());
    assertEquals(8 * MIB, r.size());
    assertEquals(8 * MIB, up.used());
  }

  /** Spark may spill the owner after its pool closed: the stale task handle reclaims nothing. */
  @Test
  void sparksSpillAfterThePoolClosedFreesNothing() throws Exception {
    pool.close();
    assertTrue(up.taskHandle() != 0);
    assertEquals(0, up.memoryConsumer().spill(MIB, null));
  }

  /**
   * Opens through the task's context share one owner, which Go registered for the first; only that
   * open's listener closes it, and it runs after every handle's, so nothing is released late and
   * Spark's figure for the task ends at 0.
   */
  @Test
  void opensThroughTheTaskContextShareOneOwnerClosedAfterEveryHandle() {
    long task = TASK + 5;
    TaskMemoryManager t = spark.task(task);
    TaskContextImpl ctx = CloseWhileWaitingInSparkTest.taskContext(task, t);
    long liveBefore = Natives.processStats().liveTasks();
    TaskPool first = TaskPool.open(ctx, PoolKind.GREEDY_UNIFIED, 0, 0);
    TaskPool second = TaskPool.open(ctx, PoolKind.GREEDY_UNIFIED, 0, 0);
    assertSame(first.upstream(), second.upstream(), "one owner per task");
    Reservation r = second.newReservation("r", false, null);
    r.grow(MIB);
    assertEquals(liveBefore + 1, Natives.processStats().liveTasks());

    ctx.markTaskCompleted(Option.<Throwable>empty());

    assertTrue(first.isClosed() && second.isClosed() && r.isClosed());
    assertTrue(first.upstream().isClosed());
    assertEquals(0, first.upstream().lateReleases(), "the owner closed after every handle");
    assertEquals(0, t.getMemoryConsumptionForThisTask());
    assertEquals(liveBefore, Natives.processStats().liveTasks(), "the Go task pool is gone");
  }
}
