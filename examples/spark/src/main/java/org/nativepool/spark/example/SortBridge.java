package org.nativepool.spark.example;

import org.nativepool.spark.jni.Natives;

/**
 * The natives of the demo's Go engine ({@code examples/spark/native}, built into
 * {@code libnativesort.so}): an external sort over Arrow batches that registers a spillable
 * consumer in the task's native pool. That library also carries every native of
 * {@link Natives} (one Go runtime per process), so it is loaded instead of
 * {@code libnativepool.so}, through {@code spark.nativepool.library}.
 *
 * <p>The natives are package-private and unchecked: {@link NativeSort} validates and guards before
 * it crosses. The Go side validates again: a forged or zero handle is
 * {@code IllegalArgumentException}, a closed one {@code IllegalStateException}, a Java exception
 * raised by an upcall during the call comes back out unchanged, a Go panic arrives as
 * {@code RuntimeException("nativepool: panic: …")}.
 */
public final class SortBridge {

  // The other copy of the SAMPLE_* constants is examples/spark/native/sorts.go; change both
  // together. The stats0 array is named by the enum SortStat, which a Go test checks against the
  // table in sorts.go.

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
  /**
   * {@link #sample0} index: the peak of {@link #SAMPLE_GO_RUNTIME}, read by Go after every sorter
   * call and at every sample ({@code runtime/metrics}).
   */
  public static final int SAMPLE_GO_PEAK = 7;
  /**
   * {@link #sample0} index: every byte the Go runtime has mapped, released to the OS or not; it
   * never shrinks, so it bounds the Go runtime's true peak from above.
   */
  public static final int SAMPLE_GO_MAPPED = 8;
  /** Length of the {@link #sample0} array. */
  public static final int SAMPLE_COUNT = 9;

  private SortBridge() {}

  /**
   * Returns normally once the library is loaded and carries these natives.
   *
   * @throws IllegalStateException if the library could not be loaded, or the loaded library is
   *     {@code libnativepool.so} (set {@code spark.nativepool.library} to {@code
   *     libnativesort.so})
   */
  public static void ensureLoaded() {
    Natives.ensureLoaded();
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

  /** The sorter's figures, indexed by {@link SortStat}. */
  static native long[] stats0(long sorter);

  /** Releases everything the sorter holds; a leaked output batch throws after releasing. */
  static native void close0(long sorter);

  /** {@code SAMPLE_*}, over the process. */
  static native long[] sample0();
}
