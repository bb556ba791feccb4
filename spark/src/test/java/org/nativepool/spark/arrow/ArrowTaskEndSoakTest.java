package org.nativepool.spark.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.testing.ArrowTask;

/**
 * A long-running streaming executor: Go batches exported to Java and left open at task end must not
 * stay resident. 1,000 tasks each leave a 256 KiB Go batch open in Java (and drop it), then 1,000
 * clean tasks run; the process's resident set, read from {@code /proc/self/statm}, must be back
 * within 16 MiB of where it was before the leaky tasks. If a leaked batch stayed mapped for good,
 * the resident set would end 256 MiB higher.
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
    Natives.ensureLoaded();
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

  /**
   * What the JVM itself has committed for its heap and non-heap areas. The garbage collector may
   * grow the committed heap between two samples (the surefire JVM does not pin -Xms to -Xmx), and
   * those pages are resident: the test subtracts that growth, so what it bounds is the RSS that
   * neither the Java heap nor the JVM's own areas explain, which is where buffers left at task end
   * would show.
   */
  private static long jvmCommitted() {
    MemoryMXBean m = ManagementFactory.getMemoryMXBean();
    return m.getHeapMemoryUsage().getCommitted() + m.getNonHeapMemoryUsage().getCommitted();
  }

  /** One task: a 256 KiB Go batch exported to Java; closed by the task if {@code clean}. */
  private static void task(long id, boolean clean) {
    ArrowTask t = new ArrowTask(id, 64 * MIB);
    Reservation op = t.arrows.newNativeReservation("stream-op");
    GoBatch go;
    try (VectorSchemaRoot src = ArrowTask.longs(t.arrows.producer(), id, ROWS);
        GoBatch in = GoBatch.importFrom(op, src, t.arrows.producer())) {
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
    long jvmBefore = jvmCommitted();
    for (int i = 0; i < TASKS; i++) {
      task(910_000 + i, false);
    }
    long afterLeaky = settledRss();
    // Up to three rounds of 1,000 clean tasks: a round now and then leaves RSS 20-30 MiB higher,
    // also on the code before the task-end fix's follow-ups, and not explained by the JVM's
    // committed growth (unverified guess: glibc keeping the Java side's freed 256 KiB buffers),
    // while 1,000 batches left resident would keep 250 MiB in every round. The test takes the
    // first round within the limit.
    long after = 0;
    long jvmGrowth = 0;
    long growth = Long.MAX_VALUE;
    int rounds = 0;
    for (int round = 0; round < 3 && growth > 16 * MIB; round++) {
      rounds++;
      for (int i = 0; i < TASKS; i++) {
        task(920_000 + round * TASKS + i, true);
      }
      after = settledRss();
      jvmGrowth = jvmCommitted() - jvmBefore;
      growth = after - before - Math.max(jvmGrowth, 0);
    }
    System.out.printf(
        "ArrowTaskEndSoakTest: RSS before %d MiB, after %d leaky tasks %d MiB, after %d clean"
            + " tasks %d MiB; the JVM's committed heap and non-heap grew %d MiB meanwhile;"
            + " growth net of it %d MiB (limit 16 MiB; the leaky tasks left %d MiB of Go batches"
            + " open)%n",
        before / MIB,
        TASKS,
        afterLeaky / MIB,
        rounds * TASKS,
        after / MIB,
        jvmGrowth / MIB,
        growth / MIB,
        TASKS * ROWS * 8L / MIB);
    assertTrue(
        growth <= 16 * MIB,
        "RSS grew by "
            + growth / MIB
            + " MiB (net of the JVM's own growth) over "
            + TASKS
            + " leaky and "
            + rounds * TASKS
            + " clean tasks");
  }
}
