package org.nativepool.spark.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.nativepool.spark.jni.ArrowStats;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.PoolStats;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.testing.ArrowTask;

/**
 * One account of each reservation's bytes, on Spark's real {@code TaskMemoryManager}: an Arrow
 * copy charges a Go reservation of its own, so Java's {@link Reservation#size()} equals Go's
 * {@code Size()} ({@link Reservation#nativeSize()}) at every quiescent step, before and after
 * copies into the reservation and after they are released; the pool still counts the copy for the
 * task (Spark's figure = HELD, RESERVED = Java reservation + Arrow reservation).
 */
class ReservationLedgerTest {
  private static final long KIB = 1L << 10;
  private static final long MIB = ArrowTask.MIB;
  private static final int ROWS = 10_000;

  private ArrowTask task;

  @BeforeAll
  static void load() {
    Natives.ensureLoaded();
  }

  @AfterEach
  void tearDown() {
    if (task != null) {
      assertEquals(0, task.finish(), "Spark still held bytes for the task after it completed");
    }
    task = null;
  }

  /**
   * Java's size() = Go's Size() = {@code want}; the Arrow reservation (once {@code r}'s Go
   * allocator exists, {@code GoAllocators.stats(r).reserved()}) covers what the allocator holds;
   * the pool's RESERVED = the Java producer's reservation + {@code r} + the Arrow reservation;
   * Spark's figure = HELD.
   */
  private void checkLedger(String step, Reservation r, long want, boolean arrowOpen) {
    assertEquals(want, r.size(), step + ": Java size()");
    assertEquals(r.size(), r.nativeSize(), step + ": Java size() vs Go Size()");
    long arrow = 0;
    if (arrowOpen) {
      ArrowStats a = GoAllocators.stats(r);
      arrow = a.reserved();
      assertTrue(a.allocated() <= arrow, step + ": Arrow allocated > reserved: " + a);
    }
    long arrowReserved = arrow;
    PoolStats ps = task.pool.stats();
    // The Java producer's reservation in Go, its own local slack included (chunked pools).
    long java = task.arrows.javaReservation().nativeSize();
    assertEquals(
        java + r.size() + arrowReserved, ps.reserved(), () -> step + ": pool RESERVED; " + ps);
    assertEquals(task.sparkFigure(), ps.held(), () -> step + ": Spark's figure vs HELD; " + ps);
  }

  /**
   * Exact mode, a chunked pool without local slack, and one with 64 KiB of it. Grows are multiples
   * of 64 KiB and shrinks only happen without slack, so the local slack is 0 at every check.
   */
  @ParameterizedTest(name = "chunk={0} slack={1}")
  @CsvSource({"0, 0", "8388608, 0", "8388608, 65536"})
  void aCopyChargesItsOwnReservationSoJavaSizeEqualsGoSize(long chunk, long slack) {
    task = new ArrowTask(9301 + chunk + slack, 256 * MIB, chunk);
    task.pool.setReservationSlack(slack);
    Reservation op = task.arrows.newNativeReservation("ledger", null);
    checkLedger("start", op, 0, false);
    op.tryGrowOrThrow(64 * KIB);
    checkLedger("grown", op, 64 * KIB, false);

    GoBatch src;
    try (VectorSchemaRoot root = ArrowTask.longs(task.arrows.producer(), 1, ROWS)) {
      src = GoBatch.importFrom(op, root, task.arrows.producer());
    }
    checkLedger("imported", op, 64 * KIB, true);

    GoBatch c1 = src.copy(op);
    GoBatch c2 = src.copy(op);
    ArrowStats copied = GoAllocators.stats(op);
    assertTrue(copied.allocated() >= 2 * ROWS * 8L, "two copies allocated " + copied);
    assertTrue(copied.reserved() >= copied.allocated(), "Arrow reserved < allocated " + copied);
    checkLedger("two copies", op, 64 * KIB, true);

    if (op.slackQuantum() == 0) {
      op.shrink(64 * KIB);
    } else {
      op.free(); // a shrink would leave Q of local slack
    }
    checkLedger("shrunk under the copies", op, 0, true);
    op.grow(128 * KIB);
    checkLedger("grown again under the copies", op, 128 * KIB, true);

    c1.close();
    checkLedger("one copy released", op, 128 * KIB, true);
    c2.close();
    src.close();
    assertEquals(0, GoAllocators.stats(op).allocated(), "Go buffers after every release");
    checkLedger("copies released", op, 128 * KIB, true);

    assertEquals(128 * KIB, op.free(), "free() returns what Java reserved, and only that");
    checkLedger("freed", op, 0, true);
    op.close();
  }

  /** Closing the reservation with a copy alive: the copy's charge goes back with its allocator. */
  @ParameterizedTest(name = "chunk={0}")
  @ValueSource(longs = {0, 8 * MIB})
  void closingAReservationWithALiveCopyReturnsBothLedgers(long chunk) {
    task = new ArrowTask(9401 + chunk, 256 * MIB, chunk);
    Reservation op = task.arrows.newNativeReservation("ledger-close", null);
    op.tryGrowOrThrow(64 * KIB);
    GoBatch src;
    try (VectorSchemaRoot root = ArrowTask.longs(task.arrows.producer(), 1, ROWS)) {
      src = GoBatch.importFrom(op, root, task.arrows.producer());
    }
    GoBatch cp = src.copy(op);
    checkLedger("copied", op, 64 * KIB, true);
    String report = GoAllocators.closeAllocator(op);
    assertTrue(report.contains("ledger-close"), report);
    assertEquals(64 * KIB, op.size());
    assertEquals(op.size(), op.nativeSize(), "Java size() vs Go Size() after the allocator closed");
    assertEquals(
        task.arrows.javaReservation().nativeSize() + 64 * KIB,
        task.pool.stats().reserved(),
        "pool RESERVED after the allocator closed");
    op.close();
    assertEquals(task.arrows.javaReservation().nativeSize(), task.pool.stats().reserved());
    assertEquals(task.sparkFigure(), task.pool.stats().held());
    // Their Go side went with the allocator; closing the wrappers finds them released.
    assertThrows(IllegalStateException.class, cp::close);
    assertThrows(IllegalStateException.class, src::close);
  }
}
