package org.nativepool.spark.jni;

import org.nativepool.spark.config.Bytes;



import org.nativepool.spark.config.PoolSettings;

/**
 * The process-wide figures of the Go side ({@code processStats0}, {@link ProcessStats}); the
 * ordinal is the index. Each is also a Dropwizard gauge of {@code NativePoolPlugin}, named by
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
  /**
   * Leaks at task end, cumulative: every kind, one per owner (an unclosed reservation, a Go Arrow
   * allocator with buffers, exports Java still held, Java Arrow buffers); see {@code Leaks}.
   */
  LEAKS("leaks"),
  /** Bytes those owners still held at their task's end, cumulative. */
  LEAKED_BYTES("leakedBytes"),
  /**
   * The Go runtime's soft memory limit ({@code debug.SetMemoryLimit}, from {@value
   * PoolSettings#GO_MEMORY_LIMIT}); 0 = none.
   */
  GO_MEMORY_LIMIT("goMemoryLimit"),
  /** The idle Go runtime's mapped bytes, measured once when the library loaded; -1 = not yet. */
  GO_BASELINE("goBaseline"),
  /** The Go runtime's mapped bytes now (runtime/metrics: total minus heap released). */
  GO_MAPPED("goMapped"),
  /** High-water mark of {@link #GO_MAPPED}, sampled at each stats read and each spill request. */
  GO_PEAK("goPeak"),
  /** FreeOSMemory calls made by spill requests that found nothing to spill, cumulative. */
  GO_HEAP_RETURNS("goHeapReturns"),
  /** Idle Go heap those calls returned to the OS, cumulative bytes. */
  GO_HEAP_RETURNED_BYTES("goHeapReturnedBytes"),
  /** The process's peak resident set ({@code VmHWM} of /proc/self/status); -1 = unreadable. */
  VM_HWM("vmHWM"),
  /**
   * Peak usage of the process's memory cgroup (v1 {@code memory.max_usage_in_bytes}, v2 {@code
   * memory.peak}); -1 = not in one.
   */
  CGROUP_PEAK("cgroupPeak"),
  /**
   * The glibc {@code M_MMAP_THRESHOLD} the library set with mallopt (from {@value
   * PoolSettings#MALLOC_MMAP_THRESHOLD}); 0 = left to glibc.
   */
  MALLOC_MMAP_THRESHOLD("mallocMmapThreshold"),
  /**
   * Free bytes glibc's malloc keeps in its arenas for reuse ({@code mallinfo2} {@code fordblks}):
   * memory C code freed that was not returned to the OS and may still be resident; -1 = unknown.
   */
  MALLOC_RETAINED("mallocRetained"),
  /**
   * Go heap in spans that hold objects: live objects, dead ones not yet swept, and the unused
   * tails of those spans (runtime/metrics {@code heap/objects + heap/unused}); -1 = unknown.
   */
  GO_HEAP_IN_USE("goHeapInUse"),
  /** Free Go heap the runtime has not returned to the OS yet ({@code heap/free}); -1 = unknown. */
  GO_HEAP_IDLE("goHeapIdle"),
  /** Goroutine stacks and the Go runtime's own thread stacks; -1 = unknown. */
  GO_STACKS("goStacks"),
  /** The Go runtime's GC and allocator metadata ({@code metadata/*}); -1 = unknown. */
  GO_GC_META("goGcMeta"),
  /** The rest of the Go runtime's memory (profiling buckets, other); -1 = unknown. */
  GO_OTHER("goOther"),
  /**
   * Bytes of leaks still allocated after their task (Go exports Java still holds, Go buffers they
   * pin, Java Arrow buffers never released), going down as they are freed. Reservation leaks are
   * accounting only and never count here; see {@code Leaks}.
   */
  LEAKED_RESIDENT("leakedResident"),
  /**
   * Spark spill requests a pool answered with 0 at once, cumulative: its own spill was already
   * running on the calling thread (an engine's spiller grew its own pool, and Spark spilled the
   * pool again from inside that grow). Each pool logs its first one at WARN.
   */
  SPILL_REENTRIES("sparkSpillReentries");

  private final String gaugeName;

  ProcessStat(String gaugeName) {
    this.gaugeName = gaugeName;
  }

  /** The name of this figure's gauge in {@code NativePoolPlugin}'s metric source. */
  public String gaugeName() {
    return gaugeName;
  }
}
