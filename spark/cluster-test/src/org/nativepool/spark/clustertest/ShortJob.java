package org.nativepool.spark.clustertest;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.memory.TaskPool;

/**
 * A job shorter than one sampling period, as an operator's first try is ({@code make
 * test-lost-executor}, spark/cluster-test/lost-executor.sh): one stage whose tasks each hold a
 * little native memory for a second and a half, on executors that report at Spark's default rates
 * (a sample every 10 s heartbeat, one in the event log a minute). The Native Memory page must
 * still draw each executor's chart, from the samples executors send at their start and at task
 * ends, which the driver posts beyond its timer.
 *
 * <p>The driver prints {@code JOB <milliseconds>} (the job's length), then {@code READY <appId>},
 * then waits (at most two minutes) for {@code <runDir>/release-short} before stopping, so that the
 * test can load the live page. Arguments: {@code <runDir> <partitions>}.
 */
public final class ShortJob {
  private static final long MIB = 1L << 20;

  /** How long each task holds its native memory. */
  private static final long TASK_MS = 1_500;

  private ShortJob() {}

  /**
   * Runs the job; see the class comment.
   *
   * @param args {@code <runDir> <partitions>}
   * @throws Exception if the job fails or the release wait is interrupted
   */
  public static void main(String[] args) throws Exception {
    String runDir = args[0];
    int partitions = Integer.parseInt(args[1]);
    SparkSession spark = SparkSession.builder().appName("nativepool-short-job").getOrCreate();
    try {
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      List<Integer> seeds = new ArrayList<>();
      for (int i = 0; i < partitions; i++) {
        seeds.add(i);
      }
      long t0 = System.nanoTime();
      List<String> executors =
          jsc.parallelize(seeds, partitions).mapPartitions(ShortJob::task).collect();
      System.out.println("JOB " + (System.nanoTime() - t0) / 1_000_000 + " ms on " + executors);
      System.out.println("READY " + spark.sparkContext().applicationId());
      System.out.flush();
      Path release = Paths.get(runDir, "release-short");
      long deadline = System.nanoTime() + 120_000_000_000L;
      while (!Files.exists(release) && System.nanoTime() < deadline) {
        Thread.sleep(200);
      }
    } finally {
      spark.stop();
    }
  }

  /** One task: 8 MiB of native memory held for {@value #TASK_MS} ms; returns its executor. */
  private static Iterator<String> task(Iterator<Integer> seeds) throws InterruptedException {
    seeds.next();
    try (TaskPool pool = TaskPool.openForCurrentTask();
        Reservation r = pool.newReservation("short-job", false, null)) {
      if (!r.tryGrow(8 * MIB)) {
        throw new IllegalStateException("native grow refused: " + r.lastRefusal());
      }
      Thread.sleep(TASK_MS);
      r.shrink(r.size());
    }
    return List.of(SparkEnv.get().executorId()).iterator();
  }
}
