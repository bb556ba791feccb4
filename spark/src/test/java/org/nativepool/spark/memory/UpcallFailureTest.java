package org.nativepool.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.memory.TaskMemoryManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.PoolStat;
import org.nativepool.spark.jni.PoolStats;
import org.nativepool.spark.jni.Upstream;
import org.nativepool.spark.testing.SparkMemory;
import org.nativepool.spark.testing.SparkTestConsumer;

/**
 * A Java exception thrown inside an upcall comes back out of the native call that caused it as the
 * original throwable (same instance), and the accounting on both sides stays equal.
 */
class UpcallFailureTest {
  private static final long MIB = SparkMemory.MIB;

  /** A distinct exception type, so that nothing else can be mistaken for it. */
  static final class UpcallBoom extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UpcallBoom(String message) {
      super(message);
    }
  }

  /** An upstream that grants from a counter and can be told to throw. */
  static final class ScriptedUpstream implements Upstream {
    final AtomicLong held = new AtomicLong();
    volatile RuntimeException throwOnAcquire;
    volatile RuntimeException throwOnRelease;

    @Override
    public long acquireMemory(long n) {
      RuntimeException e = throwOnAcquire;
      if (e != null) {
        throw e;
      }
      held.addAndGet(n);
      return n;
    }

    @Override
    public void releaseMemory(long n) {
      RuntimeException e = throwOnRelease;
      if (e != null) {
        throw e;
      }
      held.addAndGet(-n);
    }
  }

  private long poolHandle;
  private SparkMemory spark;
  private SparkTaskUpstream up;
  private TaskPool pool;
  private SparkTestConsumer sparkSide;

  @BeforeAll
  static void loadLibrary() {
    Natives.ensureLoaded();
  }

  @AfterEach
  void tearDown() {
    if (poolHandle != 0) {
      Natives.closePool(poolHandle);
    }
    if (sparkSide != null) {
      sparkSide.giveAll();
    }
    if (pool != null) {
      pool.close();
    }
    if (up != null) {
      up.close();
    }
    if (spark != null) {
      assertEquals(0, spark.cleanUp());
    }
  }

  @Test
  void exceptionThrownByAcquireMemoryIsRethrownByTryGrowAndGrowUnchanged() {
    ScriptedUpstream scripted = new ScriptedUpstream();
    poolHandle = Natives.openPool(800, PoolKind.GREEDY_UNIFIED.code(), 0, 0, scripted);
    long res = Natives.newReservation(poolHandle, "victim", false, null);
    assertEquals(null, Natives.tryGrow(res, MIB));
    UpcallBoom boom = new UpcallBoom("upstream is down");
    scripted.throwOnAcquire = boom;

    UpcallBoom thrown = assertThrows(UpcallBoom.class, () -> Natives.tryGrow(res, MIB));
    assertSame(boom, thrown, "the original throwable, not a copy");
    assertEquals(MIB, Natives.size(res), "reservation unchanged after the failed tryGrow");
    long[] s = Natives.poolStats(poolHandle).toArray();
    assertEquals(MIB, s[PoolStat.HELD.ordinal()]);
    assertEquals(scripted.held.get(), s[PoolStat.HELD.ordinal()]);

    scripted.throwOnAcquire = null;
    assertEquals(null, Natives.tryGrow(res, MIB), "the pool still works");
    assertEquals(2 * MIB, Natives.size(res));
    Natives.closeReservation(res);
    assertEquals(0, scripted.held.get());
  }

  @Test
  void exceptionThrownByReleaseMemoryIsRethrownByShrink() {
    ScriptedUpstream scripted = new ScriptedUpstream();
    poolHandle = Natives.openPool(802, PoolKind.GREEDY_UNIFIED.code(), 0, 0, scripted);
    long res = Natives.newReservation(poolHandle, "victim", false, null);
    assertEquals(null, Natives.tryGrow(res, 2 * MIB));
    UpcallBoom boom = new UpcallBoom("cannot release");
    scripted.throwOnRelease = boom;

    UpcallBoom thrown = assertThrows(UpcallBoom.class, () -> Natives.shrink(res, MIB));

    assertSame(boom, thrown, "the original throwable, not a copy");
    long[] s = Natives.poolStats(poolHandle).toArray();
    assertEquals(
        scripted.held.get(), s[PoolStat.HELD.ordinal()], "HELD equals what upstream holds");
    scripted.throwOnRelease = null;
    Natives.closeReservation(res);
    Natives.closePool(poolHandle);
    poolHandle = 0;
    assertEquals(0, scripted.held.get(), "everything went back once releases worked again");
  }

  @Test
  void exceptionThrownByASpillerPropagatesOutOfSparksAcquireUnchanged() {
    spark = new SparkMemory(64 * MIB, 1);
    TaskMemoryManager tmm = spark.task(801);
    up = new SparkTaskUpstream(tmm, 801);
    pool = TaskPool.open(up, 801, PoolKind.GREEDY_UNIFIED, 0, 0);
    UpcallBoom boom = new UpcallBoom("spill file system full");
    Reservation nat =
        pool.newReservation(
            "failing-spiller",
            true,
            target -> {
              throw boom;
            });
    assertTrue(nat.tryGrow(60 * MIB), nat::lastRefusal);
    sparkSide = new SparkTestConsumer(tmm, "spark-side", false);

    UpcallBoom thrown = assertThrows(UpcallBoom.class, () -> sparkSide.take(32 * MIB));

    assertSame(boom, thrown, "the spiller's throwable, through reclaim0 and Spark");
    assertEquals(60 * MIB, nat.size(), "the failed spill freed nothing");
    PoolStats s = pool.stats();
    assertEquals(s.held(), up.used(), s::toString);
    assertEquals(60 * MIB, s.held(), s::toString);
    assertEquals(0, s.spillBytesFreed(), s::toString);
    assertTrue(s.spillerFailures() >= 1, s::toString);
    // Spark's own loss, not ours: TaskMemoryManager.acquireExecutionMemory had granted the 4 MiB
    // that were free before it called spill(); when spill() throws, that partial grant belongs to
    // no consumer, and only Spark's end-of-task cleanup releases it.
    assertEquals(0, sparkSide.getUsed());
    assertEquals(64 * MIB, tmm.getMemoryConsumptionForThisTask(), s::toString);
    pool.close();
    up.close();
    assertEquals(4 * MIB, spark.cleanUp(), "Spark's orphaned partial grant");
    spark = null;
  }
}
