package org.nativepool.spark.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.apache.spark.memory.TaskMemoryManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.testing.SparkMemory;

/**
 * Bad input from Java: random, stale, closed, forged and wrong-type handles and bad sizes, straight
 * into the natives (bypassing the Java wrappers) and through the wrappers. Only
 * IllegalArgumentException or IllegalStateException come back, the JVM survives, and the
 * accounting of the valid handles does not move.
 */
class BadInputTest {
  private static final long MIB = SparkMemory.MIB;
  private static final long TASK = 600;
  private static final int CALLS = 10_000;

  private SparkMemory spark;
  private TaskMemoryManager tmm;
  private SparkTaskUpstream up;
  private TaskPool pool;
  private Reservation r1;
  private Reservation r2;

  /** Handles that were valid once and are closed now. */
  private final List<Long> stalePools = new ArrayList<>();

  private final List<Long> staleReservations = new ArrayList<>();

  @BeforeAll
  static void loadLibrary() {
    Natives.ensureLoaded();
  }

  @BeforeEach
  void setUp() {
    spark = new SparkMemory(64 * MIB, 1);
    tmm = spark.task(TASK);
    up = new SparkTaskUpstream(tmm, TASK);
    pool = TaskPool.open(up, TASK, PoolKind.FAIR_UNIFIED, 64 * MIB, 1 * MIB);
    // These tests are about the Go side's validation: every call crosses (no local slack).
    pool.setReservationSlack(0);
    r1 = pool.newReservation("r1", true, null);
    r2 = pool.newReservation("r2", false, null);
    r1.grow(3 * MIB + 5);
    assertTrue(r2.tryGrow(MIB + 7), r2::lastRefusal);
    // Stale handles: a closed reservation, and the pool of a task that completed.
    Reservation gone = pool.newReservation("gone", false, null);
    gone.grow(100);
    staleReservations.add(gone.handle());
    gone.close();
    TaskMemoryManager otherTmm = spark.task(TASK + 1);
    try (SparkTaskUpstream otherUp = new SparkTaskUpstream(otherTmm, TASK + 1)) {
      TaskPool other = TaskPool.open(otherUp, TASK + 1, PoolKind.GREEDY_UNIFIED, 0, 0);
      Reservation or = other.newReservation("other", false, null);
      or.grow(10);
      staleReservations.add(or.handle());
      stalePools.add(other.handle());
      other.close();
    }
  }

  @AfterEach
  void tearDown() {
    pool.close();
    up.close();
    assertEquals(0, spark.cleanUp());
  }

  /** One bad call; each must throw IllegalArgumentException or IllegalStateException. */
  private interface BadCall {
    void run();
  }

  /**
   * Asserts that {@code call} throws IllegalArgumentException or IllegalStateException with a
   * message: a handle failure names the library ("nativepool: …"), a size failure carries the Go
   * pool's message (e.g. "pool: Grow(-1): negative size: invalid size").
   */
  private static void assertRejected(BadCall call, String what) {
    try {
      call.run();
    } catch (IllegalArgumentException | IllegalStateException e) {
      String m = e.getMessage();
      if (m == null
          || !(m.startsWith("nativepool: ")
              || m.startsWith("pool: ")
              || m.endsWith(": invalid size"))) {
        fail(what + ": unexpected message: " + m, e);
      }
      return;
    } catch (Throwable t) {
      fail(what + ": threw " + t, t);
    }
    fail(what + ": accepted");
  }

  /** A handle value that is not one of the live handles of this test. */
  private long badHandle(SplittableRandom rnd, Set<Long> live) {
    for (; ; ) {
      long h;
      switch (rnd.nextInt(8)) {
        case 0:
          h = 0;
          break;
        case 1:
          h = rnd.nextBoolean() ? -1 : (rnd.nextBoolean() ? Long.MIN_VALUE : Long.MAX_VALUE);
          break;
        case 2:
          h = rnd.nextLong();
          break;
        case 3: // near a live handle: another slot or generation
          h = pool.handle() + (rnd.nextBoolean() ? 1 : -1) * (1 + rnd.nextLong(4));
          break;
        case 4:
          h = r1.handle() ^ (1L << rnd.nextInt(64));
          break;
        case 5:
          h = stalePools.get(rnd.nextInt(stalePools.size()));
          break;
        case 6:
          h = staleReservations.get(rnd.nextInt(staleReservations.size()));
          break;
        default:
          h = rnd.nextLong(1 << 16);
          break;
      }
      if (!live.contains(h)) {
        return h;
      }
    }
  }

  private static long anySize(SplittableRandom rnd) {
    switch (rnd.nextInt(4)) {
      case 0:
        return -1 - rnd.nextLong(Long.MAX_VALUE);
      case 1:
        return rnd.nextLong(1 << 20);
      case 2:
        return Long.MAX_VALUE;
      default:
        return 0;
    }
  }

  private static long negativeSize(SplittableRandom rnd) {
    return rnd.nextBoolean() ? -1 : Long.MIN_VALUE + rnd.nextLong(1 << 20);
  }

  @Test
  void randomBadHandlesAndSizesOnlyThrowIllegalArgumentOrIllegalState() {
    // Rerun a failure with -Dnativepool.test.seed=<the logged seed>.
    long seed = Long.getLong("nativepool.test.seed", System.nanoTime());
    System.out.println("BadInputTest seed=" + seed);
    SplittableRandom rnd = new SplittableRandom(seed);
    Set<Long> live = new HashSet<>(List.of(pool.handle(), r1.handle(), r2.handle()));
    long[] statsBefore = pool.stats().toArray();
    long r1Before = r1.size();
    long r2Before = r2.size();
    long sparkBefore = tmm.getMemoryConsumptionForThisTask();

    for (int i = 0; i < CALLS; i++) {
      long bad = badHandle(rnd, live);
      long n = anySize(rnd);
      long neg = negativeSize(rnd);
      String what = "seed " + seed + " call " + i;
      switch (rnd.nextInt(16)) {
        case 0:
          assertRejected(() -> Natives.tryGrow(bad, n), what + " tryGrow0(" + bad + ")");
          break;
        case 1:
          assertRejected(() -> Natives.grow(bad, n), what + " grow0(" + bad + ")");
          break;
        case 2:
          assertRejected(() -> Natives.shrink(bad, n), what + " shrink0(" + bad + ")");
          break;
        case 3:
          assertRejected(() -> Natives.closeReservation(bad), what + " closeReservation0(" + bad + ")");
          break;
        case 4:
          assertRejected(() -> Natives.size(bad), what + " size0(" + bad + ")");
          break;
        case 5:
          assertRejected(
              () -> Natives.closeReservation(bad), what + " closeReservation0(" + bad + ")");
          break;
        case 6:
          assertRejected(() -> Natives.reclaim(bad, n), what + " reclaim0(" + bad + ")");
          break;
        case 7:
          assertRejected(() -> Natives.poolStats(bad).toArray(), what + " poolStats0(" + bad + ")");
          break;
        case 8:
          assertRejected(() -> Natives.closePool(bad), what + " closePool0(" + bad + ")");
          break;
        case 9:
          assertRejected(
              () -> Natives.newReservation(bad, "forged", rnd.nextBoolean(), null),
              what + " newReservation0(" + bad + ")");
          break;
        case 10: // wrong type: a live reservation handle used as a pool, and vice versa
          assertRejected(() -> Natives.poolStats(r1.handle()).toArray(), what + " poolStats0(res)");
          assertRejected(() -> Natives.size(pool.handle()), what + " size0(pool)");
          assertRejected(
              () -> Natives.grow(pool.handle(), 1), what + " grow0(pool handle)");
          break;
        case 11: // valid handle, negative size
          long h = rnd.nextBoolean() ? r1.handle() : r2.handle();
          switch (rnd.nextInt(3)) {
            case 0:
              assertRejected(() -> Natives.tryGrow(h, neg), what + " tryGrow0(" + neg + ")");
              break;
            case 1:
              assertRejected(() -> Natives.grow(h, neg), what + " grow0(" + neg + ")");
              break;
            default:
              assertRejected(() -> Natives.shrink(h, neg), what + " shrink0(" + neg + ")");
              break;
          }
          break;
        case 12: // valid handle, shrink beyond the size
          long over = r1Before + 1 + rnd.nextLong(MIB);
          assertRejected(() -> Natives.shrink(r1.handle(), over), what + " shrink0 beyond");
          break;
        case 13:
          assertRejected(
              () -> Natives.reclaim(pool.handle(), neg), what + " reclaim0(" + neg + ")");
          break;
        case 14: // the Java wrappers validate before crossing
          assertRejected(() -> r1.tryGrow(neg), what + " tryGrow(" + neg + ")");
          assertRejected(() -> r2.shrink(neg), what + " shrink(" + neg + ")");
          assertRejected(() -> pool.reclaim(neg), what + " reclaim(" + neg + ")");
          break;
        default: // a bad pool kind or size for a new pool of a fresh task
          long fresh = TASK + 1000 + i;
          assertRejected(
              () ->
                  Natives.openPool(fresh, 2 + rnd.nextInt(100), 0, 0, up),
              what + " openPool0(bad kind)");
          assertRejected(
              () -> Natives.openPool(fresh, 0, neg, 0, up),
              what + " openPool0(negative size)");
          assertRejected(
              () -> Natives.openPool(fresh, 1, 0, neg, up),
              what + " openPool0(negative chunk)");
          break;
      }
    }

    assertArrayEquals(statsBefore, pool.stats().toArray(), "valid pool's figures moved");
    assertEquals(r1Before, r1.size());
    assertEquals(r2Before, r2.size());
    assertEquals(sparkBefore, tmm.getMemoryConsumptionForThisTask());
    assertEquals(sparkBefore, up.used());
    // The valid handles still work.
    r1.shrink(5);
    assertTrue(r2.tryGrow(5), r2::lastRefusal);
  }

  @Test
  void secondCloseOfAPoolHandleIsIllegalState() {
    long h = stalePools.get(0);
    IllegalStateException e =
        assertThrows(IllegalStateException.class, () -> Natives.closePool(h));
    assertTrue(e.getMessage().startsWith("nativepool: "), e.getMessage());
  }

  @Test
  void zeroHandleIsIllegalArgument() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> Natives.size(0));
    assertTrue(e.getMessage().startsWith("nativepool: invalid "), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Natives.poolStats(0).toArray());
    assertTrue(e.getMessage().startsWith("nativepool: invalid "), e.getMessage());
  }

  @Test
  void reservationHandleUsedAsAPoolIsIllegalArgument() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> Natives.poolStats(r1.handle()).toArray());
    assertTrue(e.getMessage().startsWith("nativepool: invalid pool handle 0x"), e.getMessage());
  }

  @Test
  void closedReservationIsRejectedByJavaWithoutCrossing() {
    Reservation r = pool.newReservation("short-lived", false, null);
    r.close();
    r.close(); // idempotent
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> r.tryGrow(1));
    assertEquals("nativepool: reservation 'short-lived' is closed", e.getMessage());
    e = assertThrows(IllegalStateException.class, r::size);
    assertEquals("nativepool: reservation 'short-lived' is closed", e.getMessage());
    IllegalArgumentException iae = assertThrows(IllegalArgumentException.class, () -> r.grow(-3));
    assertEquals("nativepool: reservation 'short-lived' grow(-3): negative size", iae.getMessage());
  }

  @Test
  void shrinkBeyondTheSizeIsIllegalArgumentAndChangesNothing() {
    long before = r1.size();
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> r1.shrink(before + 1));
    assertEquals(
        "Cannot free the capacity "
            + (before + 1)
            + " out of allocated size "
            + before
            + ": invalid size",
        e.getMessage());
    assertEquals(before, r1.size());
  }

  @Test
  void refusedTryGrowOrThrowCarriesThePoolsMessage() {
    // fair_unified, 64 MiB pool, 1 spillable consumer (r1): the limit is the whole pool.
    MemoryExhaustedException e =
        assertThrows(MemoryExhaustedException.class, () -> r1.tryGrowOrThrow(1L << 40));
    assertEquals("r1", e.consumerName());
    assertEquals(1L << 40, e.requested());
    assertEquals(r1.lastRefusal(), e.getMessage());
    assertTrue(e.getMessage().contains("Failed to acquire"), e.getMessage());
  }

  /** A negative spill report is an IllegalArgumentException, and nothing is counted. */
  @Test
  void aNegativeSpillReportIsRefusedAndCountsNothing() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> pool.reportSpill(-1, 10));
    assertTrue(e.getMessage().contains("negative size"), e::getMessage);
    assertThrows(IllegalArgumentException.class, () -> pool.reportSpill(10, -1));
    assertEquals(0, up.memoryBytesSpilled());
    assertEquals(0, up.diskBytesSpilled());
  }
}
