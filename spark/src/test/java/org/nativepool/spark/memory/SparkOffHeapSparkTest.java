package org.nativepool.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.comet.testing.CometTestConsumer;
import org.apache.spark.SparkEnv;
import org.apache.spark.memory.MemoryManager;
import org.apache.spark.memory.TaskMemoryManager;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.testing.LocalSpark;
import org.nativepool.spark.testing.SparkTestConsumer;

/**
 * The pod guard's hold on Spark's off-heap memory ({@link SparkOffHeap}) over Spark's own {@code
 * UnifiedMemoryManager} (a local SparkContext's, with its memory store), with real {@code
 * TaskMemoryManager}s and consumers: it takes only what is free, never so much that the consumers
 * keep less than the floor between them; no acquire of Spark's execution memory can take it back
 * (on Spark 4.x, whose memory store is made on first use, not even before any job ran); it goes
 * back whole, and wakes a task waiting in Spark's 1/2N wait. The session runs no job before the
 * tests, so that the memory store is made by the hold, as it is on an executor whose first task has
 * not started yet.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class SparkOffHeapSparkTest {
  private static final long MIB = 1L << 20;
  private static final long OFF_HEAP = 64 * MIB;
  private static final long FLOOR = 8 * MIB;

  private static SparkSession spark;
  private MemoryManager mm;
  private SparkOffHeap hold;

  @BeforeAll
  static void startSpark() {
    spark = LocalSpark.builder("local[2]", "SparkOffHeapSparkTest", Long.toString(OFF_HEAP)).getOrCreate();
  }

  @AfterAll
  static void stopSpark() {
    LocalSpark.stop(spark);
  }

  @BeforeEach
  void hold() {
    mm = SparkEnv.get().memoryManager();
    hold = new SparkOffHeap(SparkEnv.get(), FLOOR);
    assertEquals(0, mm.offHeapExecutionMemoryUsed());
    assertEquals(0, mm.offHeapStorageMemoryUsed());
  }

  @AfterEach
  void handBack() {
    long held = hold.held();
    if (held > 0) {
      hold.giveBack(held);
    }
  }

  @Test
  void itTakesOnlyWhatIsFreeAboveTheFloorAndNoAcquireTakesItBack() {
    TaskMemoryManager tmm = new TaskMemoryManager(mm, 9001);
    SparkTestConsumer sort = new SparkTestConsumer(tmm, "sort", true);
    try {
      assertEquals(20 * MIB, sort.take(20 * MIB));
      assertEquals(44 * MIB, hold.free());
      assertEquals(10 * MIB, hold.take(10 * MIB, 0), "what was asked, while free");
      assertEquals(34 * MIB, hold.take(1L << 40, 0), "then everything free: the sort holds 20 MiB");
      assertEquals(44 * MIB, hold.held());
      assertEquals(44 * MIB, mm.offHeapStorageMemoryUsed(), "held as off-heap storage memory");
      assertEquals(0, hold.take(MIB, 0), "nothing is free");
      assertEquals(0, hold.free());

      // A consumer that wants more meets no room and spills itself, on this thread, as a Tungsten
      // sorter does: Spark cannot evict the held block for it.
      assertEquals(MIB, sort.take(MIB));
      assertEquals(1, sort.spillCalls.get());
      assertEquals(20 * MIB, sort.spilledBytes.get());
      assertEquals(44 * MIB, mm.offHeapStorageMemoryUsed(), "no acquire took the hold back");

      // What the consumers gave up is held too, but never so much that they keep less than the
      // floor between them.
      assertEquals(12 * MIB, hold.take(1L << 40, 0), "down to the 8 MiB floor, 1 of it the sort's");
      assertEquals(56 * MIB, hold.held());
      assertEquals(7 * MIB, hold.free(), "the floor's rest is free for the consumers");
      assertEquals(7 * MIB, sort.take(7 * MIB));
    } finally {
      sort.giveAll();
      tmm.cleanUpAllAllocatedMemory();
    }
  }

  @Test
  void itTakesNothingWhileATaskHoldsMemoryThroughAnEngineThatFailsOnAShortGrant() {
    SparkConsumers consumers = new SparkConsumers();
    SparkOffHeap guarded = new SparkOffHeap(SparkEnv.get(), FLOOR, consumers);
    TaskMemoryManager tmm = new TaskMemoryManager(mm, 9004);
    SparkTestConsumer sort = new SparkTestConsumer(tmm, "sort", true);
    CometTestConsumer comet = new CometTestConsumer(tmm);
    consumers.track(9004, tmm);
    try {
      assertEquals(4 * MIB, sort.take(4 * MIB));
      assertEquals(8 * MIB, guarded.take(8 * MIB, 0), "beside Spark's own consumers: held");
      guarded.giveBack(8 * MIB);

      // Comet's consumer holds memory: a short grant would fail its task (its merge cannot
      // spill), so nothing is taken, and it keeps getting what it asks while there is room.
      assertEquals(16 * MIB, comet.take(16 * MIB));
      assertEquals(0, guarded.take(8 * MIB, 0), "nothing held while Comet's consumer holds memory");
      assertEquals(0, guarded.held());
      assertEquals(0, mm.offHeapStorageMemoryUsed());
      assertEquals(40 * MIB, comet.take(40 * MIB), "everything free is still Comet's to take");

      comet.giveAll();
      assertEquals(8 * MIB, guarded.take(8 * MIB, 0), "once it holds nothing, held again");
    } finally {
      if (guarded.held() > 0) {
        guarded.giveBack(guarded.held());
      }
      comet.giveAll();
      sort.giveAll();
      consumers.untrack(9004);
      tmm.cleanUpAllAllocatedMemory();
    }
  }

  @Test
  void handingBackMoreThanHeldIsRefusedAndChangesNothing() {
    assertEquals(4 * MIB, hold.take(4 * MIB, 0));
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> hold.giveBack(5 * MIB));
    assertTrue(e.getMessage().contains("holds 4.0 MiB"), e.getMessage());
    assertThrows(IllegalStateException.class, () -> hold.giveBack(0));
    assertThrows(IllegalArgumentException.class, () -> hold.take(0, 0));
    assertEquals(4 * MIB, hold.held());
    assertEquals(4 * MIB, mm.offHeapStorageMemoryUsed());
    hold.giveBack(4 * MIB);
    assertEquals(0, mm.offHeapStorageMemoryUsed());
    assertEquals(OFF_HEAP, hold.free());
  }

  @Test
  void handingBackWakesATaskWaitingForItsShare() throws Exception {
    // Two tasks: the second holds nothing and waits in Spark's 1/2N wait while the hold and the
    // first task leave nothing free; the hold going back wakes it.
    TaskMemoryManager first = new TaskMemoryManager(mm, 9002);
    TaskMemoryManager second = new TaskMemoryManager(mm, 9003);
    SparkTestConsumer a = new SparkTestConsumer(first, "a", false);
    SparkTestConsumer b = new SparkTestConsumer(second, "b", false);
    try {
      assertEquals(8 * MIB, a.take(8 * MIB));
      assertEquals(56 * MIB, hold.take(1L << 40, 0), "all but the floor, which task a holds");
      CompletableFuture<Long> waiting = CompletableFuture.supplyAsync(() -> b.take(4 * MIB));
      Thread.sleep(300);
      assertTrue(!waiting.isDone(), "task b waits for its share");
      hold.giveBack(56 * MIB);
      assertEquals(4 * MIB, waiting.get(30, TimeUnit.SECONDS), "woken, and granted");
    } finally {
      a.giveAll();
      b.giveAll();
      first.cleanUpAllAllocatedMemory();
      second.cleanUpAllAllocatedMemory();
    }
  }

  @Test
  void theFloorIsKeptBeyondWhatTheNativePoolsHold() {
    TaskMemoryManager tmm = new TaskMemoryManager(mm, 9004);
    SparkTestConsumer pool = new SparkTestConsumer(tmm, "a native pool", true);
    try {
      assertEquals(20 * MIB, pool.take(20 * MIB));
      assertEquals(
          36 * MIB,
          hold.take(1L << 40, 20 * MIB),
          "the pool's 20 MiB serve no other consumer: the 8 MiB floor is kept beside them");
      assertEquals(8 * MIB, hold.free());
      assertEquals(0, hold.take(MIB, 20 * MIB));
    } finally {
      pool.giveAll();
      tmm.cleanUpAllAllocatedMemory();
    }
  }

  @Test
  void theDefaultFloorIsWhatExecutionKeepsBesideAFullStorageRegion() {
    assertEquals(32 * MIB, SparkOffHeap.defaultFloor(64 * MIB, 0.5, 2 * MIB, 2), "Spark's default");
    assertEquals(16 * MIB, SparkOffHeap.defaultFloor(64 * MIB, 0.75, MIB, 2), "a larger region");
    assertEquals(
        16 * MIB, SparkOffHeap.defaultFloor(64 * MIB, 0.9, 4 * MIB, 2), "two 4 MiB pages a slot");
    assertEquals(64 * MIB, SparkOffHeap.defaultFloor(64 * MIB, 0.1, 64 * MIB, 8), "never all");
    assertEquals(64 * MIB, SparkOffHeap.defaultFloor(64 * MIB, 0, MIB, 2), "no region: nothing");
  }
}
