package org.nativepool.spark.jni;

import org.nativepool.spark.config.Bytes;



/**
 * The figures of one task pool ({@code poolStats0}, {@link PoolStats}); the ordinal is the index.
 * The declaration is the Go table {@code poolStatFields} in {@code internal/bridge/stats.go}; the
 * Go test {@code TestStatTablesMatchJavaEnums} checks these constants, in order, against it. Add a
 * figure there first.
 */
public enum PoolStat {
  /** Bytes reserved by the pool's consumers. */
  RESERVED,
  /** Bytes held from Spark (granted and not yet released). */
  HELD,
  /** Bytes held from Spark and not reserved (chunk remainders). */
  SLACK,
  /** Bytes reserved that Spark did not grant. */
  OVERCOMMIT,
  /** The highest reserved figure so far. */
  PEAK,
  /** Upcalls to {@link Upstream#acquireMemory}. */
  ACQUIRE_CALLS,
  /** Upcalls to {@link Upstream#releaseMemory}. */
  RELEASE_CALLS,
  /** Acquires Spark answered with less than asked. */
  SHORT_GRANTS,
  /** Reclaim calls (Spark's spill requests). */
  SPILL_REQUESTS,
  /** Bytes released to Spark by reclaim calls. */
  SPILL_BYTES_FREED,
  /** Spillers that threw, failed or freed nothing. */
  SPILLER_FAILURES,
  /** Releases after the task's pool was closed (counted, not forwarded). */
  LATE_RELEASES,
  /**
   * Spill requests answered with 0 at once because the pool's spill was already running on the
   * calling thread (a spiller growing its own pool).
   */
  SPILL_REENTRIES;
}
