package org.nativepool.spark.yarntest;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.nativepool.spark.arrow.TaskArrowAllocators;
import org.nativepool.spark.config.ContainerSize;
import org.nativepool.spark.example.NativeSort;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.ProcessStat;

/**
 * make test-yarn's job (run.sh): the demo's native sort (examples/spark, NativeSort over
 * libnativesort.so) in every task, and in the first attempt of partition 0 a burst of memory
 * nobody accounts for, direct buffers on a thread of the task, while the sort holds native memory.
 *
 * <p>The burst is sized from the container: once the executor's native pools reserve {@code
 * trigger} bytes (held by the sort), the task stops feeding the sort while a thread takes the
 * container's headroom (the container size Spark computed less the JVM's resident memory) less 32
 * MiB, over sixteen seconds; then the sort takes the rest of its input, growing towards its share
 * of the off-heap pool, while the burst is held, until the input is all in. Unless native memory
 * gives way, the container outgrows its size and YARN's NodeManager kills it; with the pod guard,
 * the sort's borrows wait and it spills, and the container stays under it.
 * The partition's retry (attempt 1, on a new container) takes no burst, so the job always
 * completes; each task checks that its sorted output is ordered and holds every input row.
 *
 * <p>Usage: {@code YarnSortJob <run dir> <partitions> <rows per partition> <trigger bytes>}.
 * Prints {@code RESULT partition=… attempt=… executor=… rows=… ordered=… complete=… burst=…} per
 * partition and {@code READY <application id>}, then waits for {@code <run dir>/release} (at most
 * ten minutes) before it stops, so that the live UI can be read.
 */
public final class YarnSortJob {
  private YarnSortJob() {}

  private static final int BATCH = 1 << 16;

  /** Runs the job; see the class comment. */
  public static void main(String[] args) throws Exception {
    Path run = Path.of(args[0]);
    int partitions = Integer.parseInt(args[1]);
    long rows = Long.parseLong(args[2]);
    long trigger = Long.parseLong(args[3]);
    SparkSession spark = SparkSession.builder().appName("nativepool-yarn-sort").getOrCreate();
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    List<Integer> ids = new ArrayList<>();
    for (int i = 0; i < partitions; i++) {
      ids.add(i);
    }
    List<String> results =
        jsc.parallelize(ids, partitions).map(p -> sortPartition(p, rows, trigger)).collect();
    for (String r : results) {
      System.out.println("RESULT " + r);
    }
    System.out.println("READY " + spark.sparkContext().applicationId());
    System.out.flush();
    Path release = run.resolve("release");
    for (int i = 0; i < 1200 && !Files.exists(release); i++) {
      Thread.sleep(500);
    }
    spark.stop();
  }

  /** One task: sorts {@code rows} generated rows natively, bursting in attempt 0 of partition 0. */
  static String sortPartition(int partition, long rows, long trigger) throws Exception {
    TaskContext ctx = TaskContext.get();
    boolean burst = partition == 0 && ctx.attemptNumber() == 0;
    TaskArrowAllocators arrows = TaskArrowAllocators.forCurrentTask();
    BufferAllocator producer = arrows.producer();
    NativeSort sort = NativeSort.open("yarn-sort", 0, null);
    Schema schema =
        new Schema(
            Arrays.asList(
                new Field("key", FieldType.notNullable(new ArrowType.Int(64, true)), null),
                new Field("payload", FieldType.notNullable(new ArrowType.Int(64, true)), null)));
    long inXor = 0;
    Burst b = null;
    try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, producer)) {
      BigIntVector key = (BigIntVector) root.getVector(0);
      BigIntVector payload = (BigIntVector) root.getVector(1);
      for (long done = 0; done < rows; ) {
        int n = (int) Math.min(BATCH, rows - done);
        key.allocateNew(n);
        payload.allocateNew(n);
        for (int i = 0; i < n; i++) {
          long id = done + i;
          long k = mix(id * 1_000_003L + partition);
          key.set(i, k);
          payload.set(i, id);
          inXor ^= k * 31 + id;
        }
        root.setRowCount(n);
        sort.push(root, producer);
        done += n;
        if (burst && b == null && Natives.processStats().get(ProcessStat.RESERVED) >= trigger) {
          b = Burst.start(Natives.processStats().get(ProcessStat.RESERVED));
          b.awaitHeld();
        }
      }
    }
    if (b != null) {
      b.release();
    }
    sort.finish();
    long outRows = 0;
    long outXor = 0;
    long last = Long.MIN_VALUE;
    boolean ordered = true;
    for (VectorSchemaRoot out = sort.next(arrows.importer());
        out != null;
        out = sort.next(arrows.importer())) {
      try (VectorSchemaRoot r = out) {
        BigIntVector key = (BigIntVector) r.getVector(0);
        BigIntVector payload = (BigIntVector) r.getVector(1);
        for (int i = 0; i < r.getRowCount(); i++) {
          long k = key.get(i);
          ordered &= k >= last;
          last = k;
          outXor ^= k * 31 + payload.get(i);
        }
        outRows += r.getRowCount();
      }
    }
    sort.close();
    return "partition="
        + partition
        + " attempt="
        + ctx.attemptNumber()
        + " executor="
        + SparkEnv.get().executorId()
        + " rows="
        + outRows
        + " ordered="
        + ordered
        + " complete="
        + (outRows == rows && outXor == inXor)
        + " burst="
        + (b == null ? 0 : b.bytes);
  }

  /** A 64-bit mix (splitmix64's finalizer): keys in no order. */
  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  /** Direct buffers taken by a thread of their own, held, then freed; see the class comment. */
  static final class Burst implements Runnable {
    private static final int STEP = 16 << 20;
    final long bytes;
    private final Thread thread;

    private Burst(long bytes) {
      this.bytes = bytes;
      this.thread = new Thread(this, "yarn-test-burst");
    }

    /** How long the burst takes to grow. */
    private static final long RAMP_MILLIS = 16_000;

    private final CountDownLatch grown = new CountDownLatch(1);
    private final CountDownLatch released = new CountDownLatch(1);

    /** Starts a burst of the container's headroom less 32 MiB ({@code held}: for the log). */
    static Burst start(long held) throws IOException {
      long limit = ContainerSize.bytes(SparkEnv.get().conf());
      long resident = vmRss();
      Burst b = new Burst(Math.max(STEP, limit - resident - (32L << 20)));
      System.err.printf(
          "yarn-test: burst of %d MiB: container %d MiB, JVM resident %d MiB, native held %d MiB%n",
          b.bytes >> 20, limit >> 20, resident >> 20, held >> 20);
      b.thread.start();
      return b;
    }

    /** Waits until the burst has all its bytes. */
    void awaitHeld() throws InterruptedException {
      grown.await();
    }

    /** Frees the burst's bytes and waits until they are. */
    void release() throws InterruptedException {
      released.countDown();
      thread.join();
    }

    @Override
    public void run() {
      List<ByteBuffer> held = new ArrayList<>();
      try {
        long steps = Math.max(1, bytes / STEP);
        for (long i = 0; i < steps; i++) {
          held.add(ByteBuffer.allocateDirect(STEP)); // zeroed: every page touched
          Thread.sleep(RAMP_MILLIS / steps);
        }
        System.err.printf("yarn-test: burst of %d MiB held%n", bytes >> 20);
        grown.countDown();
        released.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        grown.countDown();
        for (ByteBuffer buf : held) {
          free(buf);
        }
        System.err.println("yarn-test: burst freed");
      }
    }

    private static void free(ByteBuffer buf) {
      try {
        java.lang.reflect.Field f = Class.forName("sun.misc.Unsafe").getDeclaredField("theUnsafe");
        f.setAccessible(true);
        Object unsafe = f.get(null);
        unsafe.getClass().getMethod("invokeCleaner", ByteBuffer.class).invoke(unsafe, buf);
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException("cannot free a direct buffer", e);
      }
    }

    private static long vmRss() {
      try {
        for (String l : Files.readAllLines(Path.of("/proc/self/status"), StandardCharsets.UTF_8)) {
          if (l.startsWith("VmRSS:")) {
            return Long.parseLong(l.replaceAll("[^0-9]", "")) << 10;
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      throw new IllegalStateException("no VmRSS");
    }
  }
}
