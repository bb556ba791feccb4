package org.nativepool.spark.example;

import org.nativepool.spark.NativeBridge;

/**
 * The natives of the demo's Go engine ({@code examples/spark/native}, built into
 * {@code libnativesort.so}): an external sort over Arrow batches that registers a spillable
 * consumer in the task's native pool. That library also carries every native of
 * {@link NativeBridge} (one Go runtime per process), so it is loaded instead of
 * {@code libnativepool.so}, through {@code spark.nativepool.library}.
 *
 * <p>The natives are package-private and unchecked: {@link NativeSort} validates and guards before
 * it crosses. The Go side validates again: a forged or zero handle is
 * {@code IllegalArgumentException}, a closed one {@code IllegalStateException}, a Java exception
 * raised by an upcall during the call comes back out unchanged, a Go panic arrives as
 * {@code RuntimeException("nativepool: panic: …")}.
 */
public final class SortBridge {

  // The other copy of these constants is examples/spark/native/sorts.go; change both together.

  /** {@link #stats0} index: rows pushed. */
  public static final int SORT_STAT_ROWS_IN = 0;
  /** {@link #stats0} index: rows returned by {@link #next0}. */
  public static final int SORT_STAT_ROWS_OUT = 1;
  /** {@link #stats0} index: spills the sorter started because the pool refused a buffer. */
  public static final int SORT_STAT_SELF_SPILLS = 2;
  /** {@link #stats0} index: spills Spark asked for (its spill → reclaim) that freed bytes. */
  public static final int SORT_STAT_REQUESTED_SPILLS = 3;
  /** {@link #stats0} index: every spill request, including those that found nothing to free. */
  public static final int SORT_STAT_SPILL_REQUESTS = 4;
  /** {@link #stats0} index: rows written to run files. */
  public static final int SORT_STAT_SPILLED_ROWS = 5;
  /** {@link #stats0} index: bytes of run files written. */
  public static final int SORT_STAT_SPILLED_BYTES = 6;
  /** {@link #stats0} index: run files written. */
  public static final int SORT_STAT_RUNS = 7;
  /** {@link #stats0} index: multi-pass merges. */
  public static final int SORT_STAT_MERGE_PASSES = 8;
  /** {@link #stats0} index: the sorter's reservation now. */
  public static final int SORT_STAT_RESERVED = 9;
  /** {@link #stats0} index: its high-water mark. */
  public static final int SORT_STAT_PEAK_RESERVED = 10;
  /** {@link #stats0} index: bytes in live buffers of the sorter's Go allocator. */
  public static final int SORT_STAT_ALLOCATED = 11;
  /** {@link #stats0} index: high-water mark of allocated, exact. */
  public static final int SORT_STAT_PEAK_ALLOCATED = 12;
  /** {@link #stats0} index: allocated ≤ reserved checks made. */
  public static final int SORT_STAT_CHECKS = 13;
  /** {@link #stats0} index: checks that found allocated > reserved. */
  public static final int SORT_STAT_VIOLATIONS = 14;
  /** {@link #stats0} index: batches imported from Java. */
  public static final int SORT_STAT_BATCHES_IN = 15;
  /** {@link #stats0} index: batches exported to Java. */
  public static final int SORT_STAT_BATCHES_OUT = 16;
  /** Length of the {@link #stats0} array. */
  public static final int SORT_STAT_COUNT = 17;

  /** {@link #sample0} index: sorters open now. */
  public static final int SAMPLE_LIVE_SORTERS = 0;
  /** {@link #sample0} index: sum of their reservations. */
  public static final int SAMPLE_RESERVED = 1;
  /** {@link #sample0} index: sum of their Go allocators' live bytes. */
  public static final int SAMPLE_ALLOCATED = 2;
  /** {@link #sample0} index: allocated ≤ reserved checks, every sorter ever. */
  public static final int SAMPLE_CHECKS = 3;
  /** {@link #sample0} index: checks that failed, every sorter ever. */
  public static final int SAMPLE_VIOLATIONS = 4;
  /** {@link #sample0} index: bytes the Go runtime holds mapped (heap, stacks, metadata). */
  public static final int SAMPLE_GO_RUNTIME = 5;
  /** {@link #sample0} index: the process's resident set. */
  public static final int SAMPLE_RSS = 6;
  /** Length of the {@link #sample0} array. */
  public static final int SAMPLE_COUNT = 7;

  private SortBridge() {}

  /**
   * Returns normally once the library is loaded and carries these natives.
   *
   * @throws IllegalStateException if the library could not be loaded, or the loaded library is
   *     {@code libnativepool.so} (set {@code spark.nativepool.library} to {@code
   *     libnativesort.so})
   */
  public static void ensureLoaded() {
    NativeBridge.ensureLoaded();
    Probe.check();
  }

  /** Probes once per JVM that the loaded library has these natives. */
  private static final class Probe {
    private static final LinkageError MISSING = probe();

    private static LinkageError probe() {
      try {
        sample0();
        return null;
      } catch (UnsatisfiedLinkError e) {
        return e;
      }
    }

    static void check() {
      if (MISSING != null) {
        throw new IllegalStateException(
            "nativepool: the loaded native library has no SortBridge natives; load"
                + " libnativesort.so (spark.nativepool.library or -Dnativepool.library) instead"
                + " of libnativepool.so",
            MISSING);
      }
    }
  }

  /** A snapshot of the live sorters' books, the Go runtime's share and RSS ({@code SAMPLE_*}). */
  public static long[] sample() {
    ensureLoaded();
    return sample0();
  }

  // ---- natives: see examples/spark/native/main.go for the contract of each ----

  /** Opens a sorter on the (open) pool of the task; returns its handle. */
  static native long create0(long taskAttemptId, String name, int batchRows, String tempDir);

  /** Imports the batch at the two struct addresses, copies it into the sorter, releases it. */
  static native void push0(long sorter, long arrayAddr, long schemaAddr);

  /** Ends the input. */
  static native void finish0(long sorter);

  /** Exports the next sorted batch into the two (empty) structs; false after the last. */
  static native boolean next0(long sorter, long outArrayAddr, long outSchemaAddr);

  /** The sorter's figures, {@code SORT_STAT_*}. */
  static native long[] stats0(long sorter);

  /** Releases everything the sorter holds; a leaked output batch throws after releasing. */
  static native void close0(long sorter);

  /** {@code SAMPLE_*}, over the process. */
  static native long[] sample0();
}
