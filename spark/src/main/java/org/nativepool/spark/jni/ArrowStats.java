package org.nativepool.spark.jni;


/**
 * An immutable snapshot of one reservation's Go Arrow allocator ({@code arrowStats0}), named by
 * {@link ArrowStat}. Figures are read one by one, not under one lock: while other threads use the
 * allocator they need not be mutually consistent. The accessors below are shorthands for {@link
 * #get(Enum) get(ArrowStat.…)}.
 */
public final class ArrowStats extends Stats<ArrowStat> {
  ArrowStats(long[] values) {
    super(ArrowStat.class, "arrowStats0", values);
  }

  /** {@link ArrowStat#ALLOCATED}. */
  public long allocated() {
    return get(ArrowStat.ALLOCATED);
  }

  /** {@link ArrowStat#RESERVED}. */
  public long reserved() {
    return get(ArrowStat.RESERVED);
  }

  /** {@link ArrowStat#FORCED}. */
  public long forced() {
    return get(ArrowStat.FORCED);
  }

  /** {@link ArrowStat#LIVE_BUFFERS}. */
  public long liveBuffers() {
    return get(ArrowStat.LIVE_BUFFERS);
  }

  /** {@link ArrowStat#IMPORTED}. */
  public long imported() {
    return get(ArrowStat.IMPORTED);
  }

  /** {@link ArrowStat#IMPORTS_LIVE}. */
  public long importsLive() {
    return get(ArrowStat.IMPORTS_LIVE);
  }

  /** {@link ArrowStat#EXPORTED}. */
  public long exported() {
    return get(ArrowStat.EXPORTED);
  }

  /** {@link ArrowStat#EXPORTS_LIVE}. */
  public long exportsLive() {
    return get(ArrowStat.EXPORTS_LIVE);
  }

  /** {@link ArrowStat#BATCHES}. */
  public long batches() {
    return get(ArrowStat.BATCHES);
  }

  /** Whether the allocator is closed ({@link ArrowStat#CLOSED}). */
  public boolean closed() {
    return get(ArrowStat.CLOSED) != 0;
  }
}
