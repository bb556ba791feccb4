package org.nativepool.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.memory.TaskMemoryManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.PoolStats;
import org.nativepool.spark.jni.ProcessStats;
import org.nativepool.spark.testing.SparkMemory;
import org.nativepool.spark.testing.SparkTestConsumer;

/**
 * A native spiller that grows its own pool from inside its spill, under Spark's real {@code
 * TaskMemoryManager}. A 16 MiB off-heap executor, 1 MiB chunks: the spiller's consumer holds 12
 * MiB, and a Spark-side consumer of the same task asks for 12 MiB. Spark spills the native pool;
 * the spiller's {@code tryGrow(4 MiB)} finds the task at its cap, and Spark spills the native pool
 * again from inside that grow, on the same thread. That nested spill must answer 0 at once: before,
 * it ran the same spiller again until the thread's stack overflowed (58 levels on fair_unified, 888
 * on greedy_unified). Now the nested grow is refused, the spiller frees what it holds, and the
 * Spark-side consumer gets its 12 MiB, with Spark's and the pool's books equal.
 */
@Timeout(60)
class SpillerGrowingItsOwnPoolTest {
  private static final long MIB = SparkMemory.MIB;

  private SparkMemory spark;
  private TaskMemoryManager tmm;
  private SparkTaskUpstream up;
  private TaskPool pool;
  private SparkTestConsumer sparkSide;

  @BeforeAll
  static void loadLibrary() {
    Natives.ensureLoaded();
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

  @ParameterizedTest(name = "{0}, local slack {1}")
  @CsvSource({"FAIR_UNIFIED, 0", "FAIR_UNIFIED, 65536", "GREEDY_UNIFIED, 0", "GREEDY_UNIFIED, 65536"})
  void aNestedSpillOfTheSamePoolAnswersZeroAndTheGrowIsRefused(PoolKind kind, long localSlack) {
    long task = 900 + kind.ordinal() * 10 + (localSlack > 0 ? 1 : 0);
    spark = new SparkMemory(16 * MIB, 1);
    tmm = spark.task(task);
    up = new SparkTaskUpstream(tmm, task);
    pool = TaskPool.open(up, task, kind, kind == PoolKind.FAIR_UNIFIED ? 16 * MIB : 0, MIB);
    pool.setReservationSlack(localSlack);

    AtomicReference<Reservation> self = new AtomicReference<>();
    AtomicInteger spills = new AtomicInteger();
    AtomicReference<Boolean> nestedGrow = new AtomicReference<>();
    Reservation grower =
        pool.newReservation(
            "grower",
            true,
            target -> {
              spills.incrementAndGet();
              Reservation r = self.get();
              nestedGrow.set(r.tryGrow(4 * MIB)); // grows its own pool from inside its spill
              long n = r.size();
              r.shrink(n);
              return n;
            });
    self.set(grower);
    assertTrue(grower.tryGrow(12 * MIB), grower::lastRefusal);

    sparkSide = new SparkTestConsumer(tmm, "jvm", false);
    long got = sparkSide.take(12 * MIB); // a StackOverflowError would surface here

    assertEquals(12 * MIB, got, "the Spark-side consumer gets what it asked for");
    assertFalse(nestedGrow.get(), "the nested grow is refused, not served by spilling itself");
    assertEquals(1, spills.get(), "the spiller ran once");
    assertEquals(0, grower.size());
    PoolStats s = pool.stats();
    assertTrue(s.spillReentries() >= 1, s::toString);
    assertEquals(s.held(), up.used(), s::toString);
    assertEquals(sparkSide.getUsed() + s.held(), tmm.getMemoryConsumptionForThisTask(), s::toString);
    ProcessStats ps = Natives.processStats();
    assertTrue(ps.spillReentries() >= s.spillReentries(), ps::toString);

    grower.close();
  }
}
