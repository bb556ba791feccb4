package org.nativepool.spark;

/**
 * Every native method of {@code libnativepool.so}, exactly as {@code jni/API.md} lists them, and
 * the constants shared with the Go side.
 *
 * <p>The natives are package-private and unchecked: the wrapper classes ({@link TaskPool},
 * {@link NativeReservation}) validate arguments and call {@link #ensureLoaded()} before they
 * cross. The Go side validates again and throws {@code IllegalArgumentException} (bad size,
 * forged or wrong-type handle) or {@code IllegalStateException} (closed or stale handle); a Java
 * exception thrown inside an upcall comes back out unchanged, and a Go panic arrives as
 * {@code RuntimeException("nativepool: panic: …")}.
 *
 * <p>Handles are opaque, never 0, and generation-checked on the Go side: a stale or forged value is
 * rejected, never dereferenced.
 */
public final class NativeBridge {

  // The other copy of every constant below lives on the Go side, in jni/stats.go (API.md names
  // jni/exports.go; the exports there use these constants); change both together.

  /** {@code kind} code of {@link PoolKind#FAIR_UNIFIED} for {@link #openPool0}. */
  public static final int KIND_FAIR_UNIFIED = 0;
  /** {@code kind} code of {@link PoolKind#GREEDY_UNIFIED} for {@link #openPool0}. */
  public static final int KIND_GREEDY_UNIFIED = 1;

  /** {@link #poolStats0} index: bytes reserved by the pool's consumers. */
  public static final int STAT_RESERVED = 0;
  /** {@link #poolStats0} index: bytes held from Spark (granted and not yet released). */
  public static final int STAT_HELD = 1;
  /** {@link #poolStats0} index: bytes held from Spark and not reserved (chunked mode). */
  public static final int STAT_SLACK = 2;
  /** {@link #poolStats0} index: bytes reserved that Spark did not grant. */
  public static final int STAT_OVERCOMMIT = 3;
  /** {@link #poolStats0} index: highest reserved figure so far. */
  public static final int STAT_PEAK = 4;
  /** {@link #poolStats0} index: calls to {@link NativeUpstream#acquireMemory}. */
  public static final int STAT_ACQUIRE_CALLS = 5;
  /** {@link #poolStats0} index: calls to {@link NativeUpstream#releaseMemory}. */
  public static final int STAT_RELEASE_CALLS = 6;
  /** {@link #poolStats0} index: acquires that Spark answered with less than asked. */
  public static final int STAT_SHORT_GRANTS = 7;
  /** {@link #poolStats0} index: reclaim calls (Spark's spill requests). */
  public static final int STAT_SPILL_REQUESTS = 8;
  /** {@link #poolStats0} index: bytes released to Spark by reclaim calls. */
  public static final int STAT_SPILL_BYTES_FREED = 9;
  /** {@link #poolStats0} index: spillers that threw or failed. */
  public static final int STAT_SPILLER_FAILURES = 10;
  /** {@link #poolStats0} index: releases after the task's upstream was closed. */
  public static final int STAT_LATE_RELEASES = 11;
  /** Length of the {@link #poolStats0} array. */
  public static final int STAT_COUNT = 12;

  /** {@link #processStats0} index: task pools open now. */
  public static final int PSTAT_LIVE_TASKS = 0;
  /** {@link #processStats0} index: bytes reserved, all pools. */
  public static final int PSTAT_RESERVED = 1;
  /** {@link #processStats0} index: bytes held from Spark, all pools. */
  public static final int PSTAT_HELD = 2;
  /** {@link #processStats0} index: slack, all pools. */
  public static final int PSTAT_SLACK = 3;
  /** {@link #processStats0} index: overcommit, all pools. */
  public static final int PSTAT_OVERCOMMIT = 4;
  /** {@link #processStats0} index: the highest reserved figure of any pool. */
  public static final int PSTAT_PEAK = 5;
  /** {@link #processStats0} index: acquire plus release upcalls, cumulative. */
  public static final int PSTAT_UPSTREAM_CALLS = 6;
  /** {@link #processStats0} index: reclaim calls, cumulative. */
  public static final int PSTAT_SPILL_REQUESTS = 7;
  /** {@link #processStats0} index: bytes released to Spark by reclaim calls, cumulative. */
  public static final int PSTAT_SPILL_BYTES_FREED = 8;
  /** {@link #processStats0} index: late releases, cumulative. */
  public static final int PSTAT_LATE_RELEASES = 9;
  /** {@link #processStats0} index: pools closed with bytes still reserved, cumulative. */
  public static final int PSTAT_LEAKS = 10;
  /** {@link #processStats0} index: bytes those pools still had reserved, cumulative. */
  public static final int PSTAT_LEAKED_BYTES = 11;
  /** Length of the {@link #processStats0} array. */
  public static final int PSTAT_COUNT = 12;

  private NativeBridge() {}

  /**
   * Loads the library if this JVM has not yet (see {@link NativeLoader}) and returns normally only
   * once the natives of this class are usable.
   *
   * @throws IllegalStateException if the library could not be loaded or initialised; the loader's
   *     failure is its cause
   */
  public static void ensureLoaded() {
    NativeLoader.ensureLoaded(null);
  }

  /**
   * The process-wide statistics of the Go side ({@code PSTAT_*} indices), loading the library if
   * needed.
   */
  public static ProcessStats processStats() {
    ensureLoaded();
    return new ProcessStats(processStats0());
  }

  // ---- natives: see jni/API.md for the contract of each ----

  /** Caches the JavaVM, classes and method IDs; idempotent. Called by {@link NativeLoader}. */
  static native void init0();

  /** Opens (or joins) the task's pool; returns a pool handle. */
  static native long openPool0(
      long taskAttemptId, int kind, long poolSize, long chunkSize, NativeUpstream upstream);

  /** Releases one pool handle; the last handle of a task closes the pool. */
  static native void closePool0(long pool);

  /** Registers a consumer and returns a reservation handle; spiller may be null. */
  static native long newReservation0(
      long pool, String consumerName, boolean canSpill, NativeSpiller spiller);

  /** Returns null on success, else the refusal message (DataFusion wording). */
  static native String tryGrow0(long res, long n);

  /** Grows; never refuses (a short grant becomes overcommit). */
  static native void grow0(long res, long n);

  /** Shrinks; IllegalArgumentException if n exceeds the size. */
  static native void shrink0(long res, long n);

  /** Frees all bytes of the reservation; returns how many. */
  static native long free0(long res);

  /** The reservation's current size. */
  static native long size0(long res);

  /** Frees and closes the reservation; the handle becomes stale. */
  static native void closeReservation0(long res);

  /** Spark's spill: returns exactly the bytes released to Spark during this call. */
  static native long reclaim0(long pool, long target);

  /** Pool statistics, {@code STAT_*} indices. */
  static native long[] poolStats0(long pool);

  /** Process statistics, {@code PSTAT_*} indices. */
  static native long[] processStats0();

  /** Process-wide settings: debug logging and reserved-bytes warning thresholds. */
  static native void configure0(boolean logging, long[] thresholds);

  // ---- Arrow batches (jni/API.md "Arrow batches"). The other copy of the ARROW_STAT_* and
  // ARROW_PSTAT_* constants lives on the Go side, in jni/arrow_stats.go; change both together. ----

  /** {@link #arrowStats0} index: bytes in live buffers the reservation's Go allocator made. */
  public static final int ARROW_STAT_ALLOCATED = 0;
  /** {@link #arrowStats0} index: the reservation's size (what the pool counts for it). */
  public static final int ARROW_STAT_RESERVED = 1;
  /**
   * {@link #arrowStats0} index: bytes charged past a refusal (imports that existed), cumulative.
   */
  public static final int ARROW_STAT_FORCED = 2;
  /** {@link #arrowStats0} index: live buffers the Go allocator made. */
  public static final int ARROW_STAT_LIVE_BUFFERS = 3;
  /**
   * {@link #arrowStats0} index: bytes imported from Java that Go still holds (tracked, not
   * charged).
   */
  public static final int ARROW_STAT_IMPORTED = 4;
  /** {@link #arrowStats0} index: imported batches Go still holds. */
  public static final int ARROW_STAT_IMPORTS_LIVE = 5;
  /** {@link #arrowStats0} index: bytes exported to Java and not yet released by Java. */
  public static final int ARROW_STAT_EXPORTED = 6;
  /** {@link #arrowStats0} index: exported batches not yet released by Java. */
  public static final int ARROW_STAT_EXPORTS_LIVE = 7;
  /** {@link #arrowStats0} index: highest ALLOCATED so far. */
  public static final int ARROW_STAT_PEAK = 8;
  /** {@link #arrowStats0} index: allocations the pool refused, cumulative. */
  public static final int ARROW_STAT_REFUSALS = 9;
  /** {@link #arrowStats0} index: batch handles of this reservation not yet released. */
  public static final int ARROW_STAT_BATCHES = 10;
  /**
   * {@link #arrowStats0} index: 1 once the allocator is closed (closeArrow0, or its reservation or
   * pool closed).
   */
  public static final int ARROW_STAT_CLOSED = 11;
  /** Length of the {@link #arrowStats0} array. */
  public static final int ARROW_STAT_COUNT = 12;
  /** {@link #processArrowStats0} index: bytes in live buffers of every open Go allocator. */
  public static final int ARROW_PSTAT_ALLOCATED = 0;
  /**
   * {@link #processArrowStats0} index: open Go allocators (one per reservation that used Arrow).
   */
  public static final int ARROW_PSTAT_LIVE_ALLOCATORS = 1;
  /** {@link #processArrowStats0} index: batch handles not yet released. */
  public static final int ARROW_PSTAT_LIVE_BATCHES = 2;
  /** {@link #processArrowStats0} index: bytes exported to Java, not yet released by Java. */
  public static final int ARROW_PSTAT_EXPORTED = 3;
  /** {@link #processArrowStats0} index: bytes imported from Java that Go still holds. */
  public static final int ARROW_PSTAT_IMPORTED = 4;
  /** {@link #processArrowStats0} index: the process's resident set, bytes (-1 if unreadable). */
  public static final int ARROW_PSTAT_RSS = 5;
  /**
   * {@link #processArrowStats0} index: what the Go runtime holds mapped (heap, stacks, metadata).
   */
  public static final int ARROW_PSTAT_GO_RUNTIME = 6;
  /**
   * {@link #processArrowStats0} index: RSS - GO_RUNTIME - ALLOCATED (a trend to watch, never a
   * gate).
   */
  public static final int ARROW_PSTAT_UNEXPLAINED = 7;
  /** {@link #processArrowStats0} index: allocators closed with something still held, cumulative. */
  public static final int ARROW_PSTAT_LEAKS = 8;
  /** {@link #processArrowStats0} index: bytes those allocators still held, cumulative. */
  public static final int ARROW_PSTAT_LEAKED_BYTES = 9;
  /**
   * {@link #processArrowStats0} index: bytes closed Go allocators still hold (memory that outlived
   * its task, Java not having released an export), until freed.
   */
  public static final int ARROW_PSTAT_LINGERING = 10;
  /** {@link #processArrowStats0} index: closed Go allocators that still hold something. */
  public static final int ARROW_PSTAT_LINGERING_ALLOCATORS = 11;
  /** Length of the {@link #processArrowStats0} array. */
  public static final int ARROW_PSTAT_COUNT = 12;
  /**
   * Imports a C Data batch (moved) into Go, tracked by the reservation's allocator; a batch handle.
   */
  static native long importBatch0(long res, long arrayAddr, long schemaAddr);

  /** Exports a batch into zeroed C Data structs; the Go charge lasts until Java releases it. */
  static native void exportBatch0(long batch, long arrayAddr, long schemaAddr);

  /**
   * Deep-copies a batch into buffers the reservation's allocator makes (Go-charged); a new handle.
   */
  static native long copyBatch0(long res, long batch);

  /** Releases a batch handle; a second release throws IllegalStateException. */
  static native void releaseBatch0(long batch);

  /** The reservation's Arrow figures, {@code ARROW_STAT_*} indices. */
  static native long[] arrowStats0(long res);

  /** Process Arrow figures, {@code ARROW_PSTAT_*} indices. */
  static native long[] processArrowStats0();

  /** Process-wide Arrow settings; applies to allocators made afterwards. */
  static native void configureArrow0(boolean allocationSites);

  /** Closes the reservation's allocator now; returns its leak report, or null. */
  static native String closeArrow0(long res);

  // Public entry points for org.nativepool.spark.arrow (NativeBatch, NativeArrow): the reservation
  // is guarded for the length of the call, as NativeReservation's own methods do. Batch handles
  // are validated by the Go side (generation-checked).

  /** {@link #importBatch0} on a guarded reservation. */
  public static long importBatch(NativeReservation res, long arrayAddr, long schemaAddr) {
    res.enter();
    try {
      return importBatch0(res.handle(), arrayAddr, schemaAddr);
    } finally {
      res.exit();
    }
  }

  /** {@link #exportBatch0}. */
  public static void exportBatch(long batch, long arrayAddr, long schemaAddr) {
    exportBatch0(batch, arrayAddr, schemaAddr);
  }

  /** {@link #copyBatch0} on a guarded reservation. */
  public static long copyBatch(NativeReservation res, long batch) {
    res.enter();
    try {
      return copyBatch0(res.handle(), batch);
    } finally {
      res.exit();
    }
  }

  /** {@link #releaseBatch0}. */
  public static void releaseBatch(long batch) {
    releaseBatch0(batch);
  }

  /** {@link #arrowStats0} on a guarded reservation. */
  public static long[] arrowStats(NativeReservation res) {
    res.enter();
    try {
      return arrowStats0(res.handle());
    } finally {
      res.exit();
    }
  }

  /** {@link #processArrowStats0}, loading the library if needed. */
  public static long[] processArrowStats() {
    ensureLoaded();
    return processArrowStats0();
  }

  /** {@link #configureArrow0}, loading the library if needed. */
  public static void configureArrow(boolean allocationSites) {
    ensureLoaded();
    configureArrow0(allocationSites);
  }

  /** {@link #closeArrow0} on a guarded reservation. */
  public static String closeArrow(NativeReservation res) {
    res.enter();
    try {
      return closeArrow0(res.handle());
    } finally {
      res.exit();
    }
  }
}
