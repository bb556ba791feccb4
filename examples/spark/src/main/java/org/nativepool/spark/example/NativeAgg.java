package org.nativepool.spark.example;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;
import org.nativepool.spark.arrow.PoolAllocationListener;

/**
 * One partition's streaming aggregation for one micro-batch, inside a Spark task ({@code
 * examples/spark/native/agg.go}): a count and a sum of values by key, whose consumer is registered
 * in the task's native pool, so it borrows from the task's {@code TaskMemoryManager}, spills on its
 * own when the pool refuses it memory, and spills when Spark asks the task's native consumer for
 * memory. Its state lives on disk between micro-batches: version {@code v} is written from version
 * {@code v - 1} and the micro-batch's rows, so nothing native outlives the task.
 *
 * <p>Batches cross the Arrow C Data Interface both ways and the producer pays ({@code
 * ffi/doc.go}): {@link #push} exports Java's batch, which Go adds to its groups and releases before
 * the call returns; {@link #next} imports Go's batch of updated groups, which stays charged to the
 * aggregation until the returned root is closed, so the importing allocator must not charge the pool
 * again.
 *
 * <p>Created by {@link #open}, owned by the caller, closed by {@link #close()} or, at the latest, by
 * a task completion listener that runs before the task's pool closes. One thread drives it at a
 * time; {@link #close()} during another call throws instead of freeing under it.
 */
public final class NativeAgg implements AutoCloseable {
  private static final int CLOSED = -1;

  private final long handle;
  private final String name;
  /** Calls in flight, or {@link #CLOSED}. */
  private final AtomicInteger state = new AtomicInteger();

  private NativeAgg(long handle, String name) {
    this.handle = handle;
    this.name = name;
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
          "nativeagg: version " + version + ", batchRows " + batchRows + ", retainBytes "
              + retainBytes + ": each must be >= 0");
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
   * Adds the rows of {@code root} (columns {@code key} and {@code value}, both non-null {@code
   * BIGINT}) to their groups. The C structs and the export's bookkeeping come from {@code producer};
   * {@code root}'s buffers are back to their sole owner when this returns.
   *
   * @throws RuntimeException if not even an empty table fits in the pool, or a spill failed
   * @throws IllegalStateException if closed or finished
   */
  public void push(VectorSchemaRoot root, BufferAllocator producer) {
    Objects.requireNonNull(root, "root");
    Objects.requireNonNull(producer, "producer");
    enter();
    try (ArrowArray arr = ArrowArray.allocateNew(producer);
        ArrowSchema schema = ArrowSchema.allocateNew(producer)) {
      Data.exportVectorSchemaRoot(producer, root, null, arr, schema);
      try {
        AggBridge.push0(handle, arr.memoryAddress(), schema.memoryAddress());
      } finally {
        arr.release(); // no-ops once Go took them (moved); else they free the export
        schema.release();
      }
    } finally {
      exit();
    }
  }

  /**
   * Ends the input: from now on {@link #next} returns the updated groups.
   *
   * @throws IllegalStateException if closed
   */
  public void finish() {
    enter();
    try {
      AggBridge.finish0(handle);
    } finally {
      exit();
    }
  }

  /**
   * The next batch of groups this micro-batch updated (columns {@code key}, {@code count}, {@code
   * sum}: their totals over every micro-batch so far), or null after the last, when the new state
   * version is committed. Close the returned root: until then its buffers are charged to the
   * aggregation's reservation.
   *
   * @param importer tracks the Go-made buffers without charging the pool, e.g. {@code
   *     TaskArrowAllocators.importer()}
   * @throws IllegalArgumentException if {@code importer} charges the pool
   * @throws IllegalStateException if closed, or called before {@link #finish}
   */
  public VectorSchemaRoot next(BufferAllocator importer) {
    Objects.requireNonNull(importer, "importer");
    if (importer.getListener() instanceof PoolAllocationListener) {
      throw new IllegalArgumentException(
          "nativeagg: importing into "
              + importer.getName()
              + ", which charges the pool: the aggregation charges these bytes already");
    }
    enter();
    try (ArrowArray arr = ArrowArray.allocateNew(importer);
        ArrowSchema schema = ArrowSchema.allocateNew(importer)) {
      if (!AggBridge.next0(handle, arr.memoryAddress(), schema.memoryAddress())) {
        return null;
      }
      try {
        return Data.importVectorSchemaRoot(importer, arr, schema, null);
      } catch (RuntimeException e) {
        try {
          arr.release();
        } catch (RuntimeException ignored) {
          // the import took it
        }
        try {
          schema.release();
        } catch (RuntimeException ignored) {
          // the import took it
        }
        throw e;
      }
    } finally {
      exit();
    }
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

  /** The consumer name. */
  public String name() {
    return name;
  }

  /** Whether {@link #close()} has run. */
  public boolean isClosed() {
    return state.get() == CLOSED;
  }

  /**
   * Releases everything the aggregation holds and removes its run files (and its new state
   * version, unless committed); idempotent.
   *
   * @throws IllegalStateException if another call on it is in flight (nothing is closed), or an
   *     output batch was not closed (its charge has been released anyway; the message is the Go
   *     leak report)
   */
  @Override
  public void close() {
    for (; ; ) {
      int s = state.get();
      if (s == CLOSED) {
        return;
      }
      if (s > 0) {
        throw new IllegalStateException(
            "nativeagg: aggregation '" + name + "' is in use by " + s + " call(s); not closed");
      }
      if (state.compareAndSet(0, CLOSED)) {
        break;
      }
    }
    AggBridge.close0(handle);
  }

  private void enter() {
    for (; ; ) {
      int s = state.get();
      if (s == CLOSED) {
        throw new IllegalStateException("nativeagg: aggregation '" + name + "' is closed");
      }
      if (state.compareAndSet(s, s + 1)) {
        return;
      }
    }
  }

  private void exit() {
    state.decrementAndGet();
  }

  @Override
  public String toString() {
    return "NativeAgg(" + name + (isClosed() ? ", closed)" : ")");
  }
}
