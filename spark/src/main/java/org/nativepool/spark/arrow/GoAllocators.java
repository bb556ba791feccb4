package org.nativepool.spark.arrow;

import java.util.Objects;
import org.nativepool.spark.jni.ArrowProcessStats;
import org.nativepool.spark.jni.ArrowStats;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.memory.ExecutorState;
import org.nativepool.spark.memory.Reservation;

/**
 * The Go side's Arrow allocators, seen from Java: each {@link Reservation} that imports or
 * copies a {@link GoBatch} gets one Go allocator (made on first use, charging that
 * reservation), closed when the reservation or its pool closes, or by {@link #closeAllocator}.
 */
public final class GoAllocators {
  private GoAllocators() {}

  /**
   * The reservation's Go allocator figures (made on first use).
   *
   * @throws IllegalStateException if the reservation is closed
   */
  public static ArrowStats stats(Reservation res) {
    Objects.requireNonNull(res, "res");
    return res.callNative(Natives::arrowStats);
  }

  /** Process totals over every Go Arrow allocator, and the RSS sample. */
  public static ArrowProcessStats processStats() {
    return Natives.processArrowStats();
  }

  /**
   * Whether allocation sites are recorded from now on: Go allocators record the call stack of
   * every allocation, and copies entered from Java their Java caller, so that a leak report names
   * the allocating function (costs a stack walk per allocation; for tests and leak hunts).
   * Process-wide ({@link ExecutorState#setAllocationSites}); the plugin sets it from {@code
   * spark.nativepool.allocationSites}.
   */
  public static void configure(boolean allocationSites) {
    ExecutorState.setAllocationSites(allocationSites);
  }

  /**
   * Closes the reservation's Go allocator now: reports what it still holds (live buffers with their
   * allocation sites if recorded, exports Java has not released, imports Go still holds), logs it,
   * gives its whole charge back to the reservation, and releases the batch handles it still has
   * (their Java wrappers then throw on close). Later imports and copies into the reservation throw
   * {@link IllegalStateException}. Idempotent (a second call returns null).
   *
   * @return the leak report (consumer name, bytes, allocating functions), or null if nothing leaked
   * @throws IllegalStateException if the reservation is closed
   */
  public static String closeAllocator(Reservation res) {
    Objects.requireNonNull(res, "res");
    return res.callNative(Natives::closeArrow);
  }
}
