package org.nativepool.spark.config;

import java.util.Arrays;
import org.apache.spark.SparkConf;

/**
 * The executor's view of the configuration: what its task pools are opened with and how the
 * library is set up, read once by the executor plugin through the keys of {@link NativePoolConf}
 * (which documents each). Immutable.
 */
public final class PoolSettings {
  private final PoolKind kind;
  private final long chunkSize;
  private final long poolSize;
  private final long reservationSlack;
  private final long[] taskThresholds;
  private final boolean logging;
  private final String logLevel;
  private final String library;
  private final String libraryOrigin;
  private final boolean allocationSites;
  private final long mallocMmapThreshold;
  private final long goMemoryLimit;
  private final long memoryOverhead;

  private PoolSettings(SparkConf conf) {
    this.kind = NativePoolConf.POOL.read(conf);
    this.chunkSize = NativePoolConf.CHUNK_SIZE.read(conf);
    Long size = NativePoolConf.POOL_SIZE.read(conf);
    this.poolSize = size != null ? size : conf.getSizeAsBytes("spark.memory.offHeap.size", 0L);
    this.reservationSlack = NativePoolConf.RESERVATION_SLACK.read(conf);
    this.taskThresholds = NativePoolConf.TASK_RESERVED_THRESHOLDS.read(conf);
    this.logging = NativePoolConf.LOGGING.read(conf);
    this.logLevel = NativePoolConf.LOG_LEVEL.read(conf);
    String lib = NativePoolConf.LIBRARY.read(conf);
    String origin = NativePoolConf.LIBRARY.key();
    if (lib == null) {
      String property = System.getProperty(NativePoolConf.LIBRARY_PROPERTY, "").trim();
      if (!property.isEmpty()) {
        lib = property;
        origin = "system property " + NativePoolConf.LIBRARY_PROPERTY;
      }
    }
    this.library = lib;
    this.libraryOrigin = origin;
    this.allocationSites = NativePoolConf.ALLOCATION_SITES.read(conf);
    this.mallocMmapThreshold = NativePoolConf.MALLOC_MMAP_THRESHOLD.read(conf);
    this.goMemoryLimit = NativePoolConf.GO_MEMORY_LIMIT.read(conf);
    this.memoryOverhead = MemoryOverhead.bytes(conf);
  }

  /**
   * Reads the settings from a Spark configuration.
   *
   * @throws IllegalArgumentException naming the key, for a value that does not parse or is out of
   *     range
   */
  public static PoolSettings fromConf(SparkConf conf) {
    return new PoolSettings(conf);
  }

  /** {@link NativePoolConf#POOL}. */
  public PoolKind kind() {
    return kind;
  }

  /** {@link NativePoolConf#CHUNK_SIZE} in bytes; 0 = exact. */
  public long chunkSize() {
    return chunkSize;
  }

  /** {@link NativePoolConf#POOL_SIZE} in bytes, else {@code spark.memory.offHeap.size}. */
  public long poolSize() {
    return poolSize;
  }

  /** {@link NativePoolConf#RESERVATION_SLACK} in bytes: the local-slack quantum Q. */
  public long reservationSlack() {
    return reservationSlack;
  }

  /** A copy of {@link NativePoolConf#TASK_RESERVED_THRESHOLDS} in bytes. */
  public long[] taskThresholds() {
    return taskThresholds.clone();
  }

  /** {@link NativePoolConf#LOGGING}. */
  public boolean logging() {
    return logging;
  }

  /** {@link NativePoolConf#LOG_LEVEL}: an upper-case level name, or null (log4j decides). */
  public String logLevel() {
    return logLevel;
  }

  /**
   * The library to load: {@link NativePoolConf#LIBRARY}, else the JVM system property {@value
   * NativePoolConf#LIBRARY_PROPERTY}; null for the jar's copy.
   */
  public String library() {
    return library;
  }

  /** Where {@link #library()} came from, as load failures name it. */
  public String libraryOrigin() {
    return libraryOrigin;
  }

  /** {@link NativePoolConf#ALLOCATION_SITES}. */
  public boolean allocationSites() {
    return allocationSites;
  }

  /** {@link NativePoolConf#MALLOC_MMAP_THRESHOLD} in bytes; 0 = leave glibc alone. */
  public long mallocMmapThreshold() {
    return mallocMmapThreshold;
  }

  /**
   * {@link NativePoolConf#GO_MEMORY_LIMIT} in bytes; 0 = leave the Go runtime alone, {@link
   * NativePoolConf#GO_MEMORY_LIMIT_DERIVED} = derived in Go from its baseline and {@link
   * #memoryOverhead()}.
   */
  public long goMemoryLimit() {
    return goMemoryLimit;
  }

  /** The executor's memoryOverhead in bytes ({@link MemoryOverhead}). */
  public long memoryOverhead() {
    return memoryOverhead;
  }

  @Override
  public String toString() {
    return "PoolSettings(pool="
        + kind
        + ", chunkSize="
        + chunkSize
        + ", poolSize="
        + poolSize
        + ", reservationSlack="
        + reservationSlack
        + ", taskThresholds="
        + Arrays.toString(taskThresholds)
        + ", logging="
        + logging
        + ", logLevel="
        + logLevel
        + ", library="
        + library
        + ", allocationSites="
        + allocationSites
        + ", mallocMmapThreshold="
        + mallocMmapThreshold
        + ", goMemoryLimit="
        + (goMemoryLimit == NativePoolConf.GO_MEMORY_LIMIT_DERIVED
            ? "derived"
            : String.valueOf(goMemoryLimit))
        + ", memoryOverhead="
        + memoryOverhead
        + ")";
  }
}
