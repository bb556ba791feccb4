package org.nativepool.spark.arrow;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.RootAllocator;
import org.apache.spark.SparkConf;
import org.apache.spark.memory.MemoryConsumer;
import org.apache.spark.memory.TaskMemoryManager;
import org.apache.spark.memory.UnifiedMemoryManager;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.PoolStats;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.memory.SparkTaskUpstream;
import org.nativepool.spark.memory.TaskPool;

/**
 * Arrow Java's {@code AllocationListener} contract: {@code onRelease} must not throw. A buffer
 * closed while Spark's {@code releaseExecutionMemory} throws (Spark's real memory managers, with
 * a task memory manager that fails its releases on demand) closes without an exception, the
 * listener's charge drops with the buffer, the failure is counted, and once Spark releases again
 * every byte goes back: the pool owed the failed release and its close hands it back.
 */
class PoolAllocationListenerTest {
  private static final long MIB = 1L << 20;

  /** Spark's TaskMemoryManager, whose releases throw while {@link #failReleases} is set. */
  static final class FailingReleases extends TaskMemoryManager {
    volatile boolean failReleases;

    FailingReleases(UnifiedMemoryManager umm, long taskAttemptId) {
      super(umm, taskAttemptId);
    }

    @Override
    public void releaseExecutionMemory(long size, MemoryConsumer consumer) {
      if (failReleases) {
        throw new RuntimeException("spark: release failed");
      }
      super.releaseExecutionMemory(size, consumer);
    }
  }

  @BeforeAll
  static void load() {
    Natives.ensureLoaded();
  }

  @ParameterizedTest(name = "chunk={0}")
  @ValueSource(longs = {0L, 1L << 20})
  void aReleaseWhoseShrinkThrowsDoesNotEscapeArrowAndTheChargeDrops(long chunk) {
    SparkConf conf =
        new SparkConf(false)
            .set("spark.memory.offHeap.enabled", "true")
            .set("spark.memory.offHeap.size", Long.toString(64 * MIB));
    UnifiedMemoryManager umm = new UnifiedMemoryManager(conf, 256 * MIB, 128 * MIB, 1);
    long id = 1500 + chunk;
    FailingReleases tmm = new FailingReleases(umm, id);
    SparkTaskUpstream up = new SparkTaskUpstream(tmm, id);
    TaskPool pool = TaskPool.open(up, id, PoolKind.GREEDY_UNIFIED, 0, chunk);
    pool.setReservationSlack(0); // every shrink crosses into Go (and, exact, on to Spark)
    Reservation res = pool.newReservation("java-arrow", false, null);
    PoolAllocationListener listener = new PoolAllocationListener(res);
    try (RootAllocator alloc = new RootAllocator(listener, Long.MAX_VALUE)) {
      ArrowBuf big = alloc.buffer(24 * MIB);
      assertEquals(24 * MIB, listener.charged());

      tmm.failReleases = true;
      assertDoesNotThrow(big::close, "onRelease must not throw");
      tmm.failReleases = false;

      assertEquals(0, listener.charged(), "the charge dropped with the buffer");
      assertEquals(0, alloc.getAllocatedMemory());
      assertEquals(0, res.size());
      PoolStats s = pool.stats();
      assertEquals(s.held(), up.used(), "Spark's figure and the pool's agree: " + s);
      assertEquals(s.held(), tmm.getMemoryConsumptionForThisTask(), s::toString);
      if (chunk == 0) {
        assertEquals(1, listener.releaseFailures(), "the failed release was counted");
      }
    }
    res.close();
    pool.close();
    up.close();
    assertEquals(0, tmm.getMemoryConsumptionForThisTask(), "every byte went back to Spark");
    assertEquals(0, tmm.cleanUpAllAllocatedMemory());
    assertTrue(listener.lateReleases() == 0);
  }
}
