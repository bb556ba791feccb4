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
}
