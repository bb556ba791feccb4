package org.nativepool.spark.driver;

import org.apache.spark.SparkConf;
import org.nativepool.spark.config.MemoryOverhead;

/**
 * {@code spark.nativepool.autoOverhead}: the driver's choice of {@code
 * spark.executor.memoryOverhead}, made in {@code DriverPlugin.init}, which runs before {@code
 * SparkContext} builds the default ResourceProfile from the configuration (SparkContext creates the
 * plugins, then the {@code ResourceProfileManager}), so executors are requested with it on YARN
 * and Kubernetes. The off-heap size counts toward the container on its own when {@code
 * spark.memory.offHeap.enabled} is true.
 *
 * <p>The formula, in MiB (the off-heap terms rounded up):
 *
 * <pre>
 *   overhead = Spark's own memoryOverhead of the executor ({@link MemoryOverhead}: max(
 *                  spark.executor.memoryOverheadFactor (0.10) × spark.executor.memory (1g),
 *                  spark.executor.minMemoryOverhead (384m)), truncated as Spark does)
 *            + {@value #GO_RUNTIME_MIB} MiB
 *            + {@value #OFF_HEAP_MARGIN_PERCENT}% of spark.memory.offHeap.size
 *            + spark.memory.offHeap.size, only when spark.memory.offHeap.enabled is false
 * </pre>
 *
 * <ul>
 *   <li>The first term is Spark's own default: the JVM's non-heap memory (metaspace, threads,
 *       Netty, direct buffers), which the native pools do not change. It also holds the Go heap's
 *       soft limit, which the plugin derives as the Go baseline + overhead / 8.
 *   <li>{@value #GO_RUNTIME_MIB} MiB is the Go runtime: measured at 9.5 MiB of RSS to load the
 *       library and make one native call, 4.9 MiB of it mapped when idle (bench/RESULTS.md),
 *       rounded up for the runtime's first heap growth.
 *   <li>{@value #OFF_HEAP_MARGIN_PERCENT}% of the off-heap size is what the process holds beyond
 *       the bytes the pools hold from Spark: peak RSS growth ÷ peak off-heap reserved measured
 *       0.92–1.07 in the Spark demo (the README), rounded up.
 *   <li>Without {@code spark.memory.offHeap.enabled}, YARN and Kubernetes leave the off-heap size
 *       out of the container while the native pools still borrow up to it: it must fit in the
 *       overhead.
 * </ul>
 *
 * <p>Gluten's driver sets max(0.3 × off-heap, 384 MiB) when the user set nothing
 * (apache/incubator-gluten#7045); ours adds to Spark's default instead, because the native bytes
 * are charged to the off-heap pool and only the Go runtime and the measured margin come on top.
 * An overhead the user set is never lowered: the result is the larger of the two.
 */
final class AutoOverhead {
  /** The Go runtime's allowance, MiB. */
  static final long GO_RUNTIME_MIB = 16;

  /** The off-heap margin, percent of {@code spark.memory.offHeap.size}. */
  static final long OFF_HEAP_MARGIN_PERCENT = 10;

  /** The configuration key this sets. */
  static final String KEY = "spark.executor.memoryOverhead";

  private AutoOverhead() {}

  /** The outcome: the overhead to use and what it came from, for the log line. */
  record Choice(long overheadMib, long computedMib, long userMib, String formula) {
    /** Whether {@link #KEY} must be set to {@link #overheadMib()} (it differs from the user's). */
    boolean changes() {
      return userMib < 0 || overheadMib != userMib;
    }
  }

  /** The overhead for {@code conf}, by the formula of the class comment. */
  static Choice choose(SparkConf conf) {
    long mib = 1L << 20;
    long base = MemoryOverhead.defaultMib(conf);
    long offHeap = conf.getSizeAsBytes("spark.memory.offHeap.size", 0L);
    boolean offHeapEnabled = conf.getBoolean("spark.memory.offHeap.enabled", false);
    long margin = ceilDiv(offHeap * OFF_HEAP_MARGIN_PERCENT / 100, mib);
    long outside = offHeapEnabled ? 0 : ceilDiv(offHeap, mib);
    long computed = base + GO_RUNTIME_MIB + margin + outside;
    long user = conf.contains(KEY) ? conf.getSizeAsMb(KEY) : -1;
    String formula =
        "Spark's "
            + MemoryOverhead.describeDefault(conf)
            + " + Go runtime "
            + GO_RUNTIME_MIB
            + "m + "
            + OFF_HEAP_MARGIN_PERCENT
            + "% of off-heap "
            + margin
            + "m"
            + (outside > 0
                ? " + off-heap (not enabled, outside the container) " + outside + "m"
                : "")
            + " = "
            + computed
            + "m";
    return new Choice(Math.max(computed, user), computed, user, formula);
  }

  private static long ceilDiv(long a, long b) {
    return (a + b - 1) / b;
  }
}
