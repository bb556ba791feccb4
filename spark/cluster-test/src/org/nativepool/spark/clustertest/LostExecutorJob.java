package org.nativepool.spark.clustertest;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.memory.TaskPool;

/**
 * The application {@code make test-lost-executor} submits (spark/cluster-test/lost-executor.sh): a
 * stage whose tasks each hold a little native memory for a few seconds, on two executors, one of
 * which runs in a memory cgroup sized like a pod. The first task that finds itself in that cgroup
 * takes memory nobody accounts for: direct buffers ({@code ByteBuffer.allocateDirect} zeroes, so
 * every page is touched), up to three times the headroom the cgroup has left, quickly at first,
 * then slowly near the limit (so that the executor's last samples before the kill show it there),
 * until the kernel kills the executor. Spark retries the lost tasks on the other executor and the
 * job completes.
 *
 * <p>The burst happens once per run: its task creates {@code <runDir>/burst-started} first, and
 * a task that finds the file does not burst (the executor the Master starts in place of the killed
 * one runs in the same cgroup).
 *
 * <p>The driver prints one {@code RESULT} line per task, then {@code READY <appId>}, then waits
 * (at most four minutes) for {@code <runDir>/release} before stopping, so that the test can query
 * the live UI. A failed job exits with status 1 ({@code JOB FAILED: ...} on stderr).
 *
 * <p>Arguments: {@code <runDir> <cgroup dir> <partitions>}.
 */
public final class LostExecutorJob {
  private static final long MIB = 1L << 20;

  /** Native memory each task holds while it runs. */
  private static final long NATIVE = 16 * MIB;

  /** How long each task runs, so that both executors report samples. */
  private static final long TASK_MS = 6_000;

  private LostExecutorJob() {}

  /**
   * Runs the job; see the class comment.
   *
   * @param args {@code <runDir> <cgroup dir> <partitions>}
   * @throws Exception if the release wait is interrupted
   */
  public static void main(String[] args) throws Exception {
    String runDir = args[0];
    String cgroup = args[1];
    int partitions = Integer.parseInt(args[2]);
    SparkSession spark =
        SparkSession.builder().appName("nativepool-lost-executor-test").getOrCreate();
    int rc = 0;
    try {
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      List<Integer> seeds = new ArrayList<>();
      for (int i = 0; i < partitions; i++) {
        seeds.add(i);
      }
      List<String> lines;
      try {
        lines =
            jsc.parallelize(seeds, partitions)
                .mapPartitions(it -> task(it, runDir, cgroup))
                .collect();
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
      Path release = Paths.get(runDir, "release");
      long deadline = System.nanoTime() + 240_000_000_000L;
      while (!Files.exists(release) && System.nanoTime() < deadline) {
        Thread.sleep(200);
      }
    } finally {
      spark.stop();
    }
    System.exit(rc);
  }

  /** One task; see the class comment. */
  private static Iterator<String> task(Iterator<Integer> seeds, String runDir, String cgroup)
      throws IOException, InterruptedException {
    TaskContext ctx = TaskContext.get();
    int seed = seeds.next();
    String executor = SparkEnv.get().executorId();
    TaskPool pool = TaskPool.openForCurrentTask();
    Reservation nat = pool.newReservation("lost-executor-test", false, null);
    for (long grown = 0; grown < NATIVE; grown += MIB) {
      if (!nat.tryGrow(MIB)) {
        throw new IllegalStateException("native grow refused: " + nat.lastRefusal());
      }
    }
    // let both executors report samples before anything happens
    Thread.sleep(TASK_MS);
    if (inCgroup(cgroup) && claimBurst(runDir)) {
      burst(Paths.get(cgroup)); // does not return: the kernel kills the executor
    }
    nat.shrink(nat.size());
    nat.close();
    return List.of(
            "RESULT partition="
                + seed
                + " attempt="
                + ctx.attemptNumber()
                + " executor="
                + executor)
        .iterator();
  }

  /** Whether this JVM runs in the memory cgroup {@code dir} (a v1 group's directory). */
  private static boolean inCgroup(String dir) throws IOException {
    String name = Paths.get(dir).getFileName().toString();
    for (String line : Files.readAllLines(Paths.get("/proc/self/cgroup"))) {
      if (line.contains(":memory:") && line.endsWith("/" + name)) {
        return true;
      }
    }
    return false;
  }

  /** Creates {@code burst-started}: true for the one task that bursts in a run. */
  private static boolean claimBurst(String runDir) throws IOException {
    try {
      Files.createFile(Paths.get(runDir, "burst-started"));
      return true;
    } catch (FileAlreadyExistsException e) {
      return false;
    }
  }

  private static long readLong(Path p) throws IOException {
    return Long.parseLong(Files.readString(p).trim());
  }

  /**
   * Direct buffers up to three times the cgroup's headroom: 8 MiB every 200 ms below 85% of the
   * limit, 4 MiB every 400 ms above it.
   */
  private static void burst(Path cgroup) throws IOException, InterruptedException {
    long limit = readLong(cgroup.resolve("memory.limit_in_bytes"));
    long usage = readLong(cgroup.resolve("memory.usage_in_bytes"));
    long target = 3 * (limit - usage);
    System.err.printf(
        "lost-executor-test: burst of %d MiB of direct buffers: limit %d MiB, usage %d MiB%n",
        target / MIB, limit / MIB, usage / MIB);
    List<ByteBuffer> held = new ArrayList<>();
    long taken = 0;
    while (taken < target) {
      boolean near = readLong(cgroup.resolve("memory.usage_in_bytes")) > limit * 85 / 100;
      long step = near ? 4 * MIB : 8 * MIB;
      held.add(ByteBuffer.allocateDirect((int) step));
      taken += step;
      Thread.sleep(near ? 400 : 200);
    }
    System.err.println("lost-executor-test: burst of " + taken / MIB + " MiB held, not killed");
    Thread.sleep(60_000);
    throw new IllegalStateException(
        "lost-executor-test: " + taken / MIB + " MiB over the limit and not killed");
  }
}
