package org.nativepool.spark.arrow;

import java.util.Objects;
import org.nativepool.spark.NativeBridge;
import org.nativepool.spark.NativeReservation;

/**
 * The Go side's Arrow allocators, seen from Java: each {@link NativeReservation} that imports or
 * copies a {@link NativeBatch} gets one Go allocator (made on first use, charging that
 * reservation), closed when the reservation or its pool closes, or by {@link #closeAllocator}.
 */
public final class NativeArrow {
  private NativeArrow() {}

  /**
   * The reservation's Go allocator figures (made on first use).
   *
   * @throws IllegalStateException if the reservation is closed
   */
  public static ArrowStats stats(NativeReservation res) {
    Objects.requireNonNull(res, "res");
    return new ArrowStats(NativeBridge.arrowStats(res));
  }

  /** Process totals over every Go Arrow allocator, and the RSS sample. */
  public static ArrowProcessStats processStats() {
    return new ArrowProcessStats(NativeBridge.processArrowStats());
  }

  /**
   * Whether Go allocators made from now on record the call stack of every allocation, so that a
   * leak report names the allocating function (costs a stack walk per allocation; for tests and
   * leak hunts). Process-wide; the plugin sets it from {@code spark.nativepool.allocationSites}.
   */
  public static void configure(boolean allocationSites) {
    NativeBridge.configureArrow(allocationSites);
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
  public static String closeAllocator(NativeReservation res) {
    Objects.requireNonNull(res, "res");
    return NativeBridge.closeArrow(res);
  }
}
