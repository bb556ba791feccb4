package org.nativepool.spark.clustertest;



import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.memory.MemoryConsumer;
import org.apache.spark.memory.MemoryMode;
import org.apache.spark.memory.TaskMemoryManager;
import org.apache.spark.sql.SparkSession;
import org.nativepool.spark.arrow.GoBatch;
import org.nativepool.spark.arrow.TaskArrowAllocators;
import org.nativepool.spark.jni.LibraryLoader;
import org.nativepool.spark.jni.PoolStats;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.memory.TaskPool;

/**
 * The application {@code make test-cluster} submits to a standalone cluster (its own jar; the
 * nativepool plugin jar is the only other jar). Each task:
 *
 * <ol>
 *   <li>opens the task's Arrow allocators and so its native pool ({@link
 *       TaskArrowAllocators#forCurrentTask()} over {@link TaskPool#openForCurrentTask()}),
 *   <li>moves a small Arrow batch into Go and back through the C Data Interface (arrow-c-data,
 *       which only the plugin jar supplies),
 *   <li>grows a spillable native reservation (a Java {@code Spiller}) to {@code NATIVE} bytes;
 *       its spill writes a {@code RUN}-byte run file and reports it ({@link TaskPool#reportSpill}),
 *       so the task's {@code diskBytesSpilled} counts it and its {@code memoryBytesSpilled} the
 *       bytes the spill released to Spark,
 *   <li>makes a Spark-side OFF_HEAP consumer ask for {@code PRESSURE} bytes, more than is left, so
 *       that Spark asks the native consumer to spill,
 * </ol>
 *
 * <p>and returns one {@code RESULT} line. The driver prints the lines, then {@code READY <appId>},
 * and, if given a release file, waits (at most two minutes) for it to exist before stopping, so
 * that the test can query the live UIs. A failed job exits with status 1 and the failure's
 * message on stderr ({@code JOB FAILED: ...}).
 *
 * <p>Arguments: {@code <partitions> [releaseFile]}.
 */
public final class ClusterJob {
  private static final long MIB = 1L << 20;
  private static final long NATIVE = 40 * MIB;
  private static final long PRESSURE = 48 * MIB;
  private static final int ROWS = 10_000;

  private ClusterJob() {}

  /**
   * Runs the job; see the class comment.
   *
   * @param args {@code <partitions> [releaseFile]}
   * @throws Exception if the release wait is interrupted
   */
  public static void main(String[] args) throws Exception {
    int partitions = Integer.parseInt(args[0]);
    Path release = args.length > 1 ? Paths.get(args[1]) : null;
    SparkSession spark = SparkSession.builder().appName("nativepool-cluster-test").getOrCreate();
    int rc = 0;
    try {
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      List<Integer> seeds = new ArrayList<>();
      for (int i = 0; i < partitions; i++) {
        seeds.add(i);
      }
      List<String> lines;
      try {
        lines = jsc.parallelize(seeds, partitions).mapPartitions(ClusterJob::task).collect();
      } catch (Exception e) { // SparkException (checked, thrown by Scala) when the job aborts
        System.err.println("JOB FAILED: " + e.getMessage());
        rc = 1;
        lines = Collections.emptyList();
      }
      for (String l : lines) {
        System.out.println(l);
      }
      System.out.println("READY " + spark.sparkContext().applicationId());
      System.out.flush();
      if (release != null) {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (!Files.exists(release) && System.nanoTime() < deadline) {
          Thread.sleep(200);
        }
      }
    } finally {
      spark.stop();
    }
    System.exit(rc);
  }

  /** Bytes of the run file a spill writes. */
  static final int RUN = 1 << 20;

  /** Writes (and removes) one run file of {@link #RUN} bytes; returns the bytes written. */
  private static long writeRun() {
    try {
      Path run = Files.createTempFile("nativepool-cluster-run-", ".bin");
      try {
        Files.write(run, new byte[RUN]);
        return Files.size(run);
      } finally {
        Files.deleteIfExists(run);
      }
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** One task's work; see the class comment. */
  private static Iterator<String> task(Iterator<Integer> seeds) throws IOException {
    TaskContext ctx = TaskContext.get();
    TaskArrowAllocators arrow = TaskArrowAllocators.forCurrentTask();
    TaskPool pool = arrow.pool();
    long arrowSum = arrowRoundTrip(arrow);

    AtomicInteger spillerCalls = new AtomicInteger();
    AtomicReference<Reservation> self = new AtomicReference<>();
    Reservation nat =
        pool.newReservation(
            "cluster-sort",
            true,
            target -> {
              // A sorter writing its run to disk: everything it holds is freed.
              spillerCalls.incrementAndGet();
              Reservation r = self.get();
              long freed = r.size();
              long written = writeRun();
              r.shrink(freed);
              pool.reportSpill(0, written); // memory: counted as the pool releases it to Spark
              return freed;
            });
    self.set(nat);
    for (long grown = 0; grown < NATIVE; grown += MIB) {
      if (!nat.tryGrow(MIB)) {
        throw new IllegalStateException("native grow refused: " + nat.lastRefusal());
      }
    }

    Pressure pressure = new Pressure(ctx.taskMemoryManager());
    long got = pressure.acquireMemory(PRESSURE);
    pressure.freeMemory(got);

    PoolStats s = pool.stats();
    String line =
        "RESULT executor="
            + SparkEnv.get().executorId()
            + " task="
            + ctx.taskAttemptId()
            + " source="
            + LibraryLoader.ensureLoaded(null).replace(' ', '_')
            + " spillRequests="
            + s.spillRequests()
            + " spillBytesFreed="
            + s.spillBytesFreed()
            + " spillerCalls="
            + spillerCalls.get()
            + " pressureGranted="
            + got
            + " arrowSum="
            + arrowSum;
    nat.close();
    while (seeds.hasNext()) {
      seeds.next();
    }
    return Collections.singletonList(line).iterator();
  }

  /**
   * Builds a batch of {@code ROWS} ints (0..ROWS-1) in the task's producer allocator, moves it into
   * Go, copies it there, exports the copy back to Java and returns the sum of what came back.
   */
  private static long arrowRoundTrip(TaskArrowAllocators arrow) {
    BufferAllocator producer = arrow.producer();
    Reservation res = arrow.newNativeReservation("cluster-arrow");
    try (IntVector v = new IntVector("n", producer)) {
      v.allocateNew(ROWS);
      for (int i = 0; i < ROWS; i++) {
        v.set(i, i);
      }
      v.setValueCount(ROWS);
      try (VectorSchemaRoot root = VectorSchemaRoot.of(v);
          GoBatch in = GoBatch.importFrom(res, root, producer);
          GoBatch copy = in.copy(res);
          VectorSchemaRoot back = copy.exportTo(arrow.importer())) {
        IntVector n = (IntVector) back.getVector(0);
        long sum = 0;
        for (int i = 0; i < back.getRowCount(); i++) {
          sum += n.get(i);
        }
        return sum;
      }
    }
  }

  /** A Spark-side OFF_HEAP consumer that cannot spill: it only makes memory scarce. */
  private static final class Pressure extends MemoryConsumer {
    Pressure(TaskMemoryManager tmm) {
      super(tmm, tmm.pageSizeBytes(), MemoryMode.OFF_HEAP);
    }

    @Override
    public long spill(long size, MemoryConsumer trigger) {
      return 0;
    }
  }
}
