package org.nativepool.spark.arrow;

import java.util.Arrays;
import org.nativepool.spark.NativeBridge;

/**
 * An immutable snapshot of one reservation's Go Arrow allocator ({@code arrowStats0}, {@code
 * ARROW_STAT_*} indices of {@link NativeBridge}). Figures are read one by one, not under one lock:
 * while other threads use the allocator they need not be mutually consistent.
 */
public final class ArrowStats {
  private final long[] values;

  ArrowStats(long[] values) {
    if (values == null || values.length < NativeBridge.ARROW_STAT_COUNT) {
      throw new IllegalStateException(
          "nativepool: arrowStats0 returned "
              + (values == null ? "null" : values.length + " values")
              + ", expected "
              + NativeBridge.ARROW_STAT_COUNT);
    }
    this.values = values.clone();
  }

  /** The figure at an {@code ARROW_STAT_*} index. */
  public long get(int index) {
    return values[index];
  }

  /** Bytes in live buffers the Go allocator made (Go-charged). */
  public long allocated() {
    return values[NativeBridge.ARROW_STAT_ALLOCATED];
  }

  /** The reservation's size. */
  public long reserved() {
    return values[NativeBridge.ARROW_STAT_RESERVED];
  }

  /** Bytes charged past a refusal, cumulative. */
  public long forced() {
    return values[NativeBridge.ARROW_STAT_FORCED];
  }

  /** Live buffers the Go allocator made. */
  public long liveBuffers() {
    return values[NativeBridge.ARROW_STAT_LIVE_BUFFERS];
  }

  /** Bytes imported from Java that Go holds: tracked, charged to Java's allocator, not here. */
  public long imported() {
    return values[NativeBridge.ARROW_STAT_IMPORTED];
  }

  /** Imported batches Go holds. */
  public long importsLive() {
    return values[NativeBridge.ARROW_STAT_IMPORTS_LIVE];
  }

  /** Bytes exported to Java and not yet released by Java. */
  public long exported() {
    return values[NativeBridge.ARROW_STAT_EXPORTED];
  }

  /** Exported batches Java has not released. */
  public long exportsLive() {
    return values[NativeBridge.ARROW_STAT_EXPORTS_LIVE];
  }

  /** Batch handles of the reservation not yet released. */
  public long batches() {
    return values[NativeBridge.ARROW_STAT_BATCHES];
  }

  /** Whether the allocator is closed. */
  public boolean closed() {
    return values[NativeBridge.ARROW_STAT_CLOSED] != 0;
  }

  @Override
  public String toString() {
    return "ArrowStats" + Arrays.toString(values);
  }
}
