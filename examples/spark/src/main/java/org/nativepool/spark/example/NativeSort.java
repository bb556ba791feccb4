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
import org.nativepool.spark.memory.TaskPool;

/**
 * One Go external sort ({@code examples/sort}) inside a Spark task: its consumer is registered in
 * the task's native pool, so it borrows from the task's {@code TaskMemoryManager}, spills on its
 * own when the pool refuses a buffer, and spills when Spark asks the task's native consumer for
 * memory.
 *
 * <p>Batches cross the Arrow C Data Interface both ways, and the producer pays ({@code
 * ffi/doc.go}): {@link #push} exports Java's batch, Go copies the rows and releases it before the
 * call returns, so the Java allocator that made it is charged only meanwhile; {@link #next}
 * imports Go's sorted batch, which stays charged to the sorter until the returned root is closed,
 * so the importing allocator must not charge the pool again.
 *
 * <p>Created by {@link #open}, owned by the caller, closed by {@link #close()} or, at the latest, by
 * a task completion listener that runs before the task's pool closes. One thread drives it at a
 * time ({@link #push}, {@link #finish}, {@link #next}); {@link #stats()} may be called from any
 * thread. {@link #close()} during another call throws instead of freeing under it.
 */
public final class NativeSort implements AutoCloseable {
  private static final int CLOSED = -1;

  private final long handle;
  private final String name;
  /** Calls in flight, or {@link #CLOSED}. */
  private final AtomicInteger state = new AtomicInteger();

  private NativeSort(long handle, String name) {
    this.handle = handle;
    this.name = name;
  }

  /**
   * Opens a sorter on the native pool of the task running on this thread, which must be open
   * ({@link TaskPool#openForCurrentTask()}, or the task's {@code TaskArrowAllocators}), and
   * registers a completion listener that closes it (before the pool's own listener: listeners run
   * in reverse order).
   *
   * @param name the consumer name in the pool's refusal and leak reports
   * @param batchRows rows per output (and spill) batch; 0 for the Go default (8192)
   * @param tempDir where the sorter makes its private run directory; null for the system default
   * @throws IllegalStateException if this is not a task thread or the task has no open pool
   */
  public static NativeSort open(String name, int batchRows, String tempDir) {
    Objects.requireNonNull(name, "name");
    if (batchRows < 0) {
      throw new IllegalArgumentException("nativesort: batchRows " + batchRows + " < 0");
    }
    TaskContext ctx = TaskContext.get();
    if (ctx == null) {
      throw new IllegalStateException(
          "nativesort: no TaskContext on thread '" + Thread.currentThread().getName() + "'");
    }
    SortBridge.ensureLoaded();
    long h =
        SortBridge.create0(ctx.taskAttemptId(), name, batchRows, tempDir == null ? "" : tempDir);
    NativeSort s = new NativeSort(h, name);
    ctx.addTaskCompletionListener((TaskCompletionListener) c -> s.close());
    return s;
  }

  /**
   * Sorts the rows of {@code root} (columns {@code key} and {@code payload}, both non-null
   * {@code BIGINT}) in with the rest. The C structs and the export's bookkeeping come from {@code
   * producer}; {@code root}'s buffers are back to their sole owner when this returns.
   *
   * @throws RuntimeException if the batch does not fit in the pool even with everything spilled,
   *     or a spill failed (the Go message)
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
        SortBridge.push0(handle, arr.memoryAddress(), schema.memoryAddress());
      } finally {
        arr.release(); // no-ops once Go took them (moved); else they free the export
        schema.release();
      }
    } finally {
      exit();
    }
  }

  /**
   * Ends the input: from now on {@link #next} returns the sorted rows.
   *
   * @throws IllegalStateException if closed
   */
  public void finish() {
    enter();
    try {
      SortBridge.finish0(handle);
    } finally {
      exit();
    }
  }

  /**
   * The next sorted batch (at most the sorter's batch rows), or null after the last. Close the
   * returned root: until then its buffers are charged to the sorter's reservation.
   *
   * @param importer tracks the Go-made buffers without charging the pool (they are charged to the
   *     sorter already), e.g. {@code TaskArrowAllocators.importer()}
   * @throws IllegalArgumentException if {@code importer} charges the pool
   * @throws IllegalStateException if closed, or called before {@link #finish}
   */
  public VectorSchemaRoot next(BufferAllocator importer) {
    Objects.requireNonNull(importer, "importer");
    if (importer.getListener() instanceof PoolAllocationListener) {
      throw new IllegalArgumentException(
          "nativesort: importing sorted batches into "
              + importer.getName()
              + ", which charges the pool: the sorter charges these bytes already");
    }
    enter();
    try (ArrowArray arr = ArrowArray.allocateNew(importer);
        ArrowSchema schema = ArrowSchema.allocateNew(importer)) {
      if (!SortBridge.next0(handle, arr.memoryAddress(), schema.memoryAddress())) {
        return null;
      }
      try {
        // Arrow moves the array out of arr and releases and closes both structs.
        return Data.importVectorSchemaRoot(importer, arr, schema, null);
      } catch (RuntimeException e) {
        releaseQuietly(arr, schema); // the Go export, unless the import took it already
        throw e;
      }
    } finally {
      exit();
    }
  }

  /**
   * The sorter's figures now.
   *
   * @throws IllegalStateException if closed
   */
  public SortStats stats() {
    enter();
    try {
      return new SortStats(SortBridge.stats0(handle));
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
   * Releases everything the sorter holds and removes its run files; idempotent.
   *
   * @throws IllegalStateException if another call on this sorter is in flight (nothing is
   *     closed), or a sorted batch was not closed (its charge has been released anyway; the
   *     message is the Go leak report)
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
            "nativesort: sorter '" + name + "' is in use by " + s + " call(s); not closed");
      }
      if (state.compareAndSet(0, CLOSED)) {
        break;
      }
    }
    SortBridge.close0(handle);
  }

  /** Releases structs that may be released or closed already; errors are suppressed. */
  private static void releaseQuietly(ArrowArray arr, ArrowSchema schema) {
    try {
      arr.release();
    } catch (RuntimeException ignored) {
      // closed by the import: it took the data
    }
    try {
      schema.release();
    } catch (RuntimeException ignored) {
      // closed by the import
    }
  }

  private void enter() {
    for (; ; ) {
      int s = state.get();
      if (s == CLOSED) {
        throw new IllegalStateException("nativesort: sorter '" + name + "' is closed");
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
    return "NativeSort(" + name + (isClosed() ? ", closed)" : ")");
  }
}
