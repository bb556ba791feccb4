package org.nativepool.spark.config;

import org.apache.spark.SparkConf;

/**
 * The memory of the container Spark requests for an executor, as YARN and Kubernetes size it
 * (Spark's {@code ResourceProfile}: executor memory + memoryOverhead + off-heap + PySpark memory):
 * what the resource manager kills the executor at. The pod guard keeps it as its limit where the
 * executor's memory cgroup sets none ({@link GuardSettings}).
 *
 * <p>The terms: {@code spark.executor.memory} (MiB without a unit, default 1g); {@code
 * spark.memory.offHeap.size} if {@code spark.memory.offHeap.enabled}, as Spark leaves disabled
 * off-heap out of the container; memoryOverhead as {@link MemoryOverhead} computes it; and {@code
 * spark.executor.pyspark.memory} when set (Spark adds it for Python applications, whose workers it
 * limits). In local mode the executor is the driver's JVM, so {@code spark.driver.memory} stands
 * for the executor's memory, as {@link MemoryOverhead} takes the driver's overhead there.
 * Stateless.
 */
public final class ContainerSize {
  private ContainerSize() {}

  /** The container size of {@code conf}'s executors in bytes (see the class comment). */
  public static long bytes(SparkConf conf) {
    return (memoryMib(conf) << 20)
        + offHeapBytes(conf)
        + MemoryOverhead.bytes(conf)
        + pysparkBytes(conf);
  }

  /**
   * {@link #bytes(SparkConf)} as a readable sum of its terms, e.g. {@code executor memory 4.0 GiB +
   * off-heap 2.0 GiB + memoryOverhead 409.0 MiB = 6.4 GiB}; terms that are 0 are left out.
   */
  public static String describe(SparkConf conf) {
    StringBuilder b =
        new StringBuilder(local(conf) ? "driver memory " : "executor memory ")
            .append(Bytes.format(memoryMib(conf) << 20));
    long offHeap = offHeapBytes(conf);
    if (offHeap > 0) {
      b.append(" + off-heap ").append(Bytes.format(offHeap));
    }
    b.append(" + memoryOverhead ").append(Bytes.format(MemoryOverhead.bytes(conf)));
    long pyspark = pysparkBytes(conf);
    if (pyspark > 0) {
      b.append(" + PySpark memory ").append(Bytes.format(pyspark));
    }
    return b.append(" = ").append(Bytes.format(bytes(conf))).toString();
  }

  private static boolean local(SparkConf conf) {
    return conf.get("spark.master", "").startsWith("local");
  }

  private static long memoryMib(SparkConf conf) {
    return conf.getSizeAsMb(local(conf) ? "spark.driver.memory" : "spark.executor.memory", "1g");
  }

  private static long offHeapBytes(SparkConf conf) {
    return conf.getBoolean("spark.memory.offHeap.enabled", false)
        ? conf.getSizeAsBytes("spark.memory.offHeap.size", 0L)
        : 0;
  }

  private static long pysparkBytes(SparkConf conf) {
    return conf.contains("spark.executor.pyspark.memory")
        ? conf.getSizeAsMb("spark.executor.pyspark.memory") << 20
        : 0;
  }
}
