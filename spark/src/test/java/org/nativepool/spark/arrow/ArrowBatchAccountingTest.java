package org.nativepool.spark.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.jni.ArrowMemoryExhaustedException;
import org.nativepool.spark.jni.ArrowStat;
import org.nativepool.spark.jni.ArrowStats;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.PoolStats;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.testing.ArrowTask;

/**
 * Arrow batches across the C Data Interface with Spark's real {@code TaskMemoryManager}: whoever
 * produced the buffers pays while they live, the other side only tracks (ffi/doc.go). After every
 * step {@link #check} asserts that what Spark counts for the task, the task's off-heap execution
 * memory, the pool's HELD and the sum of what Java's producer allocator and the Go allocators
 * charge are one number: a batch counted on both sides, or on neither, breaks it.
 */
class ArrowBatchAccountingTest {
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
   * Spark's figure = off-heap execution memory = pool HELD = Java-charged + Go-charged, and the
   * pool's RESERVED is the Java reservation plus the native ones.
   */
  private void check(String step, Reservation... natives) {
    long spark = task.sparkFigure();
    PoolStats ps = task.pool.stats();
    assertEquals(spark, ps.held(), () -> step + ": Spark's figure vs HELD; " + ps);
    assertEquals(
        spark, task.umm.offHeapExecutionMemoryUsed(), () -> step + ": off-heap execution memory");
    long java = task.arrows.producer().getAllocatedMemory();
    assertEquals(
        java, task.arrows.listener().charged(), () -> step + ": Java listener vs allocator");
    assertEquals(java, task.arrows.javaReservation().size(), () -> step + ": Java reservation");
    long go = 0;
    long nativeReserved = 0;
    for (Reservation r : natives) {
      ArrowStats s = GoAllocators.stats(r);
      go += s.allocated();
      nativeReserved += s.reserved();
    }
    long goCharged = go;
    assertEquals(go, nativeReserved, () -> step + ": Go allocated vs reserved (exact mode)");
    assertEquals(
        java + goCharged,
        spark,
        () -> step + ": Spark's figure vs Java-charged " + java + " + Go-charged " + goCharged);
    assertEquals(java + goCharged, ps.reserved(), () -> step + ": pool RESERVED; " + ps);
  }

  @Test
  void aGoBatchStaysChargedToGoUntilJavaClosesTheExport() {
    task = new ArrowTask(9001, 64 * MIB);
    TaskArrowAllocators arrows = task.arrows;
    Reservation op = arrows.newNativeReservation("go-producer");
    check("start", op);

    GoBatch go;
    try (VectorSchemaRoot src = ArrowTask.longs(arrows.producer(), 5, ROWS);
        GoBatch imported = GoBatch.importFrom(op, src, arrows.producer())) {
      go = imported.copy(op);
    }
    check("Go copy made; Java's batch released by both sides", op);
    ArrowStats made = GoAllocators.stats(op);
    assertTrue(made.allocated() >= ROWS * 8L, made::toString);
    assertEquals(0, arrows.producer().getAllocatedMemory());
    assertEquals(made.allocated(), task.sparkFigure(), "the copy is Go's: Go charges it");

    VectorSchemaRoot inJava = go.exportTo(arrows.importer());
    assertEquals(ArrowTask.sumOf(5, ROWS), ArrowTask.sum(inJava));
    assertTrue(
        arrows.importer().getAllocatedMemory() > 0, "the importer tracks the foreign buffers");
    check("exported", op);
    assertEquals(1, GoAllocators.stats(op).exportsLive());

    go.close();
    check("Go released its handle; Java still reads the export", op);
    ArrowStats held = GoAllocators.stats(op);
    assertEquals(made.allocated(), held.allocated(), "the Go charge lives until Java releases");
    assertEquals(made.allocated(), task.sparkFigure());
    assertEquals(0, held.batches());
    assertEquals(ArrowTask.sumOf(5, ROWS), ArrowTask.sum(inJava), "the export is still readable");

    inJava.close();
    check("Java closed the export", op);
    ArrowStats after = GoAllocators.stats(op);
    assertEquals(0, after.allocated());
    assertEquals(0, after.exportsLive());
    assertEquals(0, arrows.importer().getAllocatedMemory());
    assertEquals(0, task.sparkFigure());
  }

  @Test
  void aJavaBatchIsChargedOnceToJavaUntilGoReleasesIt() {
    task = new ArrowTask(9002, 64 * MIB);
    TaskArrowAllocators arrows = task.arrows;
    Reservation op = arrows.newNativeReservation("go-consumer");
    VectorSchemaRoot src = ArrowTask.longs(arrows.producer(), 1, ROWS);
    long javaBatch = arrows.producer().getAllocatedMemory();
    assertTrue(javaBatch >= ROWS * 8L);
    check("Java batch built", op);

    GoBatch inGo = GoBatch.importFrom(op, src, arrows.producer());
    check("imported into Go", op);
    ArrowStats s = GoAllocators.stats(op);
    assertEquals(1, s.importsLive());
    assertTrue(s.imported() >= ROWS * 8L, s::toString);
    assertEquals(0, s.allocated(), "Go tracks an import, it does not charge it");
    assertEquals(
        arrows.producer().getAllocatedMemory(),
        task.sparkFigure(),
        "charged once, by Java: not Java + imported");

    src.close();
    check("Java closed its root; Go still holds the buffers", op);
    assertTrue(
        arrows.producer().getAllocatedMemory() >= javaBatch,
        "Java keeps the charge while Go holds the batch");

    inGo.close();
    check("Go released the batch", op);
    assertEquals(0, arrows.producer().getAllocatedMemory());
    assertEquals(0, GoAllocators.stats(op).importsLive());
    assertEquals(0, task.sparkFigure());
  }

  @Test
  void bothDirectionsAtOnceKeepSparkAndTheBooksEqualAtEveryStep() {
    task = new ArrowTask(9003, 64 * MIB);
    TaskArrowAllocators arrows = task.arrows;
    Reservation a = arrows.newNativeReservation("op-a");
    Reservation b = arrows.newNativeReservation("op-b");
    VectorSchemaRoot j1 = ArrowTask.longs(arrows.producer(), 0, ROWS);
    GoBatch i1 = GoBatch.importFrom(a, j1, arrows.producer());
    check("j1 imported into a", a, b);
    GoBatch c1 = i1.copy(b);
    check("copied into b", a, b);
    GoBatch c2 = c1.copy(a);
    check("copied back into a", a, b);
    VectorSchemaRoot e2 = c2.exportTo(arrows.importer());
    check("c2 exported", a, b);
    GoBatch i2 = GoBatch.importFrom(b, e2, arrows.importer());
    check("the export re-imported (charges nothing anew)", a, b);
    assertEquals(ArrowTask.sumOf(0, ROWS), ArrowTask.sum(e2));
    j1.close();
    i1.close();
    check("Java batch gone", a, b);
    c2.close();
    e2.close();
    check("c2 released, its export still pinned by the re-import", a, b);
    assertTrue(GoAllocators.stats(a).allocated() > 0, "i2 keeps c2's Go buffers alive");
    i2.close();
    check("re-import released", a, b);
    assertEquals(0, GoAllocators.stats(a).allocated());
    c1.close();
    check("all released", a, b);
    assertEquals(0, task.sparkFigure());
  }

  @Test
  void releasingABatchTwiceThrowsAndReleasesNothingTwice() {
    task = new ArrowTask(9004, 64 * MIB);
    TaskArrowAllocators arrows = task.arrows;
    Reservation op = arrows.newNativeReservation("twice");
    VectorSchemaRoot src = ArrowTask.longs(arrows.producer(), 1, ROWS);
    GoBatch inGo = GoBatch.importFrom(op, src, arrows.producer());
    GoBatch copy = inGo.copy(op);
    long h = copy.handle();
    Natives.releaseBatch(h);
    check("released once through the native", op);
    IllegalStateException e =
        assertThrows(IllegalStateException.class, () -> Natives.releaseBatch(h));
    assertEquals(
        "nativepool: batch handle 0x" + Long.toHexString(h) + " is closed: stale handle",
        e.getMessage());
    assertThrows(IllegalStateException.class, copy::close, "the wrapper's first close crosses");
    copy.close(); // idempotent afterwards
    assertTrue(copy.isClosed());
    check("after the double release", op);

    inGo.close();
    inGo.close();
    src.close();
    check("import released once", op);
    assertEquals(0, arrows.producer().getAllocatedMemory());
    IllegalStateException closed = assertThrows(IllegalStateException.class, () -> inGo.copy(op));
    assertTrue(closed.getMessage().endsWith(" is closed"), closed.getMessage());
  }

  @Test
  void importingIntoAClosedReservationThrowsAndLeavesJavaTheBatch() {
    task = new ArrowTask(9005, 64 * MIB);
    TaskArrowAllocators arrows = task.arrows;
    Reservation op = task.pool.newReservation("closed-op", false, null);
    op.close();
    try (VectorSchemaRoot src = ArrowTask.longs(arrows.producer(), 1, ROWS)) {
      long before = arrows.producer().getAllocatedMemory();
      IllegalStateException e =
          assertThrows(
              IllegalStateException.class,
              () -> GoBatch.importFrom(op, src, arrows.producer()));
      assertEquals(
          "nativepool: reservation 'closed-op' is closed; cannot import a batch", e.getMessage());
      assertEquals(before, arrows.producer().getAllocatedMemory(), "the export was released");
      assertEquals(ArrowTask.sumOf(1, ROWS), ArrowTask.sum(src));
      check("after the refused import");
    }
    check("closed");
  }

  @Test
  void aClosedGoAllocatorRefusesImportsAndTheExportIsReleasedByJava() {
    task = new ArrowTask(9006, 64 * MIB);
    TaskArrowAllocators arrows = task.arrows;
    Reservation op = arrows.newNativeReservation("closed-alloc");
    assertEquals(null, GoAllocators.closeAllocator(op), "nothing held, nothing reported");
    assertTrue(GoAllocators.stats(op).closed());
    try (VectorSchemaRoot src = ArrowTask.longs(arrows.producer(), 1, ROWS)) {
      long before = arrows.producer().getAllocatedMemory();
      IllegalStateException e =
          assertThrows(
              IllegalStateException.class,
              () -> GoBatch.importFrom(op, src, arrows.producer()));
      assertTrue(
          e.getMessage()
              .startsWith("nativepool: importBatch: the Arrow allocator of closed-alloc#"),
          e.getMessage());
      assertTrue(e.getMessage().endsWith(": closed"), e.getMessage());
      assertEquals(before, arrows.producer().getAllocatedMemory(), "Java released its export");
      check("after the refused import", op);
    }
  }

  @Test
  void exportingAfterThePoolClosedThrowsAndNothingIsReleasedTwice() {
    task = new ArrowTask(9007, 64 * MIB);
    TaskArrowAllocators arrows = task.arrows;
    Reservation op = arrows.newNativeReservation("late-export");
    GoBatch go;
    try (VectorSchemaRoot src = ArrowTask.longs(arrows.producer(), 1, ROWS);
        GoBatch in = GoBatch.importFrom(op, src, arrows.producer())) {
      go = in.copy(op);
    }
    assertTrue(task.sparkFigure() > 0);
    ArrowTask t = task;
    task = null;
    assertEquals(0, t.finish(), "task end returned everything to Spark");
    assertEquals(1, t.arrows.leakReports().size(), t.arrows.leakReports()::toString);

    try (org.apache.arrow.memory.RootAllocator importer =
        new org.apache.arrow.memory.RootAllocator()) {
      IllegalStateException e =
          assertThrows(IllegalStateException.class, () -> go.exportTo(importer));
      assertEquals(
          "nativepool: batch handle 0x"
              + Long.toHexString(go.handle())
              + " is closed: stale handle",
          e.getMessage());
      assertEquals(0, importer.getAllocatedMemory());
    }
    assertThrows(IllegalStateException.class, go::close, "released by the task end already");
    assertEquals(0, t.sparkFigure());
  }

  @Test
  void aCopyThePoolRefusesThrowsArrowsOutOfMemoryAndChargesNothing() {
    task = new ArrowTask(9008, (3 * MIB) / 2);
    TaskArrowAllocators arrows = task.arrows;
    Reservation op = arrows.newNativeReservation("too-big");
    int rows = 100_000; // 800 KB of values: Java rounds to 1 MiB; a Go copy does not fit beside it
    try (VectorSchemaRoot src = ArrowTask.longs(arrows.producer(), 1, rows);
        GoBatch in = GoBatch.importFrom(op, src, arrows.producer())) {
      check("imported", op);
      long before = task.sparkFigure();
      ArrowMemoryExhaustedException e =
          assertThrows(ArrowMemoryExhaustedException.class, () -> in.copy(op));
      assertTrue(e.getMessage().startsWith("nativepool: copyBatch into too-big#"), e.getMessage());
      assertTrue(
          e.getMessage().contains("Resources exhausted: Additional allocation failed for too-big"),
          e.getMessage());
      assertEquals(before, task.sparkFigure(), "a refused copy charges nothing");
      assertEquals(0, GoAllocators.stats(op).allocated());
      assertEquals(1, GoAllocators.stats(op).get(ArrowStat.REFUSALS));
      check("after the refusal", op);
    }
    check("released", op);
  }

  @Test
  void aJavaAllocationThePoolRefusesThrowsWithThePoolsMessage() {
    task = new ArrowTask(9009, MIB);
    TaskArrowAllocators arrows = task.arrows;
    ArrowMemoryExhaustedException e =
        assertThrows(
            ArrowMemoryExhaustedException.class,
            () -> ArrowTask.longs(arrows.producer(), 0, 200_000).close());
    assertTrue(e.getMessage().contains("arrow-java"), e.getMessage());
    assertEquals(1, arrows.listener().refusals());
    assertEquals(0, arrows.producer().getAllocatedMemory());
    check("after the refusal");
  }

  @Test
  void exportingIntoAnAllocatorThatChargesThePoolIsRefused() {
    task = new ArrowTask(9010, 64 * MIB);
    TaskArrowAllocators arrows = task.arrows;
    Reservation op = arrows.newNativeReservation("double");
    try (VectorSchemaRoot src = ArrowTask.longs(arrows.producer(), 1, 10);
        GoBatch in = GoBatch.importFrom(op, src, arrows.producer());
        GoBatch go = in.copy(op)) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> go.exportTo(arrows.producer()));
      assertTrue(e.getMessage().contains("Go already charges these bytes"), e.getMessage());
      assertFalse(go.isClosed());
      check("refused export", op);
    }
  }
}
