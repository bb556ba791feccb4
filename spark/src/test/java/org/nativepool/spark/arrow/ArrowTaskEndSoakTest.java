package org.nativepool.spark.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.NativeBridge;
import org.nativepool.spark.NativeReservation;

/**
 * Issue 9, the long-running streaming executor: Go batches exported to Java and left open at task
 * end must not stay resident. 1,000 tasks each leave a 256 KiB Go batch open in Java (and drop
 * it), then 1,000 clean tasks run; the process's resident set, read from {@code /proc/self/statm},
 * must be back within 16 MiB of where it was before the leaky tasks. Before the fix each leaked
 * batch stayed mapped for good (+256 MiB).
 *
 * <p>The Go buffers of this size have pages of their own ({@code ffi/cdata.go}, mapThreshold), so
 * a freed buffer leaves the resident set at once instead of sitting in libc's heap: the figure
 * measures what is held, not the allocator's caching. Java's heap is collected before each sample.
 */
@Timeout(value = 600, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ArrowTaskEndSoakTest {
  private static final long MIB = ArrowTask.MIB;
  private static final int ROWS = 32 * 1024; // 256 KiB of longs
  private static final int TASKS = 1000;

  @BeforeAll
  static void load() {
    NativeBridge.ensureLoaded();
  }

  /** The resident set of this process in bytes: statm's second field, in pages. */
  static long rss() {
    try {
      String[] f =
          Files.readString(Path.of("/proc/self/statm"), StandardCharsets.US_ASCII).trim().split(" ");
      return Long.parseLong(f[1]) * 4096;
    } catch (IOException e) {
      throw new AssertionError("cannot read /proc/self/statm", e);
    }
  }

  private static long settledRss() {
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    return rss();
  }

  /** One task: a 256 KiB Go batch exported to Java; closed by the task if {@code clean}. */
  private static void task(long id, boolean clean) {
    ArrowTask t = new ArrowTask(id, 64 * MIB);
    NativeReservation op = t.arrows.newNativeReservation("stream-op");
    NativeBatch go;
    try (VectorSchemaRoot src = ArrowTask.longs(t.arrows.producer(), id, ROWS);
        NativeBatch in = NativeBatch.importFrom(op, src, t.arrows.producer())) {
      go = in.copy(op);
    }
    VectorSchemaRoot inJava = go.exportTo(t.arrows.importer());
    go.close();
    assertEquals(ArrowTask.sumOf(id, ROWS), ArrowTask.sum(inJava));
    if (clean) {
      inJava.close();
    }
    assertEquals(0, t.finish(), "Spark still held bytes for the task");
  }

  @Test
  void goBatchesLeftOpenAtTaskEndDoNotStayResident() {
    for (int i = 0; i < 300; i++) {
      task(900_000 + i, true); // warm-up: JIT, Netty's pools, the heap's working size
    }
    long before = settledRss();
    for (int i = 0; i < TASKS; i++) {
      task(910_000 + i, false);
    }
    long afterLeaky = settledRss();
    for (int i = 0; i < TASKS; i++) {
      task(920_000 + i, true);
    }
    long after = settledRss();
    System.out.printf(
        "ArrowTaskEndSoakTest: RSS before %d MiB, after %d leaky tasks %d MiB, after %d clean"
            + " tasks %d MiB (limit: before + 16 MiB)%n",
        before / MIB, TASKS, afterLeaky / MIB, TASKS, after / MIB);
    assertTrue(
        after - before <= 16 * MIB,
        "RSS grew by " + (after - before) / MIB + " MiB over " + TASKS + " leaky tasks");
  }
}
