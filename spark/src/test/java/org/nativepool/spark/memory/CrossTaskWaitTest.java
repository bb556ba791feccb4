package org.nativepool.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.memory.TaskMemoryManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.PoolStats;
import org.nativepool.spark.testing.SparkMemory;

/**
 * Two tasks (two {@code TaskMemoryManager}s) on one {@code UnifiedMemoryManager}, each with a
 * native pool, on two threads: Spark's 1/2N wait blocks a native acquire of the newer task until
 * the older task frees memory. Every wait is bounded by a latch or future timeout, and the class
 * by a preemptive timeout, so a regression fails instead of hanging.
 */
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class CrossTaskWaitTest {
  private static final long MIB = SparkMemory.MIB;
  private static final long TASK_A = 501;
  private static final long TASK_B = 502;

  private SparkMemory spark;
  private TaskMemoryManager tmmA;
  private TaskMemoryManager tmmB;
  private SparkTaskUpstream upA;
  private SparkTaskUpstream upB;
  private TaskPool poolA;
  private TaskPool poolB;
  private ExecutorService taskThreadB;

  @BeforeAll
  static void loadLibrary() {
    Natives.ensureLoaded();
  }

  @BeforeEach
  void setUp() {
    spark = new SparkMemory(64 * MIB, 2);
    tmmA = spark.task(TASK_A);
    tmmB = spark.task(TASK_B);
    upA = new SparkTaskUpstream(tmmA, TASK_A);
    upB = new SparkTaskUpstream(tmmB, TASK_B);
    poolA = TaskPool.open(upA, TASK_A, PoolKind.GREEDY_UNIFIED, 0, 0);
    poolB = TaskPool.open(upB, TASK_B, PoolKind.GREEDY_UNIFIED, 0, 0);
    taskThreadB = Executors.newSingleThreadExecutor(r -> new Thread(r, "task-" + TASK_B));
  }

  @AfterEach
  void tearDown() throws InterruptedException {
    // Waking any waiter first: closing A's pool releases A's bytes (notifyAll in Spark).
    poolA.close();
    upA.close();
    taskThreadB.shutdownNow();
    assertTrue(taskThreadB.awaitTermination(30, TimeUnit.SECONDS), "task B's thread ended");
    poolB.close();
    upB.close();
    assertEquals(0, spark.cleanUp());
  }

  private static void assertExact(TaskPool pool, SparkTaskUpstream up, TaskMemoryManager tmm) {
    PoolStats s = pool.stats();
    assertEquals(tmm.getMemoryConsumptionForThisTask(), s.held(), s::toString);
    assertEquals(s.held(), up.used(), s::toString);
    assertEquals(s.reserved(), s.held() + s.overcommit(), s::toString);
  }

  /** Waits until {@code t} is parked in Spark's 1/2N wait ({@code Object.wait}, pool lock). */
  private static void awaitWaitingInSpark(Thread t) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      if (t.getState() == Thread.State.WAITING) {
        for (StackTraceElement e : t.getStackTrace()) {
          if (e.getClassName().equals("org.apache.spark.memory.ExecutionMemoryPool")) {
            return;
          }
        }
      }
      Thread.sleep(5);
    }
    throw new AssertionError("thread " + t.getName() + " never waited in Spark's 1/2N wait");
  }

  /** Task A takes the whole off-heap pool while it is the only task (N = 1). */
  private Reservation taskATakesEverything() {
    Reservation a = poolA.newReservation("a", false, null);
    assertTrue(a.tryGrow(64 * MIB), a::lastRefusal);
    assertExact(poolA, upA, tmmA);
    return a;
  }

  /** Starts {@code tryGrow(n)} on task B's thread; returns its future and thread. */
  private Future<Boolean> startTryGrowOnB(
      Reservation b, long n, AtomicReference<Thread> thread, CountDownLatch started) {
    return taskThreadB.submit(
        () -> {
          thread.set(Thread.currentThread());
          started.countDown();
          return b.tryGrow(n);
        });
  }

  /**
   * Task B's native tryGrow(16 MiB) waits in Spark (B holds less than 1/2N = 16 MiB of 64 MiB) and
   * returns granted once task A shrinks by 32 MiB.
   */
  @Test
  void nativeAcquireBlockedInSparksWaitResumesWhenTheOtherTaskFrees() throws Exception {
    Reservation a = taskATakesEverything();
    Reservation b = poolB.newReservation("b", false, null);
    AtomicReference<Thread> thread = new AtomicReference<>();
    CountDownLatch started = new CountDownLatch(1);
    Future<Boolean> grow = startTryGrowOnB(b, 16 * MIB, thread, started);
    assertTrue(started.await(30, TimeUnit.SECONDS));
    awaitWaitingInSpark(thread.get());
    assertFalse(grow.isDone(), "B returned while A still holds everything");

    a.shrink(32 * MIB);

    assertTrue(grow.get(30, TimeUnit.SECONDS), b::lastRefusal);
    assertEquals(16 * MIB, b.size());
    assertEquals(32 * MIB, a.size());
    assertExact(poolA, upA, tmmA);
    assertExact(poolB, upB, tmmB);
    assertEquals(48 * MIB, spark.offHeapUsed());
  }

  /**
   * Interrupting task B's thread while its native acquire waits in Spark fails only that acquire,
   * with the original InterruptedException rethrown by tryGrow; B's reservation is unchanged,
   * both tasks' accounting stays exact, and both pools keep working.
   */
  @Test
  void interruptingABlockedNativeAcquireFailsOnlyThatAcquireWithInterruptedException()
      throws Exception {
    Reservation a = taskATakesEverything();
    Reservation b = poolB.newReservation("b", false, null);
    AtomicReference<Thread> thread = new AtomicReference<>();
    CountDownLatch started = new CountDownLatch(1);
    Future<Boolean> grow = startTryGrowOnB(b, 16 * MIB, thread, started);
    assertTrue(started.await(30, TimeUnit.SECONDS));
    awaitWaitingInSpark(thread.get());

    thread.get().interrupt();

    Throwable cause = null;
    try {
      grow.get(30, TimeUnit.SECONDS);
    } catch (ExecutionException thrown) {
      cause = thrown.getCause();
    } catch (TimeoutException stuck) {
      throw new AssertionError("interrupted acquire did not return", stuck);
    }
    assertTrue(cause != null, "tryGrow returned normally after the interrupt");
    assertSame(InterruptedException.class, cause.getClass(), String.valueOf(cause));
    assertNull(cause.getCause(), "the original exception, not a wrapper");
    assertEquals(0, b.size(), "B's reservation is unchanged");
    assertEquals(64 * MIB, a.size(), "A's reservation is unchanged");
    assertExact(poolA, upA, tmmA);
    assertExact(poolB, upB, tmmB);
    assertEquals(0, tmmB.getMemoryConsumptionForThisTask());
    assertEquals(64 * MIB, spark.offHeapUsed());

    // Both pools still work: A frees half, B's next acquire is granted without waiting.
    a.shrink(32 * MIB);
    Future<Boolean> again = taskThreadB.submit(() -> b.tryGrow(16 * MIB));
    assertTrue(again.get(30, TimeUnit.SECONDS), b::lastRefusal);
    assertEquals(16 * MIB, b.size());
    assertExact(poolA, upA, tmmA);
    assertExact(poolB, upB, tmmB);
  }

  /** close() while the reservation's tryGrow waits in Spark fails loudly and frees nothing. */
  @Test
  void closingAReservationWhoseTryGrowWaitsInSparkIsRefused() throws Exception {
    Reservation a = taskATakesEverything();
    Reservation b = poolB.newReservation("b", false, null);
    AtomicReference<Thread> thread = new AtomicReference<>();
    CountDownLatch started = new CountDownLatch(1);
    Future<Boolean> grow = startTryGrowOnB(b, 16 * MIB, thread, started);
    assertTrue(started.await(30, TimeUnit.SECONDS));
    awaitWaitingInSpark(thread.get());

    IllegalStateException e = assertThrows(IllegalStateException.class, b::close);

    assertEquals(
        "nativepool: reservation 'b' is in use by 1 native call(s); close refused",
        e.getMessage());
    a.shrink(32 * MIB);
    assertTrue(grow.get(30, TimeUnit.SECONDS), b::lastRefusal);
    b.close();
    assertTrue(b.isClosed());
    assertEquals(0, tmmB.getMemoryConsumptionForThisTask());
    assertExact(poolB, upB, tmmB);
  }
}
