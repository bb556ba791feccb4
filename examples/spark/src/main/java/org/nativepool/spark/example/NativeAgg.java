package org.nativepool.spark.example;

import java.util.Objects;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;

/**
 * One partition's streaming aggregation for one micro-batch, inside a Spark task ({@code
 * examples/spark/native/agg.go}): a count and a sum of values by key, whose consumer is registered
 * in the task's native pool, so it borrows from the task's {@code TaskMemoryManager}, spills on its
 * own when the pool refuses it memory, and spills when Spark asks the task's native consumer for
 * memory. Its state lives on disk between micro-batches: version {@code v} is written from version
 * {@code v - 1} and the micro-batch's rows, so nothing native outlives the task.
 *
 * <p>The C Data Interface's crossings, ownership and closing: {@link NativeOperator}.
 */
public final class NativeAgg extends NativeOperator {
  private NativeAgg(long handle, String name) {
    super(handle, name, "nativeagg", "aggregation");
  }

  /**
   * Opens an aggregation of micro-batch {@code version} on the native pool of the task running on
   * this thread, which must be open (the task's {@code TaskArrowAllocators}), and registers a
   * completion listener that closes it.
   *
   * @param name the consumer name in the pool's refusals, leak reports and the ledger's owners
   * @param version the micro-batch: state version {@code version - 1} must be in {@code stateDir}
   *     when {@code version > 0}
   * @param stateDir the partition's state directory
   * @param tempDir where the aggregation makes its private run directory; null for the default
   * @param batchRows rows per output batch; 0 for the Go default (8192)
   * @param allocationSites whether the Go allocator records allocation sites (as {@code
   *     spark.nativepool.allocationSites} does for the bridge's)
   * @param retainBytes the planted leak: bytes kept after each commit, for the life of the process;
   *     0 for none
   * @throws IllegalStateException if this is not a task thread, the task has no open pool, or the
   *     previous state version is missing
   */
  public static NativeAgg open(
      String name,
      long version,
      String stateDir,
      String tempDir,
      int batchRows,
      boolean allocationSites,
      long retainBytes) {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(stateDir, "stateDir");
    if (version < 0 || batchRows < 0 || retainBytes < 0) {
      throw new IllegalArgumentException(
          "nativeagg: version "
              + version
              + ", batchRows "
              + batchRows
              + ", retainBytes "
              + retainBytes
              + ": each must be >= 0");
    }
    TaskContext ctx = TaskContext.get();
    if (ctx == null) {
      throw new IllegalStateException(
          "nativeagg: no TaskContext on thread '" + Thread.currentThread().getName() + "'");
    }
    AggBridge.ensureLoaded();
    long h =
        AggBridge.create0(
            ctx.taskAttemptId(),
            name,
            version,
            stateDir,
            tempDir == null ? "" : tempDir,
            batchRows,
            allocationSites,
            retainBytes);
    NativeAgg a = new NativeAgg(h, name);
    ctx.addTaskCompletionListener((TaskCompletionListener) c -> a.close());
    return a;
  }

  /**
   * The aggregation's figures now.
   *
   * @throws IllegalStateException if closed
   */
  public AggStats stats() {
    enter();
    try {
      return new AggStats(AggBridge.stats0(handle));
    } finally {
      exit();
    }
  }

  @Override
  void push0(long handle, long array, long schema) {
    AggBridge.push0(handle, array, schema);
  }

  @Override
  void finish0(long handle) {
    AggBridge.finish0(handle);
  }

  @Override
  boolean next0(long handle, long array, long schema) {
    return AggBridge.next0(handle, array, schema);
  }

  @Override
  void close0(long handle) {
    AggBridge.close0(handle);
  }
}
