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

  // The other copy of the KIND_* constants lives on the Go side, in internal/bridge/stats.go
  // (API.md names jni/exports.go; the exports there use these constants); change both together. The
  // stats arrays are named by the enums PoolStat, ProcessStat, ArrowStat and ArrowProcessStat,
  // which a Go test checks against the tables in internal/bridge/stats.go and
  // internal/bridge/arrow_stats.go.

  /** {@code kind} code of {@link PoolKind#FAIR_UNIFIED} for {@link #openPool0}. */
  public static final int KIND_FAIR_UNIFIED = 0;
  /** {@code kind} code of {@link PoolKind#GREEDY_UNIFIED} for {@link #openPool0}. */
  public static final int KIND_GREEDY_UNIFIED = 1;

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
   * The process-wide statistics of the Go side ({@link ProcessStat}), loading the library if
   * needed.
   */
  public static ProcessStats processStats() {
    ensureLoaded();
    return new ProcessStats(processStats0());
  }

  // ---- natives: see jni/API.md for the contract of each ----

  /**
   * The nativepool release the library is built from; needs no {@link #init0()}. {@link
   * NativeLoader} compares it with the jar's version before initialising.
   */
  static native String version0();

  /** Caches the JavaVM, classes and method IDs; idempotent. Called by {@link NativeLoader}. */
  static native void init0();

  /**
   * Opens (or joins) the task's pool; returns a pool handle. {@code owner} is a candidate: only an
   * open that creates the pool makes a global ref to it (and, for a {@link SparkTaskUpstream},
   * stores the Go task handle in it); on success a {@link SparkTaskUpstream} candidate is told the
   * task's registered owner ({@link SparkTaskUpstream#registeredOwner()}).
   */
  static native long openPool0(
      long taskAttemptId, int kind, long poolSize, long chunkSize, NativeUpstream owner);

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

  /**
   * Spark's spill of a task's consumer, through the Go task handle its owner holds: the bytes
   * released to Spark during this call; 0 if the task's pool has closed (stale task handle).
   */
  static native long reclaimTask0(long task, long target);

  /** Pool statistics, indexed by {@link PoolStat}. */
  static native long[] poolStats0(long pool);

  /**
   * The highest reserved bytes of every consumer the pool has had, as {@code name<TAB>bytes}
   * lines, largest first (for the executor ledger's per-consumer high-water marks).
   */
  static native String consumerPeaks0(long pool);

  /** Process statistics, indexed by {@link ProcessStat}. */
  static native long[] processStats0();

  /**
   * What the task's Go engines reported with {@code jni.ReportSpill} since the last call, and
   * forgets it: {@code {memory, disk}} bytes (zeros if nothing).
   */
  static native long[] takeSpill0(long taskAttemptId);

  /** Process-wide settings: debug logging and reserved-bytes warning thresholds. */
  static native void configure0(boolean logging, long[] thresholds);

  /**
   * Makes Go's log records go to {@link NativeLog} from now on; {@code levels} is {@code
   * name=LEVEL,…} ({@link NativeLog#levels()}), which must name {@code org.nativepool}. Go then
   * calls {@code NativeLog.log} only for records at or above their logger's level.
   */
  static native void configureLog0(String levels);

  /**
   * Process-wide memory policy, applied at once: glibc's {@code M_MMAP_THRESHOLD} via mallopt (0 =
   * leave glibc alone; a {@code MALLOC_MMAP_THRESHOLD_} in the environment wins), the Go runtime's
   * soft memory limit (0 = leave it alone, -1 = Go baseline + memoryOverhead / 8). Logs what it
   * set once.
   */
  static native void configureRuntime0(
      long mallocMmapThreshold, long goMemoryLimit, long memoryOverhead);

  // ---- Arrow batches (jni/API.md "Arrow batches"). ----
  /**
   * Imports a C Data batch (moved) into Go, tracked by the reservation's allocator; a batch handle.
   */
  static native long importBatch0(long res, long arrayAddr, long schemaAddr);

  /** Exports a batch into zeroed C Data structs; the Go charge lasts until Java releases it. */
  static native void exportBatch0(long batch, long arrayAddr, long schemaAddr);

  /**
   * Deep-copies a batch into buffers the reservation's allocator makes (Go-charged); a new handle.
   * {@code site}: the Java caller ({@link CallerSites}), or null; with allocation sites on, the
   * copy's buffers are recorded as allocated there.
   */
  static native long copyBatch0(long res, long batch, String site);

  /** Releases a batch handle; a second release throws IllegalStateException. */
  static native void releaseBatch0(long batch);

  /** The reservation's Arrow figures, indexed by {@link org.nativepool.spark.arrow.ArrowStat}. */
  static native long[] arrowStats0(long res);

  /** Process Arrow figures, indexed by {@link org.nativepool.spark.arrow.ArrowProcessStat}. */
  static native long[] processArrowStats0();

  /** Process-wide Arrow settings; applies to allocators made afterwards. */
  static native void configureArrow0(boolean allocationSites);

  /** Closes the reservation's allocator now; returns its leak report, or null. */
  static native String closeArrow0(long res);

  /**
   * Records a leak Java found at a task's end: counted in {@link ProcessStat#LEAKS} and {@link
   * ProcessStat#LEAKED_BYTES}, logged at WARN, listed by {@link NativeLeaks#recent()}. {@code
   * kind}: one of {@link NativeLeaks.Kind}'s codes; {@code site} may be null.
   */
  static native void reportLeak0(
      long taskAttemptId, String consumer, String kind, long bytes, long resident, String site);

  /** Sets what Java's leaked Arrow buffers still hold (part of LEAKED_RESIDENT). */
  static native void leakResident0(long bytes);

  /** The last leaks recorded (at most 256), one per line: see jni/API.md "Leaks". */
  static native String recentLeaks0();

  /** Live Go Arrow memory by consumer and site, largest first, one per line: jni/API.md. */
  static native String liveNative0(int max);

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

  /**
   * {@link #copyBatch0} on a guarded reservation, with the Java caller as the copy's allocation site
   * when sites are on.
   */
  public static long copyBatch(NativeReservation res, long batch) {
    String site = CallerSites.capture();
    res.enter();
    try {
      return copyBatch0(res.handle(), batch, site);
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

  /** {@link #configureRuntime0}, loading the library if needed. */
  public static void configureRuntime(
      long mallocMmapThreshold, long goMemoryLimit, long memoryOverhead) {
    ensureLoaded();
    configureRuntime0(mallocMmapThreshold, goMemoryLimit, memoryOverhead);
  }

  /** {@link #configureArrow0}, loading the library if needed. */
  public static void configureArrow(boolean allocationSites) {
    ensureLoaded();
    configureArrow0(allocationSites);
    CallerSites.setEnabled(allocationSites);
  }

  /**
   * Records a leak found on the Java side at a task's end, for {@code org.nativepool.spark.arrow}
   * (see {@link #reportLeak0}); never throws for a bad figure (it is logged instead): a leak report
   * must not fail the task's end.
   *
   * @param kind one of {@link NativeLeaks.Kind}
   * @param site the Java caller that allocated or reserved, or null
   */
  public static void reportLeak(
      long taskAttemptId, String consumer, NativeLeaks.Kind kind, long bytes, long resident,
      String site) {
    NativeLeaks.report(taskAttemptId, consumer, kind, bytes, resident, site);
  }

  /**
   * Sets what Java's leaked Arrow buffers still hold after their tasks (part of {@link
   * ProcessStat#LEAKED_RESIDENT}), for {@code org.nativepool.spark.arrow}.
   */
  public static void setJavaLeakResident(long bytes) {
    ensureLoaded();
    leakResident0(Math.max(0, bytes));
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
