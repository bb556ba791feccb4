package org.nativepool.spark.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.LongUnaryOperator;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.testing.ArrowTask;
import org.nativepool.spark.testing.RawMemory;

/**
 * Bad C Data addresses from Java get {@link IllegalArgumentException}, not a crash. Each forgery is
 * made on a genuine Arrow Java export (one field at a time) or is no struct at all; the import is
 * refused before anything is dereferenced, nothing is charged or kept, and with the field restored
 * the same struct imports (or is released by its owner). An unmapped address that reached Go's
 * reads would kill the JVM ({@code fatal error: fault}), so finishing is part of the claim.
 */
class ArrowBadAddressTest {
  private static final long MIB = ArrowTask.MIB;
  private static final int ROWS = 100;
  /** 16 TiB: mapped by no process on linux/amd64 in practice. */
  private static final long UNMAPPED = 1L << 44;

  // struct ArrowArray field offsets (ffi/abi.h)
  private static final long LENGTH = 0;
  private static final long NULL_COUNT = 8;
  private static final long N_BUFFERS = 24;
  private static final long BUFFERS = 40;
  private static final long CHILDREN = 48;
  private static final long RELEASE = 64;

  private ArrowTask task;
  private Reservation op;

  @BeforeAll
  static void load() {
    Natives.ensureLoaded();
  }

  @BeforeEach
  void open() {
    task = new ArrowTask(9301, 64 * MIB);
    op = task.arrows.newNativeReservation("forged");
  }

  @AfterEach
  void close() {
    assertEquals(0, GoAllocators.stats(op).batches());
    assertEquals(0, GoAllocators.stats(op).importsLive());
    assertEquals(0, task.arrows.producer().getAllocatedMemory(), "nothing leaked");
    assertEquals(0, task.finish());
    assertTrue(task.arrows.leakReports().isEmpty(), task.arrows.leakReports()::toString);
  }

  /** A two-column batch (bigint with a null, varchar) made by {@code alloc}. */
  private static VectorSchemaRoot twoColumns(BufferAllocator alloc) {
    BigIntVector v = new BigIntVector("v", alloc);
    VarCharVector s = new VarCharVector("s", alloc);
    v.allocateNew(ROWS);
    s.allocateNew(ROWS);
    for (int i = 0; i < ROWS; i++) {
      if (i == 1) {
        v.setNull(i);
      } else {
        v.set(i, i);
      }
      s.setSafe(i, ("row-" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
    v.setValueCount(ROWS);
    s.setValueCount(ROWS);
    VectorSchemaRoot root = VectorSchemaRoot.of(v, s);
    root.setRowCount(ROWS);
    return root;
  }

  /** The address of child {@code i} of the ArrowArray at {@code arr}. */
  private static long childAddr(long arr, int i) {
    return RawMemory.getLong(RawMemory.getLong(arr + CHILDREN) + 8L * i);
  }

  /**
   * Exports a genuine batch, replaces the long at {@code where(arrayAddr)} with {@code forged},
   * asserts the import is refused with a message containing {@code expected}, restores it and
   * imports the genuine struct.
   */
  private void refusedThenGenuine(LongUnaryOperator where, long forged, String expected) {
    BufferAllocator producer = task.arrows.producer();
    try (VectorSchemaRoot root = twoColumns(producer);
        ArrowArray arr = ArrowArray.allocateNew(producer);
        ArrowSchema schema = ArrowSchema.allocateNew(producer)) {
      Data.exportVectorSchemaRoot(producer, root, null, arr, schema);
      long at = where.applyAsLong(arr.memoryAddress());
      long genuine = RawMemory.getLong(at);
      RawMemory.putLong(at, forged);
      long spark = task.sparkFigure();
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> op.callNative(h -> Natives.importBatch(h, arr.memoryAddress(), schema.memoryAddress())));
      assertTrue(e.getMessage().startsWith("nativepool: importBatch for forged#"), e.getMessage());
      assertTrue(e.getMessage().contains(expected), e.getMessage());
      assertTrue(e.getMessage().endsWith(": invalid argument"), e.getMessage());
      assertEquals(forged, RawMemory.getLong(at), "the caller's struct is untouched");
      assertEquals(spark, task.sparkFigure(), "nothing charged");
      assertEquals(0, GoAllocators.stats(op).batches());

      RawMemory.putLong(at, genuine);
      long h = op.callNative(r -> Natives.importBatch(r, arr.memoryAddress(), schema.memoryAddress()));
      Natives.releaseBatch(h);
    }
  }

  @Test
  void aForgedLengthIsIllegalArgument() {
    refusedThenGenuine(a -> a + LENGTH, ROWS + 1, "child 0 has length 100, 101 needed");
  }

  @Test
  void aNegativeLengthIsIllegalArgument() {
    refusedThenGenuine(a -> childAddr(a, 1) + LENGTH, -1, "negative length -1 or offset 0");
  }

  @Test
  void columnsOfUnequalRowCountsAreIllegalArgument() {
    refusedThenGenuine(a -> childAddr(a, 0) + LENGTH, ROWS + 5, "column 0 has 105 rows");
  }

  @Test
  void aForgedBuffersPointerIsIllegalArgument() {
    refusedThenGenuine(a -> childAddr(a, 0) + BUFFERS, UNMAPPED, "address not readable");
  }

  @Test
  void aForgedDataPointerIsIllegalArgument() {
    refusedThenGenuine(
        a -> RawMemory.getLong(childAddr(a, 1) + BUFFERS) + 16,
        UNMAPPED,
        "data (590 bytes at 0x100000000000)");
  }

  @Test
  void nBuffersAgainstTheSchemaIsIllegalArgument() {
    refusedThenGenuine(
        a -> childAddr(a, 1) + N_BUFFERS, 2, "(format \"u\"): n_buffers 2, the format needs 3");
  }

  @Test
  void aNullCountBeyondTheLengthIsIllegalArgument() {
    refusedThenGenuine(a -> childAddr(a, 0) + NULL_COUNT, ROWS + 1, "null_count 101");
  }

  @Test
  void aReleasedChildIsIllegalArgument() {
    refusedThenGenuine(a -> childAddr(a, 0) + RELEASE, 0, "released (release callback is NULL)");
  }

  @Test
  void unmappedMisalignedAndGarbageAddressesAreIllegalArgument() {
    BufferAllocator producer = task.arrows.producer();
    try (RootAllocator scratch = new RootAllocator();
        ArrowBuf garbage = scratch.buffer(256);
        ArrowArray arr = ArrowArray.allocateNew(producer);
        ArrowSchema schema = ArrowSchema.allocateNew(producer);
        VectorSchemaRoot root = twoColumns(producer)) {
      for (long i = 0; i < 256; i += 8) {
        garbage.setLong(i, 0x9e3779b97f4a7c15L * (i + 1));
      }
      Data.exportVectorSchemaRoot(producer, root, null, arr, schema);
      long a = arr.memoryAddress();
      long s = schema.memoryAddress();
      long g = garbage.memoryAddress();
      long[][] bad = {{UNMAPPED, s}, {a, UNMAPPED}, {a + 4, s}, {a, s + 1}, {g, s}, {a, g}};
      for (long[] b : bad) {
        IllegalArgumentException e =
            assertThrows(
                IllegalArgumentException.class, () -> op.callNative(h -> Natives.importBatch(h, b[0], b[1])));
        assertTrue(e.getMessage().endsWith(": invalid argument"), e.getMessage());
      }
      assertNotEquals(0, RawMemory.getLong(a + RELEASE), "still the caller's");
      assertEquals(0, GoAllocators.stats(op).batches());
      arr.release();
      schema.release();
    }
  }

  @Test
  void exportingIntoBadAddressesIsIllegalArgumentAndWritesNothing() {
    BufferAllocator producer = task.arrows.producer();
    GoBatch go;
    try (VectorSchemaRoot src = twoColumns(producer);
        GoBatch in = GoBatch.importFrom(op, src, producer)) {
      go = in.copy(op);
    }
    try (ArrowArray arr = ArrowArray.allocateNew(task.arrows.importer());
        ArrowSchema schema = ArrowSchema.allocateNew(task.arrows.importer())) {
      long a = arr.memoryAddress();
      long s = schema.memoryAddress();
      long[][] bad = {{UNMAPPED, s}, {a, UNMAPPED}, {a + 4, s}};
      for (long[] b : bad) {
        IllegalArgumentException e =
            assertThrows(
                IllegalArgumentException.class,
                () -> Natives.exportBatch(go.handle(), b[0], b[1]));
        assertTrue(e.getMessage().startsWith("nativepool: exportBatch: "), e.getMessage());
      }
      assertEquals(0, RawMemory.getLong(a + RELEASE), "nothing written");
      assertEquals(0, GoAllocators.stats(op).exportsLive());
    }
    go.close();
  }
}
