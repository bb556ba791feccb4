package org.nativepool.spark.jni;

import org.nativepool.spark.config.Bytes;



/**
 * The Go side's Arrow figures over the whole process ({@code processArrowStats0}, {@link
 * ArrowProcessStats}); the ordinal is the index. Those with a {@link #gaugeName()} are Dropwizard
 * gauges of {@link org.nativepool.spark.NativePoolPlugin} (the names README lists). The
 * declaration is the Go table {@code processArrowStatFields} in {@code
 * internal/bridge/arrow_stats.go}; the Go test {@code TestStatTablesMatchJavaEnums} checks these
 * constants, in order, against it. Add a figure there first.
 */
public enum ArrowProcessStat {
  /** Bytes in live buffers of every open Go allocator. */
  ALLOCATED("nativeAllocated"),
  /** Open Go allocators (one per reservation that used Arrow). */
  LIVE_ALLOCATORS("arrowLiveAllocators"),
  /** Batch handles not yet released. */
  LIVE_BATCHES(null),
  /** Bytes exported to Java, not yet released by Java. */
  EXPORTED(null),
  /** Bytes imported from Java that Go still holds. */
  IMPORTED(null),
  /**
   * The process's resident set in bytes, or -1 if it could not be read. A check to watch, never a
   * gate: it lags allocation, counts pages, and in an executor includes the JVM (Comet #5983).
   */
  RSS("rssBytes"),
  /** What the Go runtime holds mapped (heap, stacks, metadata); -1 with {@link #RSS}. */
  GO_RUNTIME(null),
  /** {@code RSS - GO_RUNTIME - ALLOCATED}, a trend to watch; -1 with {@link #RSS}. */
  UNEXPLAINED(null),
  /** Allocators closed with something still held, cumulative. */
  LEAKS(null),
  /** Bytes those allocators still held, cumulative. */
  LEAKED_BYTES(null),
  /**
   * Bytes Go allocators that closed with their task still hold (exports Java has not released),
   * until they are freed; {@link #LINGERING_ALLOCATORS} of them.
   */
  LINGERING(null),
  /** Closed Go allocators that still hold something; see {@link #LINGERING}. */
  LINGERING_ALLOCATORS(null);

  private final String gaugeName;

  ArrowProcessStat(String gaugeName) {
    this.gaugeName = gaugeName;
  }

  /** The name of this figure's gauge in the plugin's metric source, or null if it has none. */
  public String gaugeName() {
    return gaugeName;
  }
}
