package org.nativepool.spark.arrow;

import org.nativepool.spark.config.Bytes;



import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;
import org.apache.arrow.memory.AllocationListener;
import org.apache.arrow.memory.AllocationOutcome;
import org.nativepool.spark.jni.ArrowMemoryExhaustedException;
import org.nativepool.spark.memory.Reservation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An Arrow {@link AllocationListener} that charges every buffer of its allocator (and of its
 * children, which inherit it) to a {@link Reservation} of the task's pool, so Java-made Arrow
 * memory counts against the same Spark task budget as the native pool's.
 *
 * <ul>
 *   <li>{@link #onPreAllocation}: {@code tryGrow(size)} (size is Arrow's rounded size, the same
 *       figure {@code onRelease} later gives back). A refusal throws {@link
 *       ArrowMemoryExhaustedException} with the pool's message; Arrow then hands nothing out. There
 *       is no reclaim-and-retry here: {@code tryGrow} already goes through Spark's {@code
 *       acquireExecutionMemory}, which spills the task's other consumers, the native pool's
 *       spillable consumers included, before it answers short; asking again would ask the same
 *       question.
 *   <li>{@link #onFailedAllocation}: Arrow's own accounting refused after we had charged (an
 *       allocator limit below the pool's): the charge is given back, and {@code false} (no retry)
 *       lets Arrow throw its {@code OutOfMemoryException}.
 *   <li>{@link #onRelease}: {@code shrink(size)}. Arrow's contract is that {@code onRelease} never
 *       throws (the buffer is already gone, and Arrow's own books move on regardless), so a failing
 *       shrink is caught: an exception from Spark's {@code releaseMemory} upcall (the pool has
 *       shrunk and owes the bytes, see {@code jni/API.md}), a Go panic turned into a Java
 *       exception, or an accounting error. {@link #charged()} still drops by the buffer's size,
 *       and the failure is counted ({@link #releaseFailures()}) and logged at ERROR with its
 *       exception; the reservation's close settles what the pool still holds.
 * </ul>
 *
 * <p>Arrow does not tell the listener when the JVM itself fails to provide direct memory after
 * {@code onPreAllocation}; those bytes stay charged until {@link #close()}, when the whole
 * reservation goes back to Spark. After {@link #close()}, charges are refused and releases are
 * counted ({@link #lateReleases()}) and dropped: the reservation has already returned them. (Once
 * the allocator itself is closed, Arrow refuses every operation on its buffers, so a late release
 * is one that raced with the close.)
 *
 * <p>Safe for concurrent use (Arrow may call it from any thread that allocates or releases).
 */
public final class PoolAllocationListener implements AllocationListener {
  private static final Logger LOG = LoggerFactory.getLogger(PoolAllocationListener.class);

  private final Reservation reservation;
  private final AtomicLong charged = new AtomicLong();
  private final AtomicLong refusals = new AtomicLong();
  private final AtomicLong lateReleases = new AtomicLong();
  private final AtomicLong releaseFailures = new AtomicLong();
  private volatile boolean closed;

  /** Told the size of every late release (after {@link #close()}), or null. */
  private volatile LongConsumer lateReleaseHook;

  /**
   * @param reservation the reservation to charge; dedicated to this listener (its size is then
   *     exactly the bytes of the listener's live buffers)
   */
  public PoolAllocationListener(Reservation reservation) {
    this.reservation = java.util.Objects.requireNonNull(reservation, "reservation");
  }

  /** The reservation charged. */
  public Reservation reservation() {
    return reservation;
  }

  /** Bytes charged and not yet released: equal to the allocator's allocated memory at rest. */
  public long charged() {
    return charged.get();
  }

  /** Charges the pool refused. */
  public long refusals() {
    return refusals.get();
  }

  /** Releases after {@link #close()}, dropped. */
  public long lateReleases() {
    return lateReleases.get();
  }

  /** Releases whose shrink threw (caught, logged; {@link #charged()} dropped all the same). */
  public long releaseFailures() {
    return releaseFailures.get();
  }

  @Override
  public void onPreAllocation(long size) {
    if (size <= 0) {
      return;
    }
    if (closed) {
      throw new ArrowMemoryExhaustedException(
          "nativepool: Arrow allocator of " + reservation.name() + " is closed; no new buffers");
    }
    if (!reservation.tryGrow(size)) {
      refusals.incrementAndGet();
      throw new ArrowMemoryExhaustedException(reservation.lastRefusal());
    }
    charged.addAndGet(size);
  }

  @Override
  public boolean onFailedAllocation(long size, AllocationOutcome outcome) {
    // Arrow's accountant refused after onPreAllocation charged the pool: undo that charge.
    release(size);
    return false;
  }

  @Override
  public void onRelease(long size) {
    release(size);
  }

  private void release(long size) {
    if (size <= 0) {
      return;
    }
    if (closed) {
      lateRelease(size);
      return;
    }
    try {
      reservation.shrink(size);
    } catch (RuntimeException | Error e) {
      if (reservation.isClosed()) {
        // The reservation closed under us (task end): its bytes are back with Spark already.
        lateRelease(size);
        LOG.debug("nativepool: late Arrow release of {} bytes for {}", size, reservation.name(), e);
        return;
      }
      // Never out of onRelease (Arrow's contract): the buffer is gone either way.
      releaseFailures.incrementAndGet();
      LOG.error(
          "nativepool: Arrow release of {} bytes for {} failed to shrink the reservation; the"
              + " pool settles it when the reservation closes",
          size,
          reservation.name(),
          e);
    }
    charged.addAndGet(-size);
  }

  private void lateRelease(long size) {
    lateReleases.incrementAndGet();
    LongConsumer hook = lateReleaseHook;
    if (hook != null) {
      hook.accept(size);
    }
  }

  /** Stops charging; later releases are counted and dropped. Does not close the reservation. */
  void close() {
    closed = true;
  }

  /**
   * Calls {@code hook} with the size of every late release from now on: a leaked buffer freed after
   * its task ({@link TaskArrowAllocators} follows its leaked-resident bytes down with it).
   */
  void onLateRelease(LongConsumer hook) {
    lateReleaseHook = hook;
  }

  @Override
  public String toString() {
    return "PoolAllocationListener(" + reservation.name() + ", charged=" + charged.get() + ")";
  }
}
