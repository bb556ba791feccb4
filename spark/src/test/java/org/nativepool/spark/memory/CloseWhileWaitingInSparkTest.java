package org.nativepool.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Constructor;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.TaskContextImpl;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.memory.TaskMemoryManager;
import org.apache.spark.resource.ResourceInformation;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.PoolStats;
import org.nativepool.spark.jni.ProcessStats;
import org.nativepool.spark.testing.SparkMemory;
import scala.Option;
import scala.collection.immutable.Map$;

/**
 * Closing a task's pool while another thread's native call waits in Spark's 1/2N wait. Two tasks (two {@code TaskMemoryManager}s) share one {@code UnifiedMemoryManager} of 64
 * MiB: task A takes everything while it is alone, so task B's {@code tryGrow(16 MiB)} (below 1/2N
 * = 16 MiB) parks in Spark until A frees. Meanwhile B's pool is closed: an explicit {@link
 * TaskPool#close()} is refused and closes nothing, the task-end close waits for the call, and a
 * close from inside a spill callback on the calling thread is refused without deadlock. After
 * every step Spark's figure for task B equals the Go pool's held bytes, and no leak is reported
 * for bytes that were never reserved.
 */
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class CloseWhileWaitingInSparkTest {
  private static final long MIB = SparkMemory.MIB;
  private static final long TASK_A = 801;
  private static final long TASK_B = 802;
  private static final long TASK_C = 803;

  private SparkMemory spark;
  private TaskMemoryManager tmmA;
  private TaskMemoryManager tmmB;
  private SparkTaskUpstream upA;
  private SparkTaskUpstream upB;
  private TaskPool poolA;
  private TaskPool poolB;
  private Reservation a;
  private ExecutorService threads;

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
    threads = Executors.newCachedThreadPool();
    // Task A takes the whole off-heap pool while it is the only task (N = 1).
    a = poolA.newReservation("a", false, null);
    assertTrue(a.tryGrow(64 * MIB), a::lastRefusal);
  }

  @AfterEach
  void tearDown() throws InterruptedException {
    poolA.close(); // wakes any waiter: A's bytes go back to Spark (notifyAll)
    upA.close();
    threads.shutdownNow();
    assertTrue(threads.awaitTermination(30, TimeUnit.SECONDS), "test threads ended");
    try {
      poolB.close();
    } finally {
      upB.close();
    }
    assertEquals(0, spark.cleanUp(), "Spark's leak check");
  }

  /** Spark's figure for task B equals the pool's held bytes and the consumer's getUsed(). */
  private void assertSparkEqualsOurs() {
    PoolStats s = poolB.stats();
    assertEquals(tmmB.getMemoryConsumptionForThisTask(), s.held(), s::toString);
    assertEquals(s.held(), upB.used(), s::toString);
  }

  /** Spark's figure for task B after its pool closed: nothing, on both sides. */
  private void assertTaskBHoldsNothing() {
    assertEquals(0, tmmB.getMemoryConsumptionForThisTask(), "Spark's figure for task B");
    assertEquals(0, upB.used(), "task B's consumer getUsed()");
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

  /** Starts {@code b.tryGrow(16 MiB)} on its own thread and returns once it waits in Spark. */
  private Future<Boolean> tryGrowWaitingInSpark(Reservation b) throws Exception {
    AtomicReference<Thread> thread = new AtomicReference<>();
    CountDownLatch started = new CountDownLatch(1);
    Future<Boolean> grow =
        threads.submit(
            () -> {
              thread.set(Thread.currentThread());
              started.countDown();
              return b.tryGrow(16 * MIB);
            });
    assertTrue(started.await(30, TimeUnit.SECONDS));
    awaitWaitingInSpark(thread.get());
    assertFalse(grow.isDone(), "B returned while A still holds everything");
    return grow;
  }

  /**
   * An explicit close while B's tryGrow waits in Spark is refused and closes nothing: the pool,
   * its reservation and the Go pool stay open, the grant lands in the open pool when Spark gives
   * it, and a later close returns it. The reservation, still open then, is one leak of its 16 MiB.
   */
  @Test
  void closeWhileATryGrowWaitsInSparkIsRefusedAndClosesNothing() throws Exception {
    ProcessStats before = Natives.processStats();
    Reservation b = poolB.newReservation("b", false, null);
    Future<Boolean> grow = tryGrowWaitingInSpark(b);

    IllegalStateException e = assertThrows(IllegalStateException.class, poolB::close);

    assertEquals(
        "nativepool: pool of task " + TASK_B + " is in use by 1 native call(s); close refused",
        e.getMessage());
    assertFalse(poolB.isClosed(), "a refused close closes nothing: the pool");
    assertFalse(b.isClosed(), "a refused close closes nothing: the reservation");
    assertSparkEqualsOurs(); // the stats still answer: the Go pool is open

    a.shrink(32 * MIB); // Spark now grants B

    assertTrue(grow.get(30, TimeUnit.SECONDS), b::lastRefusal);
    assertEquals(16 * MIB, b.size());
    assertEquals(16 * MIB, tmmB.getMemoryConsumptionForThisTask());
    assertSparkEqualsOurs();

    poolB.close();
    assertTrue(poolB.isClosed() && b.isClosed());
    assertTaskBHoldsNothing();
    ProcessStats after = Natives.processStats();
    // The grant landed in the open pool and the reservation, left open by its user, held it when
    // the pool closed: one leak of what the user reserved, counted once (Leaks: the reservation's
    // leak is its size(); the pool's close then finds nothing more to report).
    assertEquals(before.leaks() + 1, after.leaks(), "one leak, the open reservation: " + after);
    assertEquals(before.leakedBytes() + 16 * MIB, after.leakedBytes(), after::toString);
  }

  /**
   * The task-end close (what the completion listener runs) waits for B's tryGrow in Spark, then
   * closes: the grant lands in the open pool and goes back with the close, so Spark's figure and
   * ours are equal while it waits and both are 0 when it returns; the open reservation is one leak.
   */
  @Test
  void taskEndCloseWaitsForATryGrowInSparkThenReturnsItsGrant() throws Exception {
    ProcessStats before = Natives.processStats();
    Reservation b = poolB.newReservation("b", false, null);
    Future<Boolean> grow = tryGrowWaitingInSpark(b);

    Future<?> close = threads.submit(poolB::closeAtTaskEnd);
    Thread.sleep(200);
    assertFalse(close.isDone(), "the task-end close waits for the call in flight");
    assertEquals(0, tmmB.getMemoryConsumptionForThisTask());
    assertEquals(0, upB.used());

    a.shrink(32 * MIB); // Spark now grants B; the close proceeds once tryGrow returns

    assertTrue(grow.get(30, TimeUnit.SECONDS), b::lastRefusal);
    close.get(30, TimeUnit.SECONDS);
    assertTrue(poolB.isClosed() && b.isClosed());
    assertTaskBHoldsNothing();
    assertEquals(0, upB.lateReleases(), "the upstream was open for every release");
    ProcessStats after = Natives.processStats();
    // The grant landed in the open pool and the reservation, left open by its user, held it when
    // the pool closed: one leak of what the user reserved, counted once (Leaks: the reservation's
    // leak is its size(); the pool's close then finds nothing more to report).
    assertEquals(before.leaks() + 1, after.leaks(), "one leak, the open reservation: " + after);
    assertEquals(before.leakedBytes() + 16 * MIB, after.leakedBytes(), after::toString);
  }

  /**
   * The same through Spark's own task end: {@code TaskContextImpl.markTaskCompleted} runs the
   * completion listeners that {@link TaskPool#open(org.apache.spark.TaskContext, PoolKind, long,
   * long)} registered while task C's tryGrow waits in Spark on a thread of the task. The listeners
   * return only after that call, and Spark's leak check then finds nothing: Spark's figure and
   * ours are 0; the reservation left open is one leak of its grant.
   */
  @Test
  void taskCompletionWhileATryGrowWaitsInSparkLeavesNothingForSparksLeakCheck() throws Exception {
    ProcessStats before = Natives.processStats();
    TaskMemoryManager tmmC = spark.task(TASK_C);
    TaskContextImpl ctx = taskContext(TASK_C, tmmC);
    TaskPool poolC = TaskPool.open(ctx, PoolKind.GREEDY_UNIFIED, 0, 0);
    Reservation c = poolC.newReservation("c", false, null);
    Future<Boolean> grow = tryGrowWaitingInSpark(c);

    Future<?> completed = threads.submit(() -> ctx.markTaskCompleted(Option.<Throwable>empty()));
    Thread.sleep(200);
    assertFalse(completed.isDone(), "the completion listener waits for the call in flight");

    a.shrink(32 * MIB);

    assertTrue(grow.get(30, TimeUnit.SECONDS), c::lastRefusal);
    completed.get(30, TimeUnit.SECONDS);
    assertTrue(poolC.isClosed() && c.isClosed() && poolC.upstream().isClosed());
    assertEquals(0, tmmC.getMemoryConsumptionForThisTask(), "Spark's figure for task C");
    assertEquals(0, poolC.upstream().used());
    assertEquals(0, poolC.upstream().lateReleases());
    assertEquals(0, tmmC.cleanUpAllAllocatedMemory(), "Spark's leak check");
    ProcessStats after = Natives.processStats();
    assertEquals(before.liveTasks(), after.liveTasks(), "task C's Go task pool is gone: " + after);
    // The grant landed in the open pool and the reservation, left open by its user, held it when
    // the pool closed: one leak of what the user reserved, counted once (Leaks: the reservation's
    // leak is its size(); the pool's close then finds nothing more to report).
    assertEquals(before.leaks() + 1, after.leaks(), "one leak, the open reservation: " + after);
    assertEquals(before.leakedBytes() + 16 * MIB, after.leakedBytes(), after::toString);
  }

  /**
   * A task context over {@code tmm} without a SparkContext, as Spark's own suites build one. Through
   * reflection: its constructor's CPUs are an {@code int} up to Spark 4.2 and a {@code
   * scala.math.BigDecimal} from 4.3 on (fractional task CPUs).
   */
  static TaskContextImpl taskContext(long taskAttemptId, TaskMemoryManager tmm) {
    scala.collection.immutable.Map<String, ResourceInformation> resources = Map$.MODULE$.empty();
    for (Constructor<?> c : TaskContextImpl.class.getConstructors()) {
      Class<?>[] p = c.getParameterTypes();
      if (p.length != 12) {
        continue;
      }
      Object cpus = p[10] == int.class ? (Object) 1 : scala.math.BigDecimal$.MODULE$.apply(1);
      try {
        return (TaskContextImpl)
            c.newInstance(
                0, 0, 0, taskAttemptId, 0, 1, tmm, new Properties(), null, TaskMetrics.empty(),
                cpus, resources);
      } catch (ReflectiveOperationException e) {
        throw new AssertionError("TaskContextImpl(" + Arrays.toString(p) + ")", e);
      }
    }
    throw new AssertionError(
        "no 12-parameter TaskContextImpl constructor: "
            + Arrays.toString(TaskContextImpl.class.getConstructors()));
  }

  /**
   * A spiller that closes its own task's pool from inside Spark's spill, on the thread whose
   * tryGrow asked Spark, is refused (no deadlock, nothing closed); the tryGrow then completes and
   * the accounting stays exact.
   */
  @Test
  void closeFromASpillerOnTheCallingThreadIsRefusedWithoutDeadlock() throws Exception {
    AtomicReference<RuntimeException> refused = new AtomicReference<>();
    Reservation spilly =
        poolA.newReservation(
            "spilly",
            true,
            target -> {
              try {
                poolA.close();
              } catch (IllegalStateException e) {
                refused.set(e);
              }
              return 0;
            });
    // Spark has nothing left, so it asks A's consumer to spill, which runs the spiller.
    assertFalse(spilly.tryGrow(8 * MIB), "Spark had nothing to give");

    RuntimeException e = refused.get();
    assertNotNull(e, "the spiller ran and tried to close the pool");
    assertTrue(
        e.getMessage().startsWith("nativepool: pool of task " + TASK_A + " is in use by "),
        e.getMessage());
    assertTrue(e.getMessage().endsWith(" native call(s); close refused"), e.getMessage());
    assertFalse(poolA.isClosed(), "a refused close closes nothing: the pool");
    assertFalse(a.isClosed() || spilly.isClosed(), "a refused close closes nothing: reservations");
    assertEquals(64 * MIB, a.size());
    PoolStats s = poolA.stats();
    assertEquals(tmmA.getMemoryConsumptionForThisTask(), s.held(), s::toString);
    assertEquals(s.held(), upA.used(), s::toString);
    assertTrue(spilly.tryGrow(0));
  }
}
