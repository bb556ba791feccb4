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
 *   <li>{@value #LIBRARY} (default none): the path of libnativepool.so, else java.library.path;
 *   <li>{@value #ALLOCATION_SITES} (default false): Go Arrow allocators record the stack of every
 *       allocation, so leak reports name the allocating function (a stack walk per allocation);
 *   <li>{@value #RESERVATION_SLACK} (default 64k): in chunked mode, the quantum Q of each Java
 *       reservation's local slack (at most 2Q bytes kept in Java so that small grows and shrinks
 *       do not cross into Go; see {@link NativeReservation}); 0 disables it.
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
    return new NativePoolSettings(kind, chunk, size, thresholds, logging, library, sites, slack);
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
        + ")";
  }
}
