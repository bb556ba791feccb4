package org.nativepool.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.apache.spark.SparkConf;
import org.apache.spark.network.util.JavaUtils;

/**
 * The {@code spark.nativepool.*} settings, read once by {@link NativePoolPlugin} on each executor.
 * Immutable.
 *
 * <ul>
 *   <li>{@value #POOL} (default fair_unified): the pool kind, fair_unified or greedy_unified;
 *   <li>{@value #CHUNK_SIZE} (default 8m): bytes borrowed from Spark at a time; 0 = exact;
 *   <li>{@value #POOL_SIZE} (default spark.memory.offHeap.size): the fair_unified pool size;
 *   <li>{@value #THRESHOLDS} (default none): comma-separated sizes; a task pool's reserved bytes
 *       crossing one logs a warning;
 *   <li>{@value #LOGGING} (default false): a debug record per pool operation (Go slog);
 *   <li>{@value #LIBRARY} (default none): the path of libnativepool.so (or of a Go engine's own
 *       library linking nativepool), else the copy in the plugin jar ({@link NativeLoader});
 *   <li>{@value #DRIVER_CHECK} (default true): the driver loads and checks the library at startup;
 *   <li>{@value #ALLOCATION_SITES} (default false): Go Arrow allocators record the stack of every
 *       allocation, so leak reports name the allocating function (a stack walk per allocation);
 *   <li>{@value #RESERVATION_SLACK} (default 64k): in chunked mode, the quantum Q of each Java
 *       reservation's local slack (at most 2Q bytes kept in Java so that small grows and shrinks
 *       do not cross into Go; see {@link NativeReservation}); 0 disables it;
 *   <li>{@value #MALLOC_MMAP_THRESHOLD} (default 128k): the glibc {@code M_MMAP_THRESHOLD} the
 *       library sets with {@code mallopt} when the plugin starts, so that blocks of that size or
 *       more are mmapped and unmapped on free, and glibc's dynamic threshold (which rises to 32 MiB
 *       after large frees and then keeps freed memory resident) stays off, and the trim
 *       threshold goes back to 128 KiB; 0 leaves glibc alone. A {@code MALLOC_MMAP_THRESHOLD_}
 *       set in the executor's environment wins (logged). At most 32m;
 *   <li>{@value #GO_MEMORY_LIMIT} (default derived): the Go runtime's soft memory limit ({@code
 *       debug.SetMemoryLimit}); unset = the measured Go baseline + memoryOverhead / 8; 0 or {@code
 *       off} leaves the Go runtime alone (no limit unless {@code GOMEMLIMIT} sets one). The
 *       memoryOverhead is {@code spark.executor.memoryOverhead}, else (local mode) {@code
 *       spark.driver.memoryOverhead}, else Spark's default: max(384m, memoryOverheadFactor (0.10)
 *       × the executor's (local mode: driver's) memory);
 *   <li>{@value #LOG_LEVEL} (default none): the level of the {@code org.nativepool} loggers, the Go
 *       side's included ({@link NativeLog}); set in log4j for {@code org.nativepool} and every
 *       logger below it, over log4j's own configuration. Unset, log4j's configuration decides.
 *       Read by {@link #logLevel(SparkConf)}.
 * </ul>
 */
public final class NativePoolSettings {
  public static final String POOL = "spark.nativepool.pool";
  public static final String CHUNK_SIZE = "spark.nativepool.chunkSize";
  public static final String POOL_SIZE = "spark.nativepool.poolSize";
  public static final String THRESHOLDS = "spark.nativepool.thresholds";
  public static final String LOGGING = "spark.nativepool.logging";
  public static final String LIBRARY = "spark.nativepool.library";
  public static final String ALLOCATION_SITES = "spark.nativepool.allocationSites";
  public static final String RESERVATION_SLACK = "spark.nativepool.reservationSlack";
  public static final String MALLOC_MMAP_THRESHOLD = "spark.nativepool.mallocMmapThreshold";
  public static final String GO_MEMORY_LIMIT = "spark.nativepool.goMemoryLimit";
  public static final String LOG_LEVEL = "spark.nativepool.logLevel";

  /**
   * Driver-only (default true): the driver loads and checks the library the executors will load
   * when the application starts ({@link NativeLoader#checkOnDriver}); false when the driver cannot
   * see the executors' {@value #LIBRARY} path.
   */
  public static final String DRIVER_CHECK = "spark.nativepool.driverCheck";

  /** Default of {@value #MALLOC_MMAP_THRESHOLD}. */
  public static final String DEFAULT_MALLOC_MMAP_THRESHOLD = "128k";

  /** {@link #goMemoryLimit()} when {@value #GO_MEMORY_LIMIT} is unset: derive it in Go. */
  public static final long GO_MEMORY_LIMIT_DERIVED = -1;

  /** The largest {@value #MALLOC_MMAP_THRESHOLD} glibc accepts on 64-bit. */
  public static final long MAX_MALLOC_MMAP_THRESHOLD = 32L << 20;

  /** Spark's minimum memoryOverhead (384 MiB). */
  static final long MIN_MEMORY_OVERHEAD = 384L << 20;

  /** Default of {@value #CHUNK_SIZE}. */
  public static final String DEFAULT_CHUNK_SIZE = "8m";

  /** Default of {@value #RESERVATION_SLACK}. */
  public static final String DEFAULT_RESERVATION_SLACK = "64k";

  private final PoolKind kind;
  private final long chunkSize;
  private final long poolSize;
  private final long[] thresholds;
  private final boolean logging;
  private final String library;
  private final boolean allocationSites;
  private final long reservationSlack;
  private final long mallocMmapThreshold;
  private final long goMemoryLimit;
  private final long memoryOverhead;

  /**
   * @param library the library path, or null for {@code java.library.path}
   * @throws IllegalArgumentException for a negative size or threshold
   */
  public NativePoolSettings(
      PoolKind kind,
      long chunkSize,
      long poolSize,
      long[] thresholds,
      boolean logging,
      String library) {
    this(kind, chunkSize, poolSize, thresholds, logging, library, false);
  }

  /**
   * @param library the library path, or null for {@code java.library.path}
   * @param allocationSites {@value #ALLOCATION_SITES}
   * @throws IllegalArgumentException for a negative size or threshold
   */
  public NativePoolSettings(
      PoolKind kind,
      long chunkSize,
      long poolSize,
      long[] thresholds,
      boolean logging,
      String library,
      boolean allocationSites) {
    this(
        kind,
        chunkSize,
        poolSize,
        thresholds,
        logging,
        library,
        allocationSites,
        TaskPool.DEFAULT_RESERVATION_SLACK);
  }

  /**
   * @param library the library path, or null for {@code java.library.path}
   * @param allocationSites {@value #ALLOCATION_SITES}
   * @param reservationSlack {@value #RESERVATION_SLACK} in bytes; 0 = none
   * @throws IllegalArgumentException for a negative size or threshold, or a reservation slack
   *     above 1 TiB
   */
  public NativePoolSettings(
      PoolKind kind,
      long chunkSize,
      long poolSize,
      long[] thresholds,
      boolean logging,
      String library,
      boolean allocationSites,
      long reservationSlack) {
    this(
        kind,
        chunkSize,
        poolSize,
        thresholds,
        logging,
        library,
        allocationSites,
        reservationSlack,
        JavaUtils.byteStringAsBytes(DEFAULT_MALLOC_MMAP_THRESHOLD),
        GO_MEMORY_LIMIT_DERIVED,
        0);
  }

  private NativePoolSettings(
      PoolKind kind,
      long chunkSize,
      long poolSize,
      long[] thresholds,
      boolean logging,
      String library,
      boolean allocationSites,
      long reservationSlack,
      long mallocMmapThreshold,
      long goMemoryLimit,
      long memoryOverhead) {
    this.kind = Objects.requireNonNull(kind, "kind");
    this.chunkSize = nonNegative(CHUNK_SIZE, chunkSize);
    this.poolSize = nonNegative(POOL_SIZE, poolSize);
    this.thresholds = thresholds.clone();
    for (long t : this.thresholds) {
      nonNegative(THRESHOLDS, t);
    }
    this.logging = logging;
    this.library = library == null || library.isEmpty() ? null : library;
    this.allocationSites = allocationSites;
    this.reservationSlack = nonNegative(RESERVATION_SLACK, reservationSlack);
    if (reservationSlack > TaskPool.MAX_RESERVATION_SLACK) {
      throw new IllegalArgumentException(
          "nativepool: " + RESERVATION_SLACK + " = " + reservationSlack + ": above 1 TiB");
    }
    this.mallocMmapThreshold = nonNegative(MALLOC_MMAP_THRESHOLD, mallocMmapThreshold);
    if (mallocMmapThreshold > MAX_MALLOC_MMAP_THRESHOLD) {
      throw new IllegalArgumentException(
          "nativepool: "
              + MALLOC_MMAP_THRESHOLD
              + " = "
              + mallocMmapThreshold
              + ": above glibc's maximum of 32 MiB");
    }
    if (goMemoryLimit < GO_MEMORY_LIMIT_DERIVED) {
      throw new IllegalArgumentException(
          "nativepool: " + GO_MEMORY_LIMIT + " = " + goMemoryLimit + ": negative size");
    }
    this.goMemoryLimit = goMemoryLimit;
    this.memoryOverhead = nonNegative("memoryOverhead", memoryOverhead);
  }

  /**
   * These settings with the process-memory options replaced.
   *
   * @param mallocMmapThreshold {@value #MALLOC_MMAP_THRESHOLD} in bytes; 0 = leave glibc alone
   * @param goMemoryLimit {@value #GO_MEMORY_LIMIT} in bytes; 0 = none, {@link
   *     #GO_MEMORY_LIMIT_DERIVED} = derived from the Go baseline and {@code memoryOverhead}
   * @param memoryOverhead the executor's memoryOverhead in bytes (0 = unknown)
   * @throws IllegalArgumentException for a negative value or a threshold above 32 MiB
   */
  public NativePoolSettings withProcessMemory(
      long mallocMmapThreshold, long goMemoryLimit, long memoryOverhead) {
    return new NativePoolSettings(
        kind,
        chunkSize,
        poolSize,
        thresholds,
        logging,
        library,
        allocationSites,
        reservationSlack,
        mallocMmapThreshold,
        goMemoryLimit,
        memoryOverhead);
  }

  /**
   * Reads the settings from a Spark configuration.
   *
   * @throws IllegalArgumentException naming the key, for a value that does not parse
   */
  public static NativePoolSettings fromConf(SparkConf conf) {
    PoolKind kind = PoolKind.parse(conf.get(POOL, PoolKind.FAIR_UNIFIED.configName()));
    long chunk = conf.getSizeAsBytes(CHUNK_SIZE, DEFAULT_CHUNK_SIZE);
    long offHeap = conf.getSizeAsBytes("spark.memory.offHeap.size", 0L);
    long size = conf.getSizeAsBytes(POOL_SIZE, offHeap);
    long[] thresholds = parseSizes(THRESHOLDS, conf.get(THRESHOLDS, ""));
    boolean logging = conf.getBoolean(LOGGING, false);
    String library = conf.get(LIBRARY, "");
    boolean sites = conf.getBoolean(ALLOCATION_SITES, false);
    long slack = conf.getSizeAsBytes(RESERVATION_SLACK, DEFAULT_RESERVATION_SLACK);
    long mmap = conf.getSizeAsBytes(MALLOC_MMAP_THRESHOLD, DEFAULT_MALLOC_MMAP_THRESHOLD);
    String go = conf.get(GO_MEMORY_LIMIT, "").trim();
    long goLimit =
        go.isEmpty()
            ? GO_MEMORY_LIMIT_DERIVED
            : go.equalsIgnoreCase("off") ? 0 : conf.getSizeAsBytes(GO_MEMORY_LIMIT);
    return new NativePoolSettings(kind, chunk, size, thresholds, logging, library, sites, slack)
        .withProcessMemory(mmap, goLimit, memoryOverhead(conf));
  }

  /**
   * {@value #LOG_LEVEL} of a Spark configuration: a level name, trimmed, or null if unset or blank
   * (log4j's configuration decides).
   *
   * @throws IllegalArgumentException naming the key, for a value that is not TRACE, DEBUG, INFO,
   *     WARN, ERROR or OFF (any case)
   */
  public static String logLevel(SparkConf conf) {
    String v = conf.get(LOG_LEVEL, "").trim();
    if (v.isEmpty()) {
      return null;
    }
    NativeLog.parseLevel(v);
    return v;
  }

  /**
   * The executor's memoryOverhead in bytes as Spark sizes the container: {@code
   * spark.executor.memoryOverhead}; in local mode (the executor is the driver's JVM) {@code
   * spark.driver.memoryOverhead}; else max(384 MiB, memoryOverheadFactor (default 0.10) × memory),
   * from the executor's settings, or the driver's in local mode. Sizes without a unit are MiB, as
   * in Spark.
   */
  static long memoryOverhead(SparkConf conf) {
    boolean local = conf.get("spark.master", "").startsWith("local");
    String role = local ? "spark.driver." : "spark.executor.";
    if (conf.contains("spark.executor.memoryOverhead")) {
      return conf.getSizeAsMb("spark.executor.memoryOverhead") << 20;
    }
    if (local && conf.contains("spark.driver.memoryOverhead")) {
      return conf.getSizeAsMb("spark.driver.memoryOverhead") << 20;
    }
    double factor = conf.getDouble(role + "memoryOverheadFactor", 0.10);
    long memory = conf.getSizeAsMb(role + "memory", "1g") << 20;
    return Math.max(MIN_MEMORY_OVERHEAD, (long) (factor * memory));
  }

  /** Parses a comma-separated list of sizes ("64m, 1g"); blanks between commas are skipped. */
  static long[] parseSizes(String key, String value) {
    List<Long> out = new ArrayList<>();
    for (String part : value.split(",")) {
      String p = part.trim();
      if (p.isEmpty()) {
        continue;
      }
      try {
        out.add(JavaUtils.byteStringAsBytes(p));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            "nativepool: " + key + ": '" + p + "' is not a size (e.g. 512m, 2g)", e);
      }
    }
    return out.stream().mapToLong(Long::longValue).toArray();
  }

  private static long nonNegative(String key, long v) {
    if (v < 0) {
      throw new IllegalArgumentException("nativepool: " + key + " = " + v + ": negative size");
    }
    return v;
  }

  public PoolKind kind() {
    return kind;
  }

  public long chunkSize() {
    return chunkSize;
  }

  public long poolSize() {
    return poolSize;
  }

  /** A copy of the threshold levels in bytes. */
  public long[] thresholds() {
    return thresholds.clone();
  }

  public boolean logging() {
    return logging;
  }

  /** {@value #ALLOCATION_SITES}: whether Go Arrow allocators record allocation stacks. */
  public boolean allocationSites() {
    return allocationSites;
  }

  /** {@value #RESERVATION_SLACK} in bytes: the local-slack quantum Q of Java reservations. */
  public long reservationSlack() {
    return reservationSlack;
  }

  /** {@value #MALLOC_MMAP_THRESHOLD} in bytes; 0 = leave glibc alone. */
  public long mallocMmapThreshold() {
    return mallocMmapThreshold;
  }

  /**
   * {@value #GO_MEMORY_LIMIT} in bytes; 0 = leave the Go runtime alone, {@link
   * #GO_MEMORY_LIMIT_DERIVED} = derived in Go from its baseline and {@link #memoryOverhead()}.
   */
  public long goMemoryLimit() {
    return goMemoryLimit;
  }

  /** The executor's memoryOverhead in bytes (see the class comment); 0 = unknown. */
  public long memoryOverhead() {
    return memoryOverhead;
  }

  /** The library path from {@value #LIBRARY}, or null. */
  public String library() {
    return library;
  }

  @Override
  public String toString() {
    return "NativePoolSettings(pool="
        + kind
        + ", chunkSize="
        + chunkSize
        + ", poolSize="
        + poolSize
        + ", thresholds="
        + Arrays.toString(thresholds)
        + ", logging="
        + logging
        + ", library="
        + library
        + ", allocationSites="
        + allocationSites
        + ", reservationSlack="
        + reservationSlack
        + ", mallocMmapThreshold="
        + mallocMmapThreshold
        + ", goMemoryLimit="
        + (goMemoryLimit == GO_MEMORY_LIMIT_DERIVED ? "derived" : String.valueOf(goMemoryLimit))
        + ", memoryOverhead="
        + memoryOverhead
        + ")";
  }
}
