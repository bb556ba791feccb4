package org.nativepool.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.SparkConf;
import org.apache.spark.memory.MemoryConsumer;
import org.apache.spark.memory.MemoryMode;
import org.apache.spark.memory.TaskMemoryManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.config.PoolSettings;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.PoolStats;
import org.nativepool.spark.testing.SparkMemory;

/**
 * The account-local slack of {@link Reservation} in chunked pools (CockroachDB's {@code
 * BoundAccount} buffer), on Spark's real {@code TaskMemoryManager}: small grows and shrinks stay
 * in Java, the slack stays within {@code 2Q}, rounding never causes a refusal, spills and closes
 * give the slack back, and exact mode is unchanged. Go's view of a reservation is read with
 * {@code size0}, so "no native call" is observed as "the Go reservation did not change".
 */
class ReservationLocalSlackTest {
  private static final long KIB = 1L << 10;
  private static final long MIB = SparkMemory.MIB;
  private static final long Q = 64 * KIB;

  private SparkMemory spark;
  private TaskMemoryManager tmm;
  private SparkTaskUpstream up;
  private TaskPool pool;
  private long task = 1300;

  @BeforeAll
  static void loadLibrary() {
    Natives.ensureLoaded();
  }

  @AfterEach
  void tearDown() {
    if (pool != null) {
      pool.close();
    }
    if (up != null) {
      up.close();
    }
    if (spark != null) {
      assertEquals(0, spark.cleanUp(), "Spark still held bytes for the task after the pool closed");
    }
    pool = null;
    up = null;
    spark = null;
  }

  private void open(PoolKind kind, long poolSize, long chunk, long sparkOffHeap) {
    spark = new SparkMemory(sparkOffHeap, 1);
    tmm = spark.task(++task);
    up = new SparkTaskUpstream(tmm, task);
    pool = TaskPool.open(up, task, kind, poolSize, chunk);
    pool.setReservationSlack(Q);
  }

  private static long goSize(Reservation r) {
    return Natives.size(r.handle());
  }

  /** Java used + local slack = the Go reservation; Spark's figure = HELD = the mirror. */
  private void assertExact(Reservation r, String step) {
    long slack = r.localSlack();
    assertTrue(slack >= 0 && slack <= 2 * r.slackQuantum(), step + ": slack " + slack);
    assertEquals(r.size() + slack, goSize(r), step + ": used + local slack vs size0");
    PoolStats s = pool.stats();
    assertEquals(tmm.getMemoryConsumptionForThisTask(), s.held(), () -> step + ": " + s);
    assertEquals(s.held(), up.used(), () -> step + ": " + s);
  }

  /** A Spark-side consumer whose spill waits for {@link #go} before it frees everything. */
  private static final class BlockingSpillConsumer extends MemoryConsumer {
    final CountDownLatch spilling = new CountDownLatch(1);
    final CountDownLatch go = new CountDownLatch(1);

    BlockingSpillConsumer(TaskMemoryManager tmm) {
      super(tmm, 0L, MemoryMode.OFF_HEAP);
    }

    long take(long n) {
      return acquireMemory(n);
    }

    void giveAll() {
      // getUsed(): MemoryConsumer.used is a long before Spark 4.2, an AtomicLong from 4.2 on
      long held = getUsed();
      if (held > 0) {
        freeMemory(held);
      }
    }

    @Override
    public long spill(long size, MemoryConsumer trigger) throws IOException {
      spilling.countDown();
      try {
        go.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException(e);
      }
      long freed = getUsed();
      freeMemory(freed);
      return freed;
    }
  }

  /**
   * While the task's pool is closing (the task-end close waits for another thread's call, parked
   * in a Spark spill), a grow that must cross and a shrink that must give bytes back are refused,
   * and Java's books still hold what Go holds: the local slack is neither dropped by the refused
   * grow nor by the refused give-back, so {@code used + local slack} equals the Go reservation at
   * every step, and the close returns it all.
   */
  @ParameterizedTest(name = "{0}")
  @EnumSource(PoolKind.class)
  void aPoolThatIsClosingRefusesCrossingsWithoutDroppingTheLocalSlack(PoolKind kind)
      throws Exception {
    open(kind, 64 * MIB, 1 * MIB, 64 * MIB);
    Reservation r = pool.newReservation("r", false, null);
    assertTrue(r.tryGrow(4 * Q + 1000), r::lastRefusal);
    assertExact(r, "before the close");
    assertTrue(r.localSlack() > 0, "a crossing grow left local slack");
    BlockingSpillConsumer sparkSide = new BlockingSpillConsumer(tmm);
    sparkSide.take(60 * MIB);
    Reservation other = pool.newReservation("other", false, null);
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      Future<Boolean> parked = threads.submit(() -> other.tryGrow(16 * MIB));
      assertTrue(sparkSide.spilling.await(30, TimeUnit.SECONDS), "Spark spilled the Java side");
      AtomicReference<Thread> closer = new AtomicReference<>();
      Future<?> closing =
          threads.submit(
              () -> {
                closer.set(Thread.currentThread());
                pool.closeAtTaskEnd();
              });
      awaitInAwaitClosed(closer);

      long slack = r.localSlack();
      long goSize = goSize(r);
      IllegalStateException refused =
          assertThrows(IllegalStateException.class, () -> r.tryGrow(slack + 1));
      assertTrue(refused.getMessage().contains("is closing"), refused::getMessage);
      assertEquals(slack, r.localSlack(), "the refused grow kept the local slack");
      assertEquals(goSize, goSize(r));
      assertEquals(r.size() + r.localSlack(), goSize(r));

      assertThrows(IllegalStateException.class, () -> r.shrink(r.size())); // gives back > 2Q
      assertEquals(0, r.size(), "the shrink happened in Java");
      assertEquals(r.localSlack(), goSize(r), "the bytes it could not give back stayed local");

      sparkSide.go.countDown();
      parked.get(30, TimeUnit.SECONDS);
      closing.get(30, TimeUnit.SECONDS);
      assertTrue(r.isClosed());
      assertEquals(0, r.localSlack(), "the close returned everything");
    } finally {
      sparkSide.go.countDown();
      threads.shutdownNow();
      sparkSide.giveAll();
    }
  }

  /** Waits until {@code closer} waits in {@code CallGuard.awaitClosed} for the call in flight. */
  private static void awaitInAwaitClosed(AtomicReference<Thread> closer)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      Thread t = closer.get();
      if (t != null && t.getState() == Thread.State.WAITING) {
        for (StackTraceElement e : t.getStackTrace()) {
          if (e.getMethodName().equals("awaitClosed")) {
            return;
          }
        }
      }
      Thread.sleep(5);
    }
    throw new AssertionError("the task-end close never waited for the call in flight");
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(PoolKind.class)
  void smallGrowsAndShrinksInsideTheSlackNeverCrossIntoGo(PoolKind kind) {
    open(kind, 256 * MIB, 8 * MIB, 256 * MIB);
    Reservation r = pool.newReservation("small", kind == PoolKind.FAIR_UNIFIED, null);
    assertEquals(Q, r.slackQuantum());

    assertTrue(r.tryGrow(8 * KIB), r::lastRefusal);
    assertEquals(Q, goSize(r), "the first grow asked Go for one quantum");
    assertEquals(8 * KIB, r.size());
    PoolStats before = pool.stats();
    for (int i = 0; i < 10_000; i++) {
      assertTrue(r.tryGrow(8 * KIB), r::lastRefusal);
      r.shrink(8 * KIB);
      r.grow(4 * KIB);
      r.shrink(4 * KIB);
    }
    for (int i = 1; i < 8; i++) {
      assertTrue(r.tryGrow(8 * KIB), r::lastRefusal);
    }
    assertEquals(Q, goSize(r), "40,007 calls inside the slack left the Go reservation alone");
    assertEquals(before, pool.stats(), "and every Go figure (RESERVED, HELD, PEAK, calls)");
    assertEquals(Q, r.size());
    assertEquals(0, r.localSlack());

    assertTrue(r.tryGrow(1), r::lastRefusal);
    assertEquals(2 * Q, goSize(r), "past the slack: one more quantum");
    assertExact(r, "after crossing");
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(PoolKind.class)
  void slackStaysWithinTwoQuantaAndGoEqualsJavaAfterEveryRandomOperation(PoolKind kind) {
    // Rerun a failure with -Dnativepool.test.seed=<the logged seed>.
    long seed = Long.getLong("nativepool.test.seed", System.nanoTime());
    System.out.printf("ReservationLocalSlackTest %s seed=%d%n", kind, seed);
    SplittableRandom rnd = new SplittableRandom(seed);
    open(kind, 48 * MIB, 1 * MIB, 64 * MIB);
    List<Reservation> rs = new ArrayList<>();
    List<Long> model = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      rs.add(pool.newReservation("r" + i, i != 0, null));
      model.add(0L);
    }
    for (int i = 0; i < 5_000; i++) {
      int idx = rnd.nextInt(rs.size());
      Reservation r = rs.get(idx);
      long cur = model.get(idx);
      long n = rnd.nextInt(10) < 8 ? rnd.nextLong(3 * Q) : rnd.nextLong(6 * MIB);
      int op = rnd.nextInt(100);
      String step = "seed " + seed + " step " + i + " r" + idx;
      if (op < 40 && cur < 32 * MIB) {
        boolean ok = r.tryGrow(n);
        if (ok) {
          model.set(idx, cur + n);
        } else {
          assertNotNull(r.lastRefusal(), step);
        }
        step += " tryGrow " + n + " -> " + ok;
      } else if (op < 50 && cur < 32 * MIB) {
        r.grow(n);
        model.set(idx, cur + n);
        step += " grow " + n;
      } else if (op < 95) {
        long m = cur == 0 ? 0 : rnd.nextLong(cur + 1);
        r.shrink(m);
        model.set(idx, cur - m);
        step += " shrink " + m;
      } else {
        assertEquals(cur, r.free(), step);
        model.set(idx, 0L);
        step += " free";
      }
      assertEquals(model.get(idx), r.size(), step);
      long sumGo = 0;
      for (Reservation x : rs) {
        assertExact(x, step);
        sumGo += goSize(x);
      }
      assertEquals(sumGo, pool.stats().reserved(), step + ": RESERVED = sum of Go reservations");
    }
    for (Reservation x : rs) {
      x.close();
    }
    assertEquals(0, pool.stats().reserved());
  }

  @Test
  void roundingUpNeverCausesARefusalThePoolWouldNotMake() {
    long poolSize = MIB + 4097; // not a multiple of Q
    open(PoolKind.FAIR_UNIFIED, poolSize, 256 * KIB, 64 * MIB);
    Reservation r = pool.newReservation("exact-fit", true, null);

    assertTrue(r.tryGrow(poolSize), r::lastRefusal);
    assertEquals(poolSize, r.size());
    assertEquals(0, r.localSlack(), "the rounded ask was refused; the exact one was granted");
    assertExact(r, "full");

    r.shrink(poolSize);
    assertTrue(r.tryGrow(10_000), r::lastRefusal);
    assertEquals(Q - 10_000, r.localSlack());
    assertTrue(r.tryGrow(poolSize - 10_000), r::lastRefusal);
    assertEquals(poolSize, r.size());
    assertExact(r, "full again, from the slack plus an exact ask");

    r.shrink(5_000); // into the slack
    assertFalse(r.tryGrow(5_001), "one byte more than the pool has");
    // The pool was asked for what the slack did not cover: 1 byte (rounded to Q, then exact).
    assertTrue(
        r.lastRefusal().contains("Failed to acquire 1 bytes for exact-fit#"), r.lastRefusal());
    assertEquals(poolSize - 5_000, r.size(), "refusal leaves the reservation unchanged");
    assertEquals(5_000, r.localSlack(), "and its slack");
    assertExact(r, "after the refusal");
    assertTrue(r.tryGrow(5_000), r::lastRefusal);
    assertNull(r.lastRefusal());
    assertEquals(0, r.localSlack());
  }

  @Test
  void shrinkBeyondTheCallersBytesThrowsEvenThoughGoHoldsMore() {
    open(PoolKind.GREEDY_UNIFIED, 0, 8 * MIB, 64 * MIB);
    Reservation r = pool.newReservation("strict", false, null);
    assertTrue(r.tryGrow(8 * KIB), r::lastRefusal);
    assertEquals(Q, goSize(r));

    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> r.shrink(8 * KIB + 1));
    assertEquals(
        // The same text as in exact mode (BadInputTest): one account, one message.
        "Cannot free the capacity 8193 out of allocated size 8192: invalid size",
        e.getMessage());
    assertEquals(8 * KIB, r.size(), "nothing changed");
    assertEquals(Q - 8 * KIB, r.localSlack());
    assertExact(r, "after the rejected shrink");
  }

  @Test
  void aLargeShrinkKeepsOneQuantumAndGivesTheRestToGo() {
    open(PoolKind.GREEDY_UNIFIED, 0, 8 * MIB, 64 * MIB);
    Reservation r = pool.newReservation("big", false, null);
    r.grow(3 * MIB + 1);
    assertEquals(3 * MIB + Q, goSize(r), "rounded up to a multiple of Q");
    r.shrink(MIB);
    assertEquals(Q, r.localSlack(), "slack above 2Q: all but Q went back");
    assertEquals(2 * MIB + 1 + Q, goSize(r));
    r.shrink(Q);
    assertEquals(2 * Q, r.localSlack(), "exactly 2Q stays local");
    r.shrink(1);
    assertEquals(Q, r.localSlack());
    assertExact(r, "end");
  }

  @Test
  void freeAndCloseGiveBackTheSlackToo() {
    open(PoolKind.GREEDY_UNIFIED, 0, 8 * MIB, 64 * MIB);
    Reservation a = pool.newReservation("a", false, null);
    Reservation b = pool.newReservation("b", false, null);
    assertTrue(a.tryGrow(100_000), a::lastRefusal);
    assertTrue(b.tryGrow(3), b::lastRefusal);
    assertTrue(a.localSlack() > 0 && b.localSlack() > 0);
    assertEquals(2 * Q + Q, pool.stats().reserved(), "RESERVED includes both slacks");

    assertEquals(100_000, a.free(), "free returns the caller's bytes");
    assertEquals(0, a.size());
    assertEquals(0, a.localSlack());
    assertEquals(0, goSize(a), "slack freed too");
    assertExact(a, "after free");

    b.close();
    assertEquals(0, pool.stats().reserved(), "close gave back b's slack");
    assertEquals(0, b.localSlack());
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> b.tryGrow(1));
    assertEquals("nativepool: reservation 'b' is closed", e.getMessage());
    e = assertThrows(IllegalStateException.class, b::size);
    assertEquals("nativepool: reservation 'b' is closed", e.getMessage());
  }

  @Test
  void sparksReclaimTakesTheSlackBeforeTheSpillerAndThenEverythingItShrank() {
    open(PoolKind.GREEDY_UNIFIED, 0, MIB, 64 * MIB);
    AtomicReference<Reservation> self = new AtomicReference<>();
    AtomicInteger spills = new AtomicInteger();
    AtomicLong slackSeenBySpiller = new AtomicLong(-1);
    AtomicLong targetSeen = new AtomicLong(-1);
    Reservation r =
        pool.newReservation(
            "sorter",
            true,
            target -> {
              spills.incrementAndGet();
              Reservation me = self.get();
              slackSeenBySpiller.set(me.localSlack());
              targetSeen.set(target);
              long freed = me.size();
              me.shrink(freed); // a sorter writing its run to disk
              return freed;
            });
    self.set(r);
    assertTrue(r.tryGrow(8 * KIB), r::lastRefusal);
    PoolStats s0 = pool.stats();
    long poolSlack = s0.slack();
    assertEquals(MIB - Q, poolSlack);

    // The pool's own slack plus this reservation's local slack cover the target: no spill.
    long target = poolSlack + (Q - 8 * KIB);
    long freed = pool.reclaim(target);
    assertTrue(freed >= target, "reclaim freed " + freed + " for " + target);
    assertEquals(0, spills.get(), "the user's spiller was not needed");
    assertEquals(0, r.localSlack());
    assertEquals(8 * KIB, r.size());
    assertExact(r, "after the slack-only reclaim");

    // Now more than the slack: the spiller runs with no slack left, and what it shrank all goes.
    assertTrue(r.tryGrow(20_000), r::lastRefusal); // slack again
    long slackNow = r.localSlack();
    assertTrue(slackNow > 0);
    long used = r.size();
    long before = pool.stats().held();
    freed = pool.reclaim(before);
    assertEquals(1, spills.get(), "the user's spiller ran once");
    assertEquals(0, slackSeenBySpiller.get(), "the slack went back before the spiller ran");
    assertTrue(targetSeen.get() <= before - slackNow, "target " + targetSeen.get());
    assertEquals(0, r.size());
    assertEquals(0, r.localSlack(), "nothing the spiller shrank stayed local");
    assertEquals(0, goSize(r));
    assertEquals(before, freed, "everything went back to Spark (used " + used + ")");
    assertExact(r, "after the spill");
  }

  @Test
  void exactModeCrossesOncePerCallAndKeepsNoSlack() {
    open(PoolKind.GREEDY_UNIFIED, 0, 0, 64 * MIB);
    Reservation r = pool.newReservation("exact", false, null);
    assertEquals(0, r.slackQuantum(), "no local slack in exact mode, whatever the setting");
    for (int i = 1; i <= 100; i++) {
      assertTrue(r.tryGrow(8 * KIB), r::lastRefusal);
      assertEquals(i, pool.stats().acquireCalls(), "one tryGrow0, one Spark acquire per tryGrow");
      assertEquals(i * 8 * KIB, goSize(r));
    }
    for (int i = 1; i <= 100; i++) {
      r.shrink(8 * KIB);
      assertEquals(i, pool.stats().releaseCalls(), "one shrink0, one Spark release per shrink");
    }
    assertEquals(0, r.localSlack());
    assertExact(r, "end");
  }

  @Test
  void reservationSlackZeroMakesEveryChunkedCallCross() {
    open(PoolKind.GREEDY_UNIFIED, 0, 8 * MIB, 64 * MIB);
    pool.setReservationSlack(0);
    Reservation r = pool.newReservation("no-slack", false, null);
    assertEquals(0, r.slackQuantum());
    for (int i = 1; i <= 100; i++) {
      assertTrue(r.tryGrow(8 * KIB + 1), r::lastRefusal);
      assertEquals(i * (8 * KIB + 1), goSize(r), "Go sees every grow, unrounded");
    }
    r.shrink(1);
    assertEquals(100 * (8 * KIB + 1) - 1, goSize(r));
    assertEquals(0, r.localSlack());
  }

  @Test
  void anUpcallExceptionLeavesJavaAndGoEqual() {
    open(PoolKind.GREEDY_UNIFIED, 0, MIB, 64 * MIB);
    Reservation r = pool.newReservation("doomed", false, null);
    assertTrue(r.tryGrow(10_000), r::lastRefusal);
    long slack = r.localSlack();
    up.close(); // the task completed: Spark acquires now throw

    assertThrows(IllegalStateException.class, () -> r.tryGrow(2 * MIB));
    assertEquals(10_000, r.size(), "tryGrow0 threw: unchanged");
    assertEquals(slack, r.localSlack(), "slack restored");
    assertEquals(r.size() + r.localSlack(), goSize(r));

    assertThrows(IllegalStateException.class, () -> r.grow(2 * MIB));
    assertEquals(10_000 + 2 * MIB, r.size(), "grow0 records the grow although it threw (API.md)");
    assertEquals(r.size() + r.localSlack(), goSize(r));

    // The upstream closed first, so the pool's releases are late and dropped: Spark's own
    // end-of-task cleanup gets back exactly what the pool held from it.
    long held = pool.stats().held();
    pool.close();
    pool = null;
    assertEquals(held, spark.cleanUp());
    spark = null;
  }

  @Test
  void concurrentPairsOnOneReservationKeepJavaAndGoEqual() throws Exception {
    open(PoolKind.FAIR_UNIFIED, 64 * MIB, MIB, 64 * MIB);
    Reservation r = pool.newReservation("shared", true, target -> 0);
    ExecutorService ex = Executors.newFixedThreadPool(2);
    try {
      List<Future<Long>> fs = new ArrayList<>();
      for (int t = 0; t < 2; t++) {
        long seed = 77 + t;
        fs.add(
            ex.submit(
                () -> {
                  SplittableRandom rnd = new SplittableRandom(seed);
                  long mine = 0;
                  for (int i = 0; i < 20_000; i++) {
                    long n = 1 + rnd.nextLong(3 * Q);
                    if (rnd.nextBoolean()) {
                      r.grow(n);
                      mine += n;
                    } else if (r.tryGrow(n)) {
                      mine += n;
                    }
                    long m = rnd.nextLong(mine + 1);
                    r.shrink(m);
                    mine -= m;
                  }
                  return mine;
                }));
      }
      long total = 0;
      for (Future<Long> f : fs) {
        total += f.get(60, TimeUnit.SECONDS);
      }
      assertEquals(total, r.size());
      assertExact(r, "after two threads");
    } finally {
      ex.shutdownNow();
    }
  }

  @Test
  void settingDefaultsTo64KiBAndZeroDisablesIt() {
    assertEquals(64 * KIB, PoolSettings.fromConf(new SparkConf(false)).reservationSlack());
    assertEquals(
        0,
        PoolSettings.fromConf(
                new SparkConf(false).set(NativePoolConf.RESERVATION_SLACK.key(), "0"))
            .reservationSlack());
    assertEquals(
        MIB,
        PoolSettings.fromConf(
                new SparkConf(false).set(NativePoolConf.RESERVATION_SLACK.key(), "1m"))
            .reservationSlack());
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                PoolSettings.fromConf(
                    new SparkConf(false).set(NativePoolConf.RESERVATION_SLACK.key(), "-1")));
    assertEquals(
        "nativepool: spark.nativepool.reservationSlack = '-1': not a size (e.g. 512k, 64m, 2g)",
        e.getMessage());
    open(PoolKind.GREEDY_UNIFIED, 0, MIB, 64 * MIB);
    e = assertThrows(IllegalArgumentException.class, () -> pool.setReservationSlack(-1));
    assertEquals("nativepool: reservation slack -1: negative size", e.getMessage());
  }
}
