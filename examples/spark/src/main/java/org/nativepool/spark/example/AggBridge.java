package org.nativepool.spark.example;

import org.nativepool.spark.jni.Natives;

/**
 * The natives of the soak's streaming aggregation ({@code examples/spark/native/agg_exports.go},
 * built into {@code libnativesort.so} with the demo's sort and every native of {@link
 * Natives}): a count and sum by key over Arrow batches, with its state on disk between
 * micro-batches and a spillable consumer in the task's native pool.
 *
 * <p>The natives are package-private and unchecked: {@link NativeAgg} validates and guards before
 * it crosses. The Go side validates again: a forged or zero handle is {@code
 * IllegalArgumentException}, a closed one {@code IllegalStateException}, a Java exception raised by
 * an upcall during the call comes back out unchanged, a Go panic arrives as {@code
 * RuntimeException("nativepool: panic: …")}.
 */
public final class AggBridge {

  // The other copy of the SAMPLE_* constants is examples/spark/native/aggs.go; change both
  // together (a Go test compares them). The stats0 array is named by the enum AggStat.

  /** {@link #sample0} index: aggregations open now. */
  public static final int SAMPLE_LIVE = 0;
  /** {@link #sample0} index: batches the planted leak keeps ({@code --leak}), ever. */
  public static final int SAMPLE_RETAINED_BATCHES = 1;
  /** {@link #sample0} index: their bytes. */
  public static final int SAMPLE_RETAINED_BYTES = 2;
  /** Length of the {@link #sample0} array. */
  public static final int SAMPLE_COUNT = 3;

  private AggBridge() {}

  /**
   * Returns normally once the library is loaded and carries these natives.
   *
   * @throws IllegalStateException if the library could not be loaded, or the loaded library lacks
   *     them (set {@code spark.nativepool.library} to {@code libnativesort.so})
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
            "nativepool: the loaded native library has no AggBridge natives; load"
                + " libnativesort.so (spark.nativepool.library or -Dnativepool.library)",
            MISSING);
      }
    }
  }

  /** {@code SAMPLE_*}: the aggregations open now and what the planted leak keeps. */
  public static long[] sample() {
    ensureLoaded();
    return sample0();
  }

  // ---- natives: see examples/spark/native/agg_exports.go for the contract of each ----

  /**
   * Opens an aggregation of micro-batch {@code version} on the (open) pool of the task; returns
   * its handle. It reads state version {@code version - 1} from {@code stateDir} (none for 0).
   */
  static native long create0(
      long taskAttemptId,
      String name,
      long version,
      String stateDir,
      String tempDir,
      int batchRows,
      boolean allocationSites,
      long retainBytes);

  /** Imports the batch (key, value) at the two struct addresses, adds it, releases it. */
  static native void push0(long agg, long arrayAddr, long schemaAddr);

  /** Ends the input. */
  static native void finish0(long agg);

  /**
   * Exports the next batch of updated groups (key, count, sum) into the two (empty) structs; false
   * after the last, when the new state version is committed.
   */
  static native boolean next0(long agg, long outArrayAddr, long outSchemaAddr);

  /** The aggregation's figures, indexed by {@link AggStat}. */
  static native long[] stats0(long agg);

  /** Releases everything the aggregation holds; a leaked output batch throws after releasing. */
  static native void close0(long agg);

  /** {@code SAMPLE_*}, over the process. */
  static native long[] sample0();
}
