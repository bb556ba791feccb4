package org.nativepool.spark;

import java.util.Arrays;

/**
 * An immutable snapshot of one task pool's figures ({@code poolStats0}, {@code STAT_*} indices of
 * {@link NativeBridge}). All values are bytes or call counts; the snapshot is taken in one native
 * call but the figures are not read under one lock, so they need not be mutually consistent while
 * other threads use the pool.
 */
public final class PoolStats {
  private final long[] values;

  PoolStats(long[] values) {
    if (values == null || values.length < NativeBridge.STAT_COUNT) {
      throw new IllegalStateException(
          "nativepool: poolStats0 returned "
              + (values == null ? "null" : values.length + " values")
              + ", expected "
              + NativeBridge.STAT_COUNT);
    }
    this.values = values.clone();
  }

  /** The figure at a {@code STAT_*} index. */
  public long get(int statIndex) {
    return values[statIndex];
  }

  /** Bytes reserved by the pool's consumers. */
  public long reserved() {
    return values[NativeBridge.STAT_RESERVED];
  }

  /** Bytes held from Spark. */
  public long held() {
    return values[NativeBridge.STAT_HELD];
  }

  /** Bytes held from Spark and not reserved. */
  public long slack() {
    return values[NativeBridge.STAT_SLACK];
  }

  /** Bytes reserved that Spark did not grant. */
  public long overcommit() {
    return values[NativeBridge.STAT_OVERCOMMIT];
  }

  /** The highest reserved figure so far. */
  public long peak() {
    return values[NativeBridge.STAT_PEAK];
  }

  /** Upcalls to {@link NativeUpstream#acquireMemory}. */
  public long acquireCalls() {
    return values[NativeBridge.STAT_ACQUIRE_CALLS];
  }

  /** Upcalls to {@link NativeUpstream#releaseMemory}. */
  public long releaseCalls() {
    return values[NativeBridge.STAT_RELEASE_CALLS];
  }

  /** Acquires Spark answered with less than asked. */
  public long shortGrants() {
    return values[NativeBridge.STAT_SHORT_GRANTS];
  }

  /** Reclaim calls (Spark's spill requests). */
  public long spillRequests() {
    return values[NativeBridge.STAT_SPILL_REQUESTS];
  }

  /** Bytes released to Spark by reclaim calls. */
  public long spillBytesFreed() {
    return values[NativeBridge.STAT_SPILL_BYTES_FREED];
  }

  /** Spillers that threw or failed. */
  public long spillerFailures() {
    return values[NativeBridge.STAT_SPILLER_FAILURES];
  }

  /** Releases after the task's upstream was closed. */
  public long lateReleases() {
    return values[NativeBridge.STAT_LATE_RELEASES];
  }

  /** A copy of all figures, {@code STAT_*} indices. */
  public long[] toArray() {
    return values.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof PoolStats && Arrays.equals(values, ((PoolStats) o).values);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(values);
  }

  @Override
  public String toString() {
    return "PoolStats(reserved="
        + reserved()
        + ", held="
        + held()
        + ", slack="
        + slack()
        + ", overcommit="
        + overcommit()
        + ", peak="
        + peak()
        + ", acquireCalls="
        + acquireCalls()
        + ", releaseCalls="
        + releaseCalls()
        + ", shortGrants="
        + shortGrants()
        + ", spillRequests="
        + spillRequests()
        + ", spillBytesFreed="
        + spillBytesFreed()
        + ", spillerFailures="
        + spillerFailures()
        + ", lateReleases="
        + lateReleases()
        + ")";
  }
}
