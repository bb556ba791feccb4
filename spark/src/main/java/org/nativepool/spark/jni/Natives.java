package org.nativepool.spark.jni;

import java.util.List;
import java.util.concurrent.atomic.LongAdder;

/**
 * The binding: every native method of {@code libnativepool.so}, exactly as {@code jni/API.md} lists
 * them (the JNI symbols are {@code Java_org_nativepool_spark_jni_Natives_<name>0}), but the two
 * that load it, {@code version0} and {@code init0}, which {@link LibraryLoader} declares.
 *
 * <p>The natives themselves ({@code name0}) are package-private. The rest of the plugin calls the
 * public methods of the same name without the {@code 0}: each is the native, with the library
 * loaded first where a caller may be the first to cross ({@link #processStats()} and the other
 * process-wide reads and settings). They take raw handles and validate nothing: the layers above
 * ({@code org.nativepool.spark.memory}) validate sizes and guard handles against a concurrent close
 * before they cross. The Go side validates again and throws {@code IllegalArgumentException} (bad
 * size, forged or wrong-type handle) or {@code IllegalStateException} (closed or stale handle); a
 * Java exception thrown inside an upcall comes back out unchanged, and a Go panic arrives as {@code
 * RuntimeException("nativepool: panic: …")}.
 *
 * <p>Handles are opaque, never 0, and generation-checked on the Go side: a stale or forged value is
 * rejected, never dereferenced.
 */
public final class Natives {
  private Natives() {}

  /**
   * Loads the jar's library if this JVM has loaded none yet ({@link LibraryLoader}) and returns
   * normally only once the natives are usable.
   *
   * @throws IllegalStateException if the library could not be loaded or initialised; the loader's
   *     failure is its cause
   */
  public static void ensureLoaded() {
    LibraryLoader.ensureLoaded(null);
  }

  // ---- natives: see jni/API.md for the contract of each ----

  static native long openPool0(
      long taskAttemptId, int kind, long poolSize, long chunkSize, Upstream owner);

  static native void closePool0(long pool);

  static native long newReservation0(
      long pool, String consumerName, boolean canSpill, Spiller spiller);

  static native String tryGrow0(long res, long n);

  static native void grow0(long res, long n);

  static native void shrink0(long res, long n);

  static native long size0(long res);

  static native void closeReservation0(long res);

  static native long reclaim0(long pool, long target);

  static native long reclaimTask0(long task, long target);

  static native long[] poolStats0(long pool);

  static native String consumerPeaks0(long pool);

  static native long[] processStats0();

  static native long[] takeSpill0(long taskAttemptId);

  static native void configure0(boolean logging, long[] thresholds);

  static native void configureLog0(String levels);

  static native void configureRuntime0(
      long mallocMmapThreshold, long goMemoryLimit, long memoryOverhead);

  static native long importBatch0(long res, long arrayAddr, long schemaAddr);

  static native void exportBatch0(long batch, long arrayAddr, long schemaAddr);

  static native long copyBatch0(long res, long batch, String site);

  static native void releaseBatch0(long batch);

  static native long[] arrowStats0(long res);

  static native long[] processArrowStats0();

  static native void configureArrow0(boolean allocationSites);

  static native String closeArrow0(long res);

  static native void reportLeak0(
      long taskAttemptId, String consumer, String kind, long bytes, long resident, String site);

  static native void leakResident0(long bytes);

  static native String recentLeaks0();

  static native String liveNative0(int max);

  static native void configureGuard0(
      boolean enabled,
      long reserve,
      long limit,
      boolean limitExplicit,
      boolean processTree,
      OffHeap offHeap);

  static native void addSpillDir0(String dir);

  static native String guardEpisodes0();

  // ---- task pools and reservations ----

  /**
   * Opens (or joins) the task's pool; returns a pool handle. {@code owner} is a candidate: only an
   * open that creates the pool makes a global ref to it and, for a {@link TaskOwner}, stores the Go
   * task handle in it; on success a {@link TaskOwner} candidate is told the task's registered owner
   * ({@link TaskOwner#registeredOwner()}).
   */
  public static long openPool(
      long taskAttemptId, int kind, long poolSize, long chunkSize, Upstream owner) {
    return openPool0(taskAttemptId, kind, poolSize, chunkSize, owner);
  }

  /** Releases one pool handle; the last handle of a task closes the pool. */
  public static void closePool(long pool) {
    closePool0(pool);
  }

  /** Registers a consumer and returns a reservation handle; {@code spiller} may be null. */
  public static long newReservation(
      long pool, String consumerName, boolean canSpill, Spiller spiller) {
    return newReservation0(pool, consumerName, canSpill, spiller);
  }

  /** Returns null on success, else the refusal message (DataFusion's wording). */
  public static String tryGrow(long res, long n) {
    return tryGrow0(res, n);
  }

  /** Grows; never refuses (a short grant becomes overcommit). */
  public static void grow(long res, long n) {
    grow0(res, n);
  }

  /** Shrinks; {@code IllegalArgumentException} if {@code n} exceeds the size. */
  public static void shrink(long res, long n) {
    shrink0(res, n);
  }

  /** The reservation's current size in Go. */
  public static long size(long res) {
    return size0(res);
  }

  /** Frees and closes the reservation; the handle becomes stale. */
  public static void closeReservation(long res) {
    closeReservation0(res);
  }

  /** Spark's spill of a pool: the bytes released to Spark during this call. */
  public static long reclaim(long pool, long target) {
    return reclaim0(pool, target);
  }

  /**
   * Spark's spill of a task's consumer, through the Go task handle its owner holds: the bytes
   * released to Spark during this call; 0 if the task's pool has closed (stale task handle) or its
   * spill is already running on this thread.
   */
  public static long reclaimTask(long task, long target) {
    return reclaimTask0(task, target);
  }

  /** The pool's figures, indexed by {@link PoolStat}. */
  public static PoolStats poolStats(long pool) {
    return new PoolStats(poolStats0(pool));
  }

  /**
   * The highest reserved bytes of every consumer the pool has had, as {@code name<TAB>bytes} lines,
   * largest first ({@link Records}).
   */
  public static String consumerPeaks(long pool) {
    return consumerPeaks0(pool);
  }

  /**
   * What the task's Go engines reported with {@code jni.ReportSpill} since the last call, and
   * forgets it: {@code {memory, disk}} bytes (zeros if nothing).
   */
  public static long[] takeSpill(long taskAttemptId) {
    return takeSpill0(taskAttemptId);
  }

  // ---- process-wide ----

  /**
   * Calls of {@code processStats0} through {@link #processStats()}, and of {@code
   * processArrowStats0} through {@link #processArrowStats()}, since the class loaded. A
   * processStats0 reads /proc, the cgroup and the Go runtime (and glibc's {@code mallinfo2}, which
   * locks every malloc arena in turn, at most once a second), so what watching costs is counted in
   * these reads: tests assert that a metrics scrape adds none and a poll period one of each. One
   * {@link LongAdder} increment per call, beside the native read it counts.
   */
  private static final LongAdder PROCESS_STATS_CALLS = new LongAdder();

  private static final LongAdder PROCESS_ARROW_STATS_CALLS = new LongAdder();

  /**
   * The process-wide figures of the Go side ({@link ProcessStat}), loading the library if needed.
   */
  public static ProcessStats processStats() {
    ensureLoaded();
    PROCESS_STATS_CALLS.increment();
    return new ProcessStats(processStats0());
  }

  /** The process-wide Arrow figures ({@link ArrowProcessStat}), loading the library if needed. */
  public static ArrowProcessStats processArrowStats() {
    ensureLoaded();
    PROCESS_ARROW_STATS_CALLS.increment();
    return new ArrowProcessStats(processArrowStats0());
  }

  /** How many times {@link #processStats()} has called {@code processStats0} in this JVM. */
  public static long processStatsCalls() {
    return PROCESS_STATS_CALLS.sum();
  }

  /**
   * How many times {@link #processArrowStats()} has called {@code processArrowStats0} in this JVM.
   */
  public static long processArrowStatsCalls() {
    return PROCESS_ARROW_STATS_CALLS.sum();
  }

  /**
   * Process-wide pool settings, for pools opened afterwards: debug logging and the levels of a task
   * pool's reserved bytes whose crossings are logged.
   */
  public static void configure(boolean logging, long[] thresholds) {
    ensureLoaded();
    configure0(logging, thresholds);
  }

  /**
   * Process-wide memory policy, applied at once: glibc's {@code M_MMAP_THRESHOLD} via mallopt (0 =
   * leave glibc alone), the Go runtime's soft memory limit (0 = leave it alone, -1 = Go baseline +
   * memoryOverhead / 8). Logged once by Go.
   */
  public static void configureRuntime(
      long mallocMmapThreshold, long goMemoryLimit, long memoryOverhead) {
    ensureLoaded();
    configureRuntime0(mallocMmapThreshold, goMemoryLimit, memoryOverhead);
  }

  /** Process-wide Arrow settings; applies to allocators made afterwards. */
  public static void configureArrow(boolean allocationSites) {
    ensureLoaded();
    configureArrow0(allocationSites);
  }

  // ---- Arrow batches (jni/API.md "Arrow batches") ----

  /** Imports a C Data batch (moved) into Go, tracked by the reservation's allocator. */
  public static long importBatch(long res, long arrayAddr, long schemaAddr) {
    return importBatch0(res, arrayAddr, schemaAddr);
  }

  /** Exports a batch into zeroed C Data structs; the Go charge lasts until Java releases it. */
  public static void exportBatch(long batch, long arrayAddr, long schemaAddr) {
    exportBatch0(batch, arrayAddr, schemaAddr);
  }

  /**
   * Deep-copies a batch into buffers the reservation's allocator makes (Go-charged); a new handle.
   * {@code site}: the Java caller, or null; with allocation sites on, the copy's buffers are
   * recorded as allocated there.
   */
  public static long copyBatch(long res, long batch, String site) {
    return copyBatch0(res, batch, site);
  }

  /** Releases a batch handle; a second release throws {@code IllegalStateException}. */
  public static void releaseBatch(long batch) {
    releaseBatch0(batch);
  }

  /** The reservation's Arrow figures ({@link ArrowStat}). */
  public static ArrowStats arrowStats(long res) {
    return new ArrowStats(arrowStats0(res));
  }

  /** Closes the reservation's allocator now; returns its leak report, or null. */
  public static String closeArrow(long res) {
    return closeArrow0(res);
  }

  // ---- leaks ----

  /**
   * Records a leak Java found at a task's end: counted in {@link ProcessStat#LEAKS} and {@link
   * ProcessStat#LEAKED_BYTES}, logged at WARN, listed by {@link #recentLeaks()}.
   */
  public static void reportLeak(
      long taskAttemptId, String consumer, LeakKind kind, long bytes, long resident, String site) {
    ensureLoaded();
    reportLeak0(taskAttemptId, consumer, kind.code(), bytes, resident, site);
  }

  /** Sets what Java's leaked Arrow buffers still hold (part of LEAKED_RESIDENT). */
  public static void leakResident(long bytes) {
    ensureLoaded();
    leakResident0(Math.max(0, bytes));
  }

  /** The last leaks recorded (at most 256), one per line ({@link Records}). */
  public static String recentLeaks() {
    ensureLoaded();
    return recentLeaks0();
  }

  /** Live Go Arrow memory by consumer and site, largest first, one per line ({@link Records}). */
  public static String liveNative(int max) {
    ensureLoaded();
    return liveNative0(max);
  }

  // ---- the pod guard (jni/API.md "configureGuard0") ----

  /**
   * Starts the pod guard, replacing the one running (whose ballast goes back to Spark); {@code
   * enabled} false only stops it. It keeps the memory cgroup's limit where there is one, else
   * {@code limit} (> 0) against the process's resident memory, else it stands by; with {@code
   * limitExplicit} the tighter of the cgroup's and {@code limit}. {@code reserve} 0: 2% of the
   * limit, at least 32 MiB.
   *
   * @throws IllegalArgumentException for a negative reserve or limit; nothing changes
   */
  public static void configureGuard(
      boolean enabled, long reserve, long limit, boolean limitExplicit) {
    configureGuard(enabled, reserve, limit, limitExplicit, null);
  }

  /**
   * {@link #configureGuard(boolean, long, long, boolean)} with Spark's off-heap memory as a whole
   * ({@code offHeap}, may be null): with it, what native consumers free goes back to Spark, and
   * while the headroom is short the guard holds every free byte of it above its floor, so that
   * every consumer of the executor gives way, not only native ones. The library keeps a global ref
   * to {@code offHeap} until the guard stops, and hands back what it holds first.
   *
   * @throws IllegalArgumentException for a negative reserve or limit; nothing changes
   */
  public static void configureGuard(
      boolean enabled, long reserve, long limit, boolean limitExplicit, OffHeap offHeap) {
    configureGuard(enabled, reserve, limit, limitExplicit, false, offHeap);
  }

  /**
   * {@link #configureGuard(boolean, long, long, boolean, OffHeap)}, where with {@code
   * processTree} the guard holds {@code limit} (where no cgroup sets one) against the resident
   * memory of the process tree the executor belongs to, as YARN's NodeManager measures its
   * container (every process's resident pages, file-backed ones and the Python workers' included),
   * instead of the JVM's own anonymous and shared memory.
   *
   * @throws IllegalArgumentException for a negative reserve or limit; nothing changes
   */
  public static void configureGuard(
      boolean enabled,
      long reserve,
      long limit,
      boolean limitExplicit,
      boolean processTree,
      OffHeap offHeap) {
    ensureLoaded();
    configureGuard0(enabled, reserve, limit, limitExplicit, processTree, offHeap);
  }

  /**
   * Adds a directory spills write in (Spark's local directories, an engine's spill directory):
   * near the limit with dirty pages, the guard writes the files written there in the last 35 s
   * to disk and drops them from the page cache, so that what a spill freed can leave the memory
   * cgroup (which cannot reclaim a dirty page).
   *
   * @throws IllegalArgumentException for a null or relative path, or one that is not an existing
   *     directory; nothing changes
   */
  public static void addSpillDir(String dir) {
    ensureLoaded();
    addSpillDir0(dir);
  }

  /** The pod guard's last episodes (at most 32), oldest first; empty when no guard runs. */
  public static List<GuardEpisode> guardEpisodes() {
    ensureLoaded();
    return GuardEpisode.parse(guardEpisodes0());
  }
}
