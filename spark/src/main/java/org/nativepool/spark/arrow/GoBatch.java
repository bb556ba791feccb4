package org.nativepool.spark.arrow;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.AllocationListener;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.nativepool.spark.jni.ArrowMemoryExhaustedException;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.memory.CallerSites;
import org.nativepool.spark.memory.Reservation;

/**
 * A record batch held by the Go side, seen from Java as a handle ({@code jni/API.md}, "Arrow
 * batches"). Whoever produced the buffers pays for them while they live, and the other side only
 * tracks them ({@code ffi/doc.go}):
 *
 * <ul>
 *   <li>{@link #importFrom}: Java → Go, zero-copy. The buffers stay charged to the Java allocator
 *       that made them (for {@link TaskArrowAllocators#producer()}, the task's pool) until Go
 *       releases the batch, which runs Java's release callback; Go tracks the bytes and charges
 *       nothing.
 *   <li>{@link #copy}: a deep copy into buffers the Go allocator of a reservation makes: Go-made
 *       and Go-charged, to the same consumer as that reservation but on a Go reservation of its
 *       own (so the reservation's {@code size()} does not change), until the last reference (this
 *       handle, and any export) is released. This is how a native operator takes ownership of data.
 *   <li>{@link #exportTo}: Go → Java, zero-copy. The Go charge stays until Java closes the returned
 *       root (its release callback), even after this handle is closed. The importer must not charge
 *       the pool again: use {@link TaskArrowAllocators#importer()}.
 * </ul>
 *
 * <p>{@link #close()} releases the handle; it is idempotent. If the reservation's allocator was
 * closed first (task end, {@link GoAllocators#closeAllocator}), the Go side has already released the
 * batch and reported it as a leak; {@link #close()} then throws {@link IllegalStateException}
 * naming the closed handle, and nothing is released twice. Safe for concurrent use.
 */
public final class GoBatch implements AutoCloseable {
  private final long handle;
  private final String origin;
  /** The name of the consumer whose Go allocator holds the batch. */
  private final String consumer;
  private final AtomicBoolean closed = new AtomicBoolean();

  private GoBatch(long handle, String origin, String consumer) {
    this.handle = handle;
    this.origin = origin;
    this.consumer = consumer;
  }

  /**
   * Moves {@code root}'s current batch into Go, zero-copy, tracked by {@code res}'s Go allocator.
   * {@code root} keeps its own references: closing it does not free the buffers while Go holds
   * them.
   *
   * @param res the reservation whose Go allocator tracks the import (and reports it if it is still
   *     held when that allocator closes)
   * @param root the batch to export; its buffers stay charged to the allocator that made them
   * @param producerAllocator allocates the C structs and the export's bookkeeping (released with
   *     the batch); normally {@link TaskArrowAllocators#producer()}
   * @throws IllegalStateException if the reservation, its allocator or its pool is closed; nothing
   *     is imported and everything exported is released
   */
  public static GoBatch importFrom(
      Reservation res, VectorSchemaRoot root, BufferAllocator producerAllocator) {
    Objects.requireNonNull(res, "res");
    Objects.requireNonNull(root, "root");
    Objects.requireNonNull(producerAllocator, "producerAllocator");
    if (res.isClosed()) {
      throw new IllegalStateException(
          "nativepool: reservation '" + res.name() + "' is closed; cannot import a batch");
    }
    try (ArrowArray arr = ArrowArray.allocateNew(producerAllocator);
        ArrowSchema schema = ArrowSchema.allocateNew(producerAllocator)) {
      try {
        Data.exportVectorSchemaRoot(producerAllocator, root, null, arr, schema);
        long h =
            res.callNative(r -> Natives.importBatch(r, arr.memoryAddress(), schema.memoryAddress()));
        return new GoBatch(h, "imported into '" + res.name() + "'", res.name());
      } finally {
        // No-ops when Go moved them; otherwise (a failed import) this releases the export.
        arr.release();
        schema.release();
      }
    }
  }

  /**
   * Exports this batch to Java, zero-copy. The returned root's buffers belong to Go's allocator:
   * they stay charged to the Go reservation until the root is closed (and this handle, or any other
   * reference, released). Close the root. If {@code importer} is a task's {@link
   * TaskArrowAllocators#importer()}, the task's end closes the root if it is still open, so its Go
   * memory never outlives the task; a later {@code close()} of the root is then a no-op. (Into any
   * other allocator, a root left open at task end keeps its Go memory, reported as lingering, until
   * it is closed.) The task's end must not race with another thread still reading the root.
   *
   * @param importer tracks the foreign buffers; must not charge the pool (its listener is not a
   *     {@link PoolAllocationListener}), normally {@link TaskArrowAllocators#importer()}
   * @throws IllegalArgumentException if {@code importer} charges a pool: the bytes would be counted
   *     twice
   * @throws IllegalStateException if this batch is closed, or its Go allocator is closed
   */
  public VectorSchemaRoot exportTo(BufferAllocator importer) {
    Objects.requireNonNull(importer, "importer");
    AllocationListener l = importer.getListener();
    if (l instanceof PoolAllocationListener) {
      throw new IllegalArgumentException(
          "nativepool: exporting a Go batch into "
              + importer.getName()
              + ", which charges the pool ("
              + l
              + "): Go already charges these bytes; use TaskArrowAllocators.importer()");
    }
    ensureOpen();
    try (ArrowArray arr = ArrowArray.allocateNew(importer);
        ArrowSchema schema = ArrowSchema.allocateNew(importer)) {
      Natives.exportBatch(handle, arr.memoryAddress(), schema.memoryAddress());
      boolean imported = false;
      try {
        VectorSchemaRoot root = Data.importVectorSchemaRoot(importer, arr, schema, null);
        imported = true;
        TaskArrowAllocators.trackExport(importer, root, consumer);
        return root;
      } finally {
        if (!imported) {
          // Give the export back to Go, unless Arrow's importer took the struct already.
          releaseUnlessClosed(arr);
          releaseUnlessClosed(schema);
        }
      }
    }
  }

  /**
   * Releases a C struct that a failed import may have taken over: Arrow Java's importer moves the
   * struct and closes it, after which {@code release()} throws NullPointerException ("already
   * closed"); a struct not taken is still ours to release.
   */
  private static void releaseUnlessClosed(org.apache.arrow.c.BaseStruct s) {
    try {
      s.release();
    } catch (NullPointerException alreadyClosed) {
      // taken by the importer, which released or owns it
    }
  }

  /**
   * Deep-copies this batch into buffers made by {@code res}'s Go allocator, charged to the
   * consumer of {@code res} until the copy is released (and, if exported, Java has released the
   * export). The charge is on the allocator's own Go reservation, not on {@code res}: {@code
   * res.size()} and {@code res.nativeSize()} do not change.
   *
   * @throws ArrowMemoryExhaustedException if the pool refuses the copy (nothing is charged)
   * @throws IllegalStateException if this batch, the reservation or its allocator is closed
   */
  public GoBatch copy(Reservation res) {
    Objects.requireNonNull(res, "res");
    ensureOpen();
    if (res.isClosed()) {
      throw new IllegalStateException(
          "nativepool: reservation '" + res.name() + "' is closed; cannot copy a batch into it");
    }
    String site = CallerSites.capture(); // the Java caller, as the copy's allocation site
    long h = res.callNative(r -> Natives.copyBatch(r, handle, site));
    return new GoBatch(h, "copied into '" + res.name() + "'", res.name());
  }

  /**
   * Releases the handle; idempotent. The buffers are freed once no export still references them.
   *
   * @throws IllegalStateException if the Go side released the batch already (its allocator was
   *     closed: task end or {@link GoAllocators#closeAllocator}); nothing is released twice
   */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      Natives.releaseBatch(handle);
    }
  }

  /** Whether {@link #close()} has run. */
  public boolean isClosed() {
    return closed.get();
  }

  /**
   * The raw handle, for natives of other libraries built on this one. Valid until closed.
   *
   * @throws IllegalStateException if closed
   */
  public long handle() {
    ensureOpen();
    return handle;
  }

  private void ensureOpen() {
    if (closed.get()) {
      throw new IllegalStateException("nativepool: " + this + " is closed");
    }
  }

  @Override
  public String toString() {
    return "GoBatch(0x" + Long.toHexString(handle) + ", " + origin + ")";
  }
}
