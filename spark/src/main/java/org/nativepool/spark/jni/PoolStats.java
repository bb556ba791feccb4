package org.nativepool.spark.jni;

/**
 * An immutable snapshot of one task pool's figures ({@code poolStats0}), named by {@link PoolStat}.
 * All values are bytes or call counts; the snapshot is taken in one native call but the figures
 * are not read under one lock, so they need not be mutually consistent while other threads use the
 * pool. The accessors below are shorthands for {@link #get(Enum) get(PoolStat.…)}.
 */
public final class PoolStats extends Stats<PoolStat> {
  PoolStats(long[] values) {
    super(PoolStat.class, "poolStats0", values);
  }

  /** {@link PoolStat#RESERVED}. */
  public long reserved() {
    return get(PoolStat.RESERVED);
  }

  /** {@link PoolStat#HELD}. */
  public long held() {
    return get(PoolStat.HELD);
  }

  /** {@link PoolStat#SLACK}. */
  public long slack() {
    return get(PoolStat.SLACK);
  }

  /** {@link PoolStat#OVERCOMMIT}. */
  public long overcommit() {
    return get(PoolStat.OVERCOMMIT);
  }

  /** {@link PoolStat#PEAK}. */
  public long peak() {
    return get(PoolStat.PEAK);
  }

  /** {@link PoolStat#ACQUIRE_CALLS}. */
  public long acquireCalls() {
    return get(PoolStat.ACQUIRE_CALLS);
  }

  /** {@link PoolStat#RELEASE_CALLS}. */
  public long releaseCalls() {
    return get(PoolStat.RELEASE_CALLS);
  }

  /** {@link PoolStat#SHORT_GRANTS}. */
  public long shortGrants() {
    return get(PoolStat.SHORT_GRANTS);
  }

  /** {@link PoolStat#SPILL_REQUESTS}. */
  public long spillRequests() {
    return get(PoolStat.SPILL_REQUESTS);
  }

  /** {@link PoolStat#SPILL_BYTES_FREED}. */
  public long spillBytesFreed() {
    return get(PoolStat.SPILL_BYTES_FREED);
  }

  /** {@link PoolStat#SPILLER_FAILURES}. */
  public long spillerFailures() {
    return get(PoolStat.SPILLER_FAILURES);
  }

  /** {@link PoolStat#LATE_RELEASES}. */
  public long lateReleases() {
    return get(PoolStat.LATE_RELEASES);
  }

  /** {@link PoolStat#SPILL_REENTRIES}. */
  public long spillReentries() {
    return get(PoolStat.SPILL_REENTRIES);
  }
}
