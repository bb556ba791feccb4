package org.nativepool.spark.example;

/**
 * The figures of one sorter ({@code stats0}, {@link SortStats}); the ordinal is the index. The
 * declaration is the Go table {@code sortStats} in {@code examples/spark/native/sorts.go}; the Go
 * test {@code TestStatTablesMatchTheirJavaEnums} checks these constants, in order, against it. Add a
 * figure there first.
 */
public enum SortStat {
  /** Rows pushed. */
  ROWS_IN,
  /** Rows returned by {@link SortBridge#next0}. */
  ROWS_OUT,
  /** Spills the sorter started because the pool refused a buffer. */
  SELF_SPILLS,
  /** Spills Spark asked for (its spill → reclaim) that freed bytes. */
  REQUESTED_SPILLS,
  /** Every spill request, including those that found nothing to free. */
  SPILL_REQUESTS,
  /** Rows written to run files. */
  SPILLED_ROWS,
  /** Bytes of run files written. */
  SPILLED_BYTES,
  /** Run files written. */
  RUNS,
  /** Multi-pass merges. */
  MERGE_PASSES,
  /** Most runs merged at once, bounded by the batches the pool granted. */
  MAX_FAN_IN,
  /** Depth of the merge tree, ceil(log_fanin(runs)). */
  MERGE_LEVELS,
  /** The sorter's reservations now (its chunks' account's slack included). */
  RESERVED,
  /** High-water mark of {@link #RESERVED}. */
  PEAK_RESERVED,
  /** Bytes in live buffers of the sorter's Go allocators. */
  ALLOCATED,
  /** High-water mark of allocated, sampled with {@link #PEAK_RESERVED}'s. */
  PEAK_ALLOCATED,
  /** Allocated ≤ reserved checks made. */
  CHECKS,
  /** Checks that found allocated > reserved. */
  VIOLATIONS,
  /** Batches imported from Java. */
  BATCHES_IN,
  /** Batches exported to Java. */
  BATCHES_OUT,
  /**
   * High-water mark of the chunks' account's slack: reserved (in {@link #RESERVED} and the pool's
   * figures), in no buffer.
   */
  PEAK_SLACK;
}
