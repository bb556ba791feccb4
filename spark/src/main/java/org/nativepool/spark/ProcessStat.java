package org.nativepool.spark;

/**
 * The process-wide figures of the Go side ({@code processStats0}, {@link ProcessStats}); the
 * ordinal is the index. Each is also a Dropwizard gauge of {@link NativePoolPlugin}, named by
 * {@link #gaugeName()} (the names README lists). The declaration is the Go table {@code
 * processStatFields} in {@code internal/bridge/stats.go}; the Go test {@code
 * TestStatTablesMatchJavaEnums} checks these constants, in order, against it. Add a figure there
 * first.
 */
public enum ProcessStat {
  /** Task pools open now. */
  LIVE_TASKS("liveTasks"),
  /** Bytes reserved, open pools. */
  RESERVED("reserved"),
  /** Bytes held from Spark, open pools. */
  HELD("heldFromSpark"),
  /** Slack, open pools. */
  SLACK("slack"),
  /** Overcommit, open pools. */
  OVERCOMMIT("overcommit"),
  /** The highest reserved figure of any pool, ever. */
  PEAK("peak"),
  /** Acquire plus release upcalls, cumulative. */
  UPSTREAM_CALLS("upstreamCalls"),
  /** Reclaim calls (Spark's spill requests), cumulative. */
  SPILL_REQUESTS("sparkSpillRequests"),
  /** Bytes released to Spark by reclaim calls, cumulative. */
  SPILL_BYTES_FREED("sparkSpillBytesFreed"),
  /** Releases after a pool closed, cumulative. */
  LATE_RELEASES("lateReleases"),
  /** Pools closed with bytes still reserved, cumulative. */
  LEAKS("leaks"),
  /** Bytes those pools still had reserved, cumulative. */
  LEAKED_BYTES("leakedBytes");

  private final String gaugeName;

  ProcessStat(String gaugeName) {
    this.gaugeName = gaugeName;
  }

  /** The name of this figure's gauge in {@link NativePoolPlugin}'s metric source. */
  public String gaugeName() {
    return gaugeName;
  }
}
