package org.nativepool.spark.jni;

/**
 * An immutable snapshot of the process-wide figures of the Go side ({@code processStats0}), named
 * by {@link ProcessStat}: totals over all task pools, and cumulative counters since the library
 * was loaded. The accessors below are shorthands for {@link #get(Enum) get(ProcessStat.…)}.
 */
public final class ProcessStats extends Stats<ProcessStat> {
  ProcessStats(long[] values) {
    super(ProcessStat.class, "processStats0", values);
  }

  /** {@link ProcessStat#LIVE_TASKS}. */
  public long liveTasks() {
    return get(ProcessStat.LIVE_TASKS);
  }

  /** {@link ProcessStat#RESERVED}. */
  public long reserved() {
    return get(ProcessStat.RESERVED);
  }

  /** {@link ProcessStat#HELD}. */
  public long held() {
    return get(ProcessStat.HELD);
  }

  /** {@link ProcessStat#SLACK}. */
  public long slack() {
    return get(ProcessStat.SLACK);
  }

  /** {@link ProcessStat#OVERCOMMIT}. */
  public long overcommit() {
    return get(ProcessStat.OVERCOMMIT);
  }

  /** {@link ProcessStat#PEAK}. */
  public long peak() {
    return get(ProcessStat.PEAK);
  }

  /** {@link ProcessStat#UPSTREAM_CALLS}. */
  public long upstreamCalls() {
    return get(ProcessStat.UPSTREAM_CALLS);
  }

  /** {@link ProcessStat#SPILL_REQUESTS}. */
  public long spillRequests() {
    return get(ProcessStat.SPILL_REQUESTS);
  }

  /** {@link ProcessStat#SPILL_BYTES_FREED}. */
  public long spillBytesFreed() {
    return get(ProcessStat.SPILL_BYTES_FREED);
  }

  /** {@link ProcessStat#LATE_RELEASES}. */
  public long lateReleases() {
    return get(ProcessStat.LATE_RELEASES);
  }

  /** {@link ProcessStat#LEAKS}. */
  public long leaks() {
    return get(ProcessStat.LEAKS);
  }

  /** {@link ProcessStat#LEAKED_BYTES}. */
  public long leakedBytes() {
    return get(ProcessStat.LEAKED_BYTES);
  }

  /** {@link ProcessStat#GO_MEMORY_LIMIT}. */
  public long goMemoryLimit() {
    return get(ProcessStat.GO_MEMORY_LIMIT);
  }

  /** {@link ProcessStat#GO_BASELINE}. */
  public long goBaseline() {
    return get(ProcessStat.GO_BASELINE);
  }

  /** {@link ProcessStat#GO_MAPPED}. */
  public long goMapped() {
    return get(ProcessStat.GO_MAPPED);
  }

  /** {@link ProcessStat#GO_PEAK}. */
  public long goPeak() {
    return get(ProcessStat.GO_PEAK);
  }

  /** {@link ProcessStat#GO_HEAP_RETURNS}. */
  public long goHeapReturns() {
    return get(ProcessStat.GO_HEAP_RETURNS);
  }

  /** {@link ProcessStat#GO_HEAP_RETURNED_BYTES}. */
  public long goHeapReturnedBytes() {
    return get(ProcessStat.GO_HEAP_RETURNED_BYTES);
  }

  /** {@link ProcessStat#VM_HWM}. */
  public long vmHWM() {
    return get(ProcessStat.VM_HWM);
  }

  /** {@link ProcessStat#CGROUP_PEAK}. */
  public long cgroupPeak() {
    return get(ProcessStat.CGROUP_PEAK);
  }

  /** {@link ProcessStat#MALLOC_MMAP_THRESHOLD}. */
  public long mallocMmapThreshold() {
    return get(ProcessStat.MALLOC_MMAP_THRESHOLD);
  }

  /** {@link ProcessStat#MALLOC_RETAINED}. */
  public long mallocRetained() {
    return get(ProcessStat.MALLOC_RETAINED);
  }

  /** {@link ProcessStat#GO_HEAP_IN_USE}. */
  public long goHeapInUse() {
    return get(ProcessStat.GO_HEAP_IN_USE);
  }

  /** {@link ProcessStat#GO_HEAP_IDLE}. */
  public long goHeapIdle() {
    return get(ProcessStat.GO_HEAP_IDLE);
  }

  /** {@link ProcessStat#GO_STACKS}. */
  public long goStacks() {
    return get(ProcessStat.GO_STACKS);
  }

  /** {@link ProcessStat#GO_GC_META}. */
  public long goGcMeta() {
    return get(ProcessStat.GO_GC_META);
  }

  /** {@link ProcessStat#GO_OTHER}. */
  public long goOther() {
    return get(ProcessStat.GO_OTHER);
  }

  /** {@link ProcessStat#LEAKED_RESIDENT}. */
  public long leakedResident() {
    return get(ProcessStat.LEAKED_RESIDENT);
  }

  /** {@link ProcessStat#SPILL_REENTRIES}. */
  public long spillReentries() {
    return get(ProcessStat.SPILL_REENTRIES);
  }
}
