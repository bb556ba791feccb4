package org.nativepool.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.memory.TaskMemoryManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.PoolStats;
import org.nativepool.spark.testing.SparkMemory;
import org.nativepool.spark.testing.SparkTestConsumer;

/**
 * Spills in both directions inside one task, on Spark's real {@code TaskMemoryManager}: Spark
 * makes a native consumer spill for a Spark-side consumer, and a native grow makes Spark spill a
 * Spark-side consumer.
 */
class SpillAcrossTheBridgeTest {
  private static final long MIB = SparkMemory.MIB;
  private static final long TASK = 400;

  private SparkMemory spark;
  private TaskMemoryManager tmm;
  private SparkTaskUpstream up;
  private TaskPool pool;
  private SparkTestConsumer sparkSide;

  @BeforeAll
  static void loadLibrary() {
    Natives.ensureLoaded();
  }

  private void open(long chunk) {
    spark = new SparkMemory(64 * MIB, 1);
    tmm = spark.task(TASK + chunk);
    up = new SparkTaskUpstream(tmm, TASK + chunk);
    pool = TaskPool.open(up, TASK + chunk, PoolKind.GREEDY_UNIFIED, 0, chunk);
  }

  @AfterEach
  void tearDown() {
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
      assertEquals(0, spark.cleanUp(), "Spark still held bytes after the test");
    }
  }

  private void assertTaskAccountingExact() {
    PoolStats s = pool.stats();
    long sparkUsed = sparkSide == null ? 0 : sparkSide.getUsed();
    assertEquals(s.held(), up.used(), s::toString);
    assertEquals(sparkUsed + s.held(), tmm.getMemoryConsumptionForThisTask(), s::toString);
  }

  /**
   * A Spark-side OFF_HEAP consumer asks for memory the native pool holds: Spark calls our
   * consumer's spill(), the pool's reclaim runs the native consumer's spiller (which shrinks its
   * reservation), the bytes go back to Spark, and the Spark-side consumer gets them.
   */
  @ParameterizedTest(name = "chunk={0}")
  @ValueSource(longs = {0L, 8L << 20})
  void sparkConsumerGetsMemoryBySpillingANativeSpillableConsumer(long chunk) {
    open(chunk);
    AtomicReference<Reservation> self = new AtomicReference<>();
    AtomicInteger spills = new AtomicInteger();
    Reservation nat =
        pool.newReservation(
            "native-sort",
            true,
            target -> {
              spills.incrementAndGet();
              Reservation r = self.get();
              long freed = r.size();
              r.shrink(freed); // spill everything, as a sorter writing a run to disk
              return freed;
            });
    self.set(nat);
    assertTrue(nat.tryGrow(60 * MIB), nat::lastRefusal);
    assertTaskAccountingExact();
    long heldBefore = pool.stats().held();
    assertTrue(heldBefore >= 60 * MIB);

    sparkSide = new SparkTestConsumer(tmm, "spark-sort", false);
    long got = sparkSide.take(32 * MIB);

    assertEquals(32 * MIB, got, "the Spark-side consumer gets what it asked for");
    assertEquals(0, nat.size(), "the native consumer spilled everything");
    PoolStats s = pool.stats();
    assertEquals(heldBefore - s.held(), s.spillBytesFreed(), s::toString);
    if (chunk == 0) {
      // Exact mode holds no slack: one spill request, answered by the spiller, all 60 MiB.
      assertEquals(1, spills.get(), "the native spiller ran once");
      assertEquals(1, s.spillRequests(), s::toString);
      assertEquals(60 * MIB, s.spillBytesFreed(), s::toString);
    } else {
      // Chunked: slack goes first, then the spiller; Spark may ask more than once.
      assertTrue(spills.get() >= 1, "the native spiller ran");
      assertTrue(s.spillRequests() >= 1, s::toString);
      assertTrue(s.spillBytesFreed() >= 32 * MIB, s::toString);
    }
    assertTaskAccountingExact();
  }

  /**
   * The reverse: a native tryGrow that Spark cannot grant from free memory makes Spark spill a
   * Spark-side spillable consumer of the same task, then succeeds.
   */
  @ParameterizedTest(name = "chunk={0}")
  @ValueSource(longs = {0L, 8L << 20})
  void nativeTryGrowSucceedsBySpillingASparkSideConsumer(long chunk) {
    open(chunk);
    sparkSide = new SparkTestConsumer(tmm, "spark-hash-agg", true);
    assertEquals(60 * MIB, sparkSide.take(60 * MIB));
    Reservation nat = pool.newReservation("native-join", false, null);

    assertTrue(nat.tryGrow(32 * MIB), nat::lastRefusal);

    assertEquals(32 * MIB, nat.size());
    assertEquals(1, sparkSide.spillCalls.get(), "Spark spilled the Spark-side consumer once");
    assertEquals(60 * MIB, sparkSide.spilledBytes.get());
    assertEquals(0, sparkSide.getUsed());
    PoolStats s = pool.stats();
    assertEquals(0, s.spillRequests(), "nobody asked the native pool to spill: " + s);
    assertTaskAccountingExact();
  }
}
