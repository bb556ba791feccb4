package org.nativepool.spark.ledger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nativepool.spark.arrow.GoBatch;
import org.nativepool.spark.arrow.TaskArrowAllocators;
import org.nativepool.spark.config.LedgerSettings;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.testing.ArrowTask;
import org.nativepool.spark.testing.LocalSpark;

/**
 * The growth detector against a real {@code local[2]} Spark 4.1 with the plugin's defaults (25
 * tasks per window, 4 windows, 16 MiB), told a leak from JVM warm-up: 1,000 clean tasks produce no
 * report (after 400 whose reports of the JVM's own parts, JIT warm-up, are not counted); then tasks
 * that each leave 256 KiB of Go memory behind — a batch copied in Go by the consumer {@value
 * #CONSUMER} and exported to a cache that never lets go, the "hidden reference" kind of leak —
 * produce a report naming the part, the consumer and (allocation sites on) the method that made the
 * copy, within the first 200 of them.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
@Timeout(value = 600, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class LedgerGrowthSparkTest {
  private static final String CONSUMER = "LeakyCacheOperator";

  /** Clean tasks run before the measured ones, while the JIT compiles their code. */
  private static final int WARM_UP_TASKS = 400;

  /** 32,768 longs: 256 KiB of values per batch. */
  private static final int ROWS = 32 * 1024;

  private static SparkSession spark;
  private static JavaSparkContext jsc;
  private static final AtomicLong tasksEnded = new AtomicLong();
  private static final List<GrowthReportEvent> reports = new CopyOnWriteArrayList<>();

  /** The cache that never lets go: roots exported from Go, held across tasks. */
  private static final List<VectorSchemaRoot> CACHE =
      Collections.synchronizedList(new ArrayList<>());

  private static RootAllocator cacheAllocator;

  @BeforeAll
  static void startSpark() {
    cacheAllocator = new RootAllocator();
    spark =
        LocalSpark.builder("local[2]", "LedgerGrowthSparkTest", "128m")
            .config("spark.executor.heartbeatInterval", "1s")
            .config("spark.nativepool.allocationSites", "true")
            .getOrCreate();
    jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    spark
        .sparkContext()
        .addSparkListener(
            new SparkListener() {
              @Override
              public void onTaskEnd(SparkListenerTaskEnd e) {
                tasksEnded.incrementAndGet();
              }

              @Override
              public void onOtherEvent(SparkListenerEvent event) {
                if (event instanceof GrowthReportEvent r) {
                  reports.add(r);
                }
              }
            });
  }

  @AfterAll
  static void stopSpark() {
    synchronized (CACHE) {
      CACHE.forEach(VectorSchemaRoot::close); // Go frees the lingering copies
      CACHE.clear();
    }
    LocalSpark.stop(spark);
    if (cacheAllocator != null) {
      cacheAllocator.close();
    }
  }

  /** A task: Java → Go → a Go copy → back to Java; the copy is released (clean) or cached. */
  private static Iterator<Long> task(boolean leak) {
    TaskArrowAllocators arrows = TaskArrowAllocators.forCurrentTask();
    Reservation op = arrows.newNativeReservation(CONSUMER);
    long sum;
    try (VectorSchemaRoot src = ArrowTask.longs(arrows.producer(), 1, ROWS);
        GoBatch in = GoBatch.importFrom(op, src, arrows.producer());
        GoBatch copy = in.copy(op)) {
      VectorSchemaRoot back = copy.exportTo(leak ? cacheAllocator : arrows.importer());
      sum = ArrowTask.sum(back);
      if (leak) {
        CACHE.add(back); // the hidden reference
      } else {
        back.close();
      }
    }
    return Collections.singletonList(sum).iterator();
  }

  /** Runs {@code n} one-row tasks and waits until the ledger has seen every task's end. */
  private static void runTasks(int n, boolean leak) throws InterruptedException {
    long expected = tasksEnded.get() + n;
    List<Long> sums =
        jsc.parallelize(IntStream.range(0, n).boxed().collect(Collectors.toList()), n)
            .mapPartitions(rows -> task(leak))
            .collect();
    assertEquals(n, sums.size());
    assertEquals(ArrowTask.sumOf(1, ROWS), sums.get(0));
    await("task ends", () -> tasksEnded.get() >= expected);
    await(
        "the ledger's task boundaries",
        () -> ExecutorLedger.current().taskBoundaries() >= expected);
  }

  private static void await(String what, BooleanSupplier done) throws InterruptedException {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (!done.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "timed out waiting for " + what);
      Thread.sleep(20);
    }
  }

  @Test
  void cleanTasksAreNotReportedAndALeakOf256KiBPerTaskIsNamedWithin200Tasks() throws Exception {
    ExecutorLedger ledger = ExecutorLedger.current();
    assertNotNull(ledger);
    assertEquals(LedgerSettings.defaults().growthWindow(), ledger.settings().growthWindow());

    // Warm-up: the suite's JVM has run other SparkContexts, and its JIT still compiles the tasks'
    // code, which grows the JVM's own native memory (jvm.native: compiler arenas) for a few hundred
    // tasks. A report of a JVM part during warm-up is the JVM's, not the tasks'; a report of any
    // other part fails the test here too.
    for (int i = 0; i < WARM_UP_TASKS / 100; i++) {
      runTasks(100, false);
    }
    assertTrue(
        reports.stream().allMatch(r -> r.getPart().startsWith("jvm.")),
        "warm-up tasks reported: " + reports);
    long warmedUp = ledger.taskBoundaries();
    for (int i = 0; i < 10; i++) {
      runTasks(100, false);
    }
    assertEquals(warmedUp + 1000, ledger.taskBoundaries(), "one boundary per task");
    // Under -Xcheck:jni (make test-java-checkjni), after the suite's other SparkContexts, the
    // JVM's own native memory was seen growing ~200 KiB per task for 100 tasks: the checking
    // mode's, not the tasks'. There only the JVM's parts may be reported.
    boolean checkJni =
        java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
            .anyMatch(a -> a.startsWith("-Xcheck:jni"));
    assertTrue(
        reports.stream()
            .filter(r -> r.getTaskCount() > warmedUp)
            .allMatch(r -> checkJni && r.getPart().startsWith("jvm.")),
        "clean tasks reported: " + reports);
    long cleanReports = reports.size();

    long before = ledger.taskBoundaries();
    GrowthReportEvent found = null;
    for (int i = 0; i < 20 && found == null; i++) {
      runTasks(50, true);
      found =
          reports.stream()
              .filter(r -> r.getPart().equals(LedgerReader.NATIVE_ALLOCATED))
              .findFirst()
              .orElse(null);
    }
    assertNotNull(found, "no report after 1,000 leaky tasks; reports: " + reports);
    long leakyTasks = found.getTaskCount() - before;
    assertTrue(leakyTasks <= 200, "reported after " + leakyTasks + " leaky tasks: " + found);
    assertTrue(found.getGrowth() >= 16 << 20, found::toString);
    String owner = found.getOwners().isEmpty() ? "" : found.getOwners().get(0);
    assertTrue(owner.startsWith(CONSUMER + " @ "), "the consumer first: " + found.getOwners());
    assertTrue(
        owner.contains(LedgerGrowthSparkTest.class.getName() + ".task"),
        "the method that made the copies: " + owner);
    assertTrue(
        reports.stream().skip(cleanReports).allMatch(r -> r.getTaskCount() > before),
        "only the leak is reported: " + reports);
    System.out.println(
        "nativepool growth report after " + leakyTasks + " leaky tasks: " + found.describe());
  }
}
