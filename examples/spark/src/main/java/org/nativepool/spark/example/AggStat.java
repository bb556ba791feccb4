package org.nativepool.spark.example;

/**
 * The figures of one streaming aggregation ({@code stats0}, {@link AggStats}); the ordinal is the
 * index. The declaration is the Go table {@code aggStatTable} in {@code
 * examples/spark/native/aggs.go}; the Go test {@code TestStatTablesMatchTheirJavaEnums} checks
 * these constants, in order, against it. Add a figure there first.
 */
public enum AggStat {
  /** Rows pushed. */
  ROWS_IN,
  /** Batches imported from Java. */
  BATCHES_IN,
  /** The least value pushed ({@code Long.MAX_VALUE} without rows). */
  MIN_VALUE,
  /** The greatest value pushed ({@code Long.MIN_VALUE} without rows). */
  MAX_VALUE,
  /** The sum of the values pushed. */
  SUM_IN,
  /** Groups the micro-batch updated, returned by {@link AggBridge#next0}. */
  ROWS_OUT,
  /** Batches exported to Java. */
  BATCHES_OUT,
  /** Spills the aggregation started when the pool refused memory. */
  SELF_SPILLS,
  /** Memory those spills freed. */
  SELF_SPILLED_BYTES,
  /** Spills Spark asked for (its spill → reclaim) that freed bytes. */
  REQUESTED_SPILLS,
  /** Every spill request, including those that found nothing to free. */
  SPILL_REQUESTS,
  /** Groups written to run files. */
  SPILLED_GROUPS,
  /** Bytes of run files written. */
  SPILLED_BYTES,
  /** Run files written. */
  RUNS,
  /** Runs merged into one to save buffers. */
  MERGE_PASSES,
  /** Groups of the new state version. */
  STATE_GROUPS,
  /** Rows counted by the new state version: every micro-batch so far. */
  STATE_COUNT,
  /** The sum of the values of the new state version. */
  STATE_SUM,
  /** Bytes of the new state version's file. */
  STATE_BYTES,
  /** The aggregation's reservation now. */
  RESERVED,
  /** High-water mark of {@link #RESERVED}. */
  PEAK_RESERVED,
  /** Bytes in live buffers of the aggregation's Go allocator (exports included). */
  ALLOCATED,
  /** High-water mark of allocated, exact. */
  PEAK_ALLOCATED,
  /** Bytes kept after the commit: the planted leak of {@code --leak}. */
  RETAINED_BYTES;
}
