package org.nativepool.spark.config;

import org.apache.spark.SparkConf;

/**
 * The executor's memoryOverhead as Spark sizes its container: the one formula of the plugin (the Go
 * runtime's derived memory limit and the driver's {@code autoOverhead} both start from it). It is
 * Spark's own {@code ResourceProfile.calculateOverHeadMemory}: {@code
 * spark.executor.memoryOverhead} when set, else {@code max(spark.executor.memoryOverheadFactor ×
 * spark.executor.memory, spark.executor.minMemoryOverhead)} in MiB, the product truncated as Spark
 * truncates it. In local mode the executor is the driver's JVM, so, unless {@code
 * spark.executor.memoryOverhead} is set, the {@code spark.driver.*} counterparts apply. Sizes
 * without a unit are MiB, as in Spark. Spark 3.5 has no {@code minMemoryOverhead} setting: its
 * minimum is always 384 MiB, and so is this one there ({@link SparkLine#hasMinMemoryOverhead()}).
 * Stateless.
 */
public final class MemoryOverhead {
  /** Spark's default {@code minMemoryOverhead}, MiB. */
  public static final long DEFAULT_MIN_MIB = 384;

  /** Spark's default {@code memoryOverheadFactor}. */
  public static final double DEFAULT_FACTOR = 0.10;

  private static final String EXECUTOR = "spark.executor.";
  private static final String DRIVER = "spark.driver.";

  private MemoryOverhead() {}

  /** The memoryOverhead of {@code conf}'s executors in MiB (see the class comment). */
  public static long mib(SparkConf conf) {
    if (conf.contains(EXECUTOR + "memoryOverhead")) {
      return conf.getSizeAsMb(EXECUTOR + "memoryOverhead");
    }
    boolean local = conf.get("spark.master", "").startsWith("local");
    String role = local ? DRIVER : EXECUTOR;
    if (conf.contains(role + "memoryOverhead")) {
      return conf.getSizeAsMb(role + "memoryOverhead");
    }
    return defaultMib(conf, role);
  }

  /** {@link #mib(SparkConf)} in bytes. */
  public static long bytes(SparkConf conf) {
    return mib(conf) << 20;
  }

  /**
   * Spark's default memoryOverhead of a cluster executor in MiB, whatever {@code
   * spark.executor.memoryOverhead} says: {@code max(memoryOverheadFactor × memory,
   * minMemoryOverhead)} of the {@code spark.executor.*} settings.
   */
  public static long defaultMib(SparkConf conf) {
    return defaultMib(conf, EXECUTOR);
  }

  /** {@link #defaultMib(SparkConf)} as a readable formula with its figures. */
  public static String describeDefault(SparkConf conf) {
    double factor = conf.getDouble(EXECUTOR + "memoryOverheadFactor", DEFAULT_FACTOR);
    long memory = conf.getSizeAsMb(EXECUTOR + "memory", "1g");
    long min = minMib(conf, EXECUTOR);
    return "max("
        + factor
        + " × executor memory "
        + memory
        + "m, minMemoryOverhead "
        + min
        + "m) = "
        + defaultMib(conf)
        + "m";
  }

  private static long defaultMib(SparkConf conf, String role) {
    double factor = conf.getDouble(role + "memoryOverheadFactor", DEFAULT_FACTOR);
    long memory = conf.getSizeAsMb(role + "memory", "1g");
    return Math.max((long) (factor * memory), minMib(conf, role));
  }

  /** Spark's minimum memoryOverhead, MiB: the role's setting where Spark has one, else 384. */
  private static long minMib(SparkConf conf, String role) {
    if (!SparkLine.current().hasMinMemoryOverhead()) {
      return DEFAULT_MIN_MIB;
    }
    return conf.getSizeAsMb(role + "minMemoryOverhead", DEFAULT_MIN_MIB + "m");
  }
}
