package org.nativepool.spark.example;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.nativepool.spark.arrow.PoolAllocationListener;

/**
 * What the demo's Go operators share on the Java side: a native handle driven through push, finish
 * and next, with batches crossing the Arrow C Data Interface both ways and the producer paying
 * ({@code ffi/doc.go}). {@link #push} exports Java's batch, which Go takes (copies or adds up) and
 * releases before the call returns, so the Java allocator that made it is charged only meanwhile;
 * {@link #next} imports Go's output batch, which stays charged to the operator's reservation until
 * the returned root is closed, so the importing allocator must not charge the pool again.
 *
 * <p>Owned by the caller, closed by {@link #close()} or, at the latest, by the task completion
 * listener its {@code open} registers, which runs before the task's pool closes. One thread drives
 * it at a time ({@link #push}, {@link #finish}, {@link #next}); its stats may be read from any
 * thread. {@link #close()} during another call throws instead of freeing under it.
 */
abstract class NativeOperator implements AutoCloseable {
  private static final int CLOSED = -1;

  /** The Go handle, valid until {@link #close()}. */
  final long handle;

  private final String name;
  private final String prefix;
  private final String noun;

  /** Calls in flight, or {@link #CLOSED}. */
  private final AtomicInteger state = new AtomicInteger();

  /**
   * @param prefix the messages' prefix ({@code nativesort})
   * @param noun what the messages call the operator ({@code sorter})
   */
  NativeOperator(long handle, String name, String prefix, String noun) {
    this.handle = handle;
    this.name = name;
    this.prefix = prefix;
    this.noun = noun;
  }

  /** Hands Go the exported batch at these C struct addresses. */
  abstract void push0(long handle, long array, long schema);

  /** Ends Go's input. */
  abstract void finish0(long handle);

  /** Fills the C structs with Go's next output batch; false after the last. */
  abstract boolean next0(long handle, long array, long schema);

  /** Frees the Go side. */
  abstract void close0(long handle);

  /**
   * Gives Go the rows of {@code root}. The C structs and the export's bookkeeping come from {@code
   * producer}; {@code root}'s buffers are back to their sole owner when this returns.
   *
   * @throws RuntimeException if Go refuses the batch (the Go message: the pool has no room even
   *     with everything spilled, or a spill failed)
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
        push0(handle, arr.memoryAddress(), schema.memoryAddress());
      } finally {
        arr.release(); // no-ops once Go took them (moved); else they free the export
        schema.release();
      }
    } finally {
      exit();
    }
  }

  /**
   * Ends the input: from now on {@link #next} returns the output.
   *
   * @throws IllegalStateException if closed
   */
  public void finish() {
    enter();
    try {
      finish0(handle);
    } finally {
      exit();
    }
  }

  /**
   * The next output batch, or null after the last. Close the returned root: until then its buffers
   * are charged to the operator's reservation.
   *
   * @param importer tracks the Go-made buffers without charging the pool (they are charged to the
   *     operator already), e.g. {@code TaskArrowAllocators.importer()}
   * @throws IllegalArgumentException if {@code importer} charges the pool
   * @throws IllegalStateException if closed, or called before {@link #finish}
   */
  public VectorSchemaRoot next(BufferAllocator importer) {
    Objects.requireNonNull(importer, "importer");
    if (importer.getListener() instanceof PoolAllocationListener) {
      throw new IllegalArgumentException(
          prefix
              + ": importing into "
              + importer.getName()
              + ", which charges the pool: the "
              + noun
              + " charges these bytes already");
    }
    enter();
    try (ArrowArray arr = ArrowArray.allocateNew(importer);
        ArrowSchema schema = ArrowSchema.allocateNew(importer)) {
      if (!next0(handle, arr.memoryAddress(), schema.memoryAddress())) {
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

  /** The consumer name. */
  public String name() {
    return name;
  }

  /** Whether {@link #close()} has run. */
  public boolean isClosed() {
    return state.get() == CLOSED;
  }

  /**
   * Releases everything the operator holds and removes its files; idempotent.
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
            prefix + ": " + noun + " '" + name + "' is in use by " + s + " call(s); not closed");
      }
      if (state.compareAndSet(0, CLOSED)) {
        break;
      }
    }
    close0(handle);
  }

  /** Counts a call in flight; throws if closed. Pair with {@link #exit()}. */
  final void enter() {
    for (; ; ) {
      int s = state.get();
      if (s == CLOSED) {
        throw new IllegalStateException(prefix + ": " + noun + " '" + name + "' is closed");
      }
      if (state.compareAndSet(s, s + 1)) {
        return;
      }
    }
  }

  /** Ends a call {@link #enter()} counted. */
  final void exit() {
    state.decrementAndGet();
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

  @Override
  public String toString() {
    return getClass().getSimpleName() + "(" + name + (isClosed() ? ", closed)" : ")");
  }
}
