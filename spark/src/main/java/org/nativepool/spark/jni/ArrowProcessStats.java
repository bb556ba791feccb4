package org.nativepool.spark.jni;


/**
 * An immutable snapshot of the Go side's Arrow figures over the whole process ({@code
 * processArrowStats0}), named by {@link ArrowProcessStat}, with the resident-set sample that backs
 * the drift check. RSS is a check to watch, never a gate: it lags allocation, counts pages, and in
 * an executor includes the JVM (Comet #5983). The accessors below are shorthands for {@link
 * #get(Enum) get(ArrowProcessStat.…)}.
 */
public final class ArrowProcessStats extends Stats<ArrowProcessStat> {
  ArrowProcessStats(long[] values) {
    super(ArrowProcessStat.class, "processArrowStats0", values);
  }

  /** {@link ArrowProcessStat#ALLOCATED}. */
  public long allocated() {
    return get(ArrowProcessStat.ALLOCATED);
  }

  /** {@link ArrowProcessStat#LIVE_ALLOCATORS}. */
  public long liveAllocators() {
    return get(ArrowProcessStat.LIVE_ALLOCATORS);
  }

  /** {@link ArrowProcessStat#LIVE_BATCHES}. */
  public long liveBatches() {
    return get(ArrowProcessStat.LIVE_BATCHES);
  }

  /** {@link ArrowProcessStat#RSS}. */
  public long rss() {
    return get(ArrowProcessStat.RSS);
  }

  /** {@link ArrowProcessStat#LEAKS}. */
  public long leaks() {
    return get(ArrowProcessStat.LEAKS);
  }

  /** {@link ArrowProcessStat#LINGERING}. */
  public long lingering() {
    return get(ArrowProcessStat.LINGERING);
  }

  /** {@link ArrowProcessStat#LINGERING_ALLOCATORS}. */
  public long lingeringAllocators() {
    return get(ArrowProcessStat.LINGERING_ALLOCATORS);
  }
}
