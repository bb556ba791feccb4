package org.nativepool.spark;

import java.util.Arrays;

/**
 * An immutable snapshot of the process-wide figures of the Go side ({@code processStats0},
 * {@code PSTAT_*} indices of {@link NativeBridge}): totals over all task pools, and cumulative
 * counters since the library was loaded.
 */
public final class ProcessStats {
  private final long[] values;

  ProcessStats(long[] values) {
    if (values == null || values.length < NativeBridge.PSTAT_COUNT) {
      throw new IllegalStateException(
          "nativepool: processStats0 returned "
              + (values == null ? "null" : values.length + " values")
              + ", expected "
              + NativeBridge.PSTAT_COUNT);
    }
    this.values = values.clone();
  }

  /** The figure at a {@code PSTAT_*} index. */
  public long get(int pstatIndex) {
    return values[pstatIndex];
  }

  /** Task pools open now. */
  public long liveTasks() {
    return values[NativeBridge.PSTAT_LIVE_TASKS];
  }

  /** Bytes reserved, all pools. */
  public long reserved() {
    return values[NativeBridge.PSTAT_RESERVED];
  }

  /** Bytes held from Spark, all pools. */
  public long held() {
    return values[NativeBridge.PSTAT_HELD];
  }

  /** Slack, all pools. */
  public long slack() {
    return values[NativeBridge.PSTAT_SLACK];
  }

  /** Overcommit, all pools. */
  public long overcommit() {
    return values[NativeBridge.PSTAT_OVERCOMMIT];
  }

  /** The highest reserved figure of any pool. */
  public long peak() {
    return values[NativeBridge.PSTAT_PEAK];
  }

  /** Acquire plus release upcalls, cumulative. */
  public long upstreamCalls() {
    return values[NativeBridge.PSTAT_UPSTREAM_CALLS];
  }

  /** Reclaim calls, cumulative. */
  public long spillRequests() {
    return values[NativeBridge.PSTAT_SPILL_REQUESTS];
  }

  /** Bytes released to Spark by reclaim calls, cumulative. */
  public long spillBytesFreed() {
    return values[NativeBridge.PSTAT_SPILL_BYTES_FREED];
  }

  /** Late releases, cumulative. */
  public long lateReleases() {
    return values[NativeBridge.PSTAT_LATE_RELEASES];
  }

  /** Pools closed with bytes still reserved, cumulative. */
  public long leaks() {
    return values[NativeBridge.PSTAT_LEAKS];
  }

  /** Bytes those pools still had reserved, cumulative. */
  public long leakedBytes() {
    return values[NativeBridge.PSTAT_LEAKED_BYTES];
  }

  /** A copy of all figures, {@code PSTAT_*} indices. */
  public long[] toArray() {
    return values.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ProcessStats && Arrays.equals(values, ((ProcessStats) o).values);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(values);
  }

  @Override
  public String toString() {
    return "ProcessStats(liveTasks="
        + liveTasks()
        + ", reserved="
        + reserved()
        + ", held="
        + held()
        + ", slack="
        + slack()
        + ", overcommit="
        + overcommit()
        + ", peak="
        + peak()
        + ", upstreamCalls="
        + upstreamCalls()
        + ", spillRequests="
        + spillRequests()
        + ", spillBytesFreed="
        + spillBytesFreed()
        + ", lateReleases="
        + lateReleases()
        + ", leaks="
        + leaks()
        + ", leakedBytes="
        + leakedBytes()
        + ")";
  }
}
