package org.nativepool.spark.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.jni.ArrowProcessStats;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.testing.ArrowTask;

/**
 * Batches left unreleased at task end are reported — naming the consumer and, with allocation sites
 * on, the Go function that allocated them — and released, so Spark gets every byte back before its
 * own leak check.
 */
class ArrowLeakTest {
  private static final long MIB = ArrowTask.MIB;

  @BeforeAll
  static void load() {
    Natives.ensureLoaded();
  }

  @AfterEach
  void sitesOff() {
    GoAllocators.configure(false);
  }

  @Test
  void aGoBatchLeftAtTaskEndIsReportedWithItsAllocatingFunctionAndReleased() {
    GoAllocators.configure(true);
    ArrowTask task = new ArrowTask(9101, 64 * MIB);
    ArrowProcessStats before = GoAllocators.processStats();
    Reservation op = task.arrows.newNativeReservation("leaky-op");
    GoBatch leaked;
    try (VectorSchemaRoot src = ArrowTask.longs(task.arrows.producer(), 1, 4096);
        GoBatch in = GoBatch.importFrom(op, src, task.arrows.producer())) {
      leaked = in.copy(op);
    }
    long goBytes = GoAllocators.stats(op).allocated();
    assertTrue(goBytes >= 4096 * 8, "the copy is charged to Go");
    assertEquals(goBytes, task.sparkFigure());
    assertEquals(before.liveBatches() + 1, GoAllocators.processStats().liveBatches());

    assertEquals(0, task.finish(), "the task end gave every byte back to Spark");

    List<String> reports = task.arrows.leakReports();
    assertEquals(1, reports.size(), reports::toString);
    String report = reports.get(0);
    assertTrue(report.startsWith("ffi: leaky-op#"), report);
    assertTrue(report.contains(" leaked 1 buffers ("), report);
    assertTrue(
        report.contains(
            " from org.nativepool.spark.arrow.ArrowLeakTest."
                + "aGoBatchLeftAtTaskEndIsReportedWithItsAllocatingFunctionAndReleased (ArrowLeakTest.java:"),
        "names the Java caller of the copy, not the bridge's copy function: " + report);
    assertTrue(report.contains("\nLEAK of "), "the full allocation stack follows: " + report);

    ArrowProcessStats after = GoAllocators.processStats();
    assertEquals(before.liveBatches(), after.liveBatches(), "the leaked batch was released");
    assertEquals(before.leaks() + 1, after.leaks());
    assertEquals(before.liveAllocators(), after.liveAllocators());
    IllegalStateException e = assertThrows(IllegalStateException.class, leaked::close);
    assertTrue(e.getMessage().endsWith(" is closed: stale handle"), e.getMessage());
  }

  @Test
  void aJavaBatchLeftAtTaskEndLingersWithItsTaskUntilALateCloseFreesIt() {
    ArrowTask task = new ArrowTask(9102, 64 * MIB);
    long lingeringBefore = TaskArrowAllocators.lingeringBytes();
    VectorSchemaRoot leaked = ArrowTask.longs(task.arrows.producer(), 1, 4096);
    long javaBytes = task.arrows.producer().getAllocatedMemory();
    assertEquals(javaBytes, task.sparkFigure());

    assertEquals(0, task.finish(), "the Java reservation returned the leaked bytes to Spark");

    List<String> reports = task.arrows.leakReports();
    assertEquals(1, reports.size(), reports::toString);
    assertTrue(reports.get(0).startsWith("Memory was leaked by query."), reports.get(0));
    assertTrue(reports.get(0).contains("Java producer allocator of task 9102"), reports.get(0));
    assertEquals(lingeringBefore + javaBytes, TaskArrowAllocators.lingeringBytes());
    assertTrue(
        TaskArrowAllocators.lingering().stream().anyMatch(l -> l.startsWith("task 9102: ")),
        TaskArrowAllocators.lingering()::toString);

    leaked.close(); // late: frees the memory, throws nothing, gives nothing back twice
    assertEquals(lingeringBefore, TaskArrowAllocators.lingeringBytes());
    assertTrue(
        TaskArrowAllocators.lingering().stream().noneMatch(l -> l.startsWith("task 9102: ")),
        TaskArrowAllocators.lingering()::toString);
    assertEquals(0, task.arrows.producer().getAllocatedMemory());
    assertEquals(1, task.arrows.listener().lateReleases());
    assertEquals(0, task.sparkFigure());
    assertEquals(0, task.up.used());
  }

  @Test
  void aGoBatchExportedToJavaAndLeftOpenAtTaskEndIsFreedAndALateCloseIsANoOp() {
    ArrowTask task = new ArrowTask(9104, 64 * MIB);
    ArrowProcessStats before = GoAllocators.processStats();
    Reservation op = task.arrows.newNativeReservation("exporter");
    GoBatch go;
    try (VectorSchemaRoot src = ArrowTask.longs(task.arrows.producer(), 1, 4096);
        GoBatch in = GoBatch.importFrom(op, src, task.arrows.producer())) {
      go = in.copy(op);
    }
    VectorSchemaRoot inJava = go.exportTo(task.arrows.importer());
    go.close();
    assertEquals(ArrowTask.sumOf(1, 4096), ArrowTask.sum(inJava));
    assertTrue(task.sparkFigure() > 0, "Go charges the export");

    assertEquals(0, task.finish());

    List<String> reports = task.arrows.leakReports();
    assertEquals(1, reports.size(), reports::toString);
    assertTrue(reports.get(0).contains("1 Go batch(es) exported to Java ("), reports.get(0));
    assertTrue(reports.get(0).endsWith("were still open at task end; closed, their Go buffers freed"));
    assertEquals(0, inJava.getVector(0).getBufferSize(), "the task end closed the root");
    assertEquals(0, inJava.getVector(0).getValueCount());
    assertEquals(0, task.arrows.importer().getAllocatedMemory());
    ArrowProcessStats after = GoAllocators.processStats();
    assertEquals(before.leaks(), after.leaks(), "freed before the Go allocator closed: no leak");
    assertEquals(before.liveBatches(), after.liveBatches());
    inJava.close(); // late: a no-op, no exception, nothing freed twice
    assertEquals(0, task.sparkFigure());
  }

  @Test
  void aJavaBatchHeldByALeakedGoImportIsReleasedWhenGoReleasesIt() {
    ArrowTask task = new ArrowTask(9103, 64 * MIB);
    Reservation op = task.arrows.newNativeReservation("holds-java");
    VectorSchemaRoot src = ArrowTask.longs(task.arrows.producer(), 1, 4096);
    GoBatch held = GoBatch.importFrom(op, src, task.arrows.producer());
    src.close();
    assertTrue(task.arrows.producer().getAllocatedMemory() > 0, "Go holds Java's buffers");

    assertEquals(0, task.finish());

    List<String> reports = task.arrows.leakReports();
    assertEquals(
        1, reports.size(), "Go reports the import; Java's allocator was clean: " + reports);
    assertTrue(reports.get(0).contains(", 1 imported batches ("), reports.get(0));
    assertTrue(reports.get(0).startsWith("ffi: holds-java#"), reports.get(0));
    assertEquals(0, task.arrows.listener().lateReleases(), "released before Java closed");
    assertThrows(IllegalStateException.class, held::close);
  }
}
