package org.nativepool.spark.arrow;

import java.util.Arrays;
import org.nativepool.spark.NativeBridge;

/**
 * An immutable snapshot of the Go side's Arrow figures over the whole process ({@code
 * processArrowStats0}, {@code ARROW_PSTAT_*} indices of {@link NativeBridge}), with the
 * resident-set sample that backs the drift check. RSS is a check to watch, never a gate: it lags
 * allocation, counts pages, and in an executor includes the JVM (Comet #5983).
 */
public final class ArrowProcessStats {
  private final long[] values;

  ArrowProcessStats(long[] values) {
    if (values == null || values.length < NativeBridge.ARROW_PSTAT_COUNT) {
      throw new IllegalStateException(
          "nativepool: processArrowStats0 returned "
              + (values == null ? "null" : values.length + " values")
              + ", expected "
              + NativeBridge.ARROW_PSTAT_COUNT);
    }
    this.values = values.clone();
  }

  /** The figure at an {@code ARROW_PSTAT_*} index. */
  public long get(int index) {
    return values[index];
  }

  /** Bytes in live buffers of every open Go allocator. */
  public long allocated() {
    return values[NativeBridge.ARROW_PSTAT_ALLOCATED];
  }

  /** Open Go allocators. */
  public long liveAllocators() {
    return values[NativeBridge.ARROW_PSTAT_LIVE_ALLOCATORS];
  }

  /** Batch handles not yet released. */
  public long liveBatches() {
    return values[NativeBridge.ARROW_PSTAT_LIVE_BATCHES];
  }

  /** The process's resident set in bytes, or -1 if it could not be read. */
  public long rss() {
    return values[NativeBridge.ARROW_PSTAT_RSS];
  }

  /** Allocators closed with something still held, cumulative. */
  public long leaks() {
    return values[NativeBridge.ARROW_PSTAT_LEAKS];
  }

  /**
   * Bytes Go allocators that closed with their task still hold (exports Java has not released),
   * until they are freed; {@link #lingeringAllocators()} of them.
   */
  public long lingering() {
    return values[NativeBridge.ARROW_PSTAT_LINGERING];
  }

  /** Closed Go allocators that still hold something; see {@link #lingering()}. */
  public long lingeringAllocators() {
    return values[NativeBridge.ARROW_PSTAT_LINGERING_ALLOCATORS];
  }

  @Override
  public String toString() {
    return "ArrowProcessStats" + Arrays.toString(values);
  }
}
