package org.nativepool.spark.example;

import java.io.Serializable;

/**
 * What one sort task reports to the driver (through a collection accumulator): its identity, the
 * two fingerprints, and the native figures taken just before its sorter and pool closed.
 */
public final class TaskOutcome implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The task attempt (the key of its native pool and of Spark's task metrics). */
  public final long taskAttemptId;
  /** The partition sorted. */
  public final int partition;
  /** The rows as generated. */
  public final Fingerprint in;
  /** The rows as the sorter returned them, with their order check. */
  public final Fingerprint out;
  /** The sorter's figures (indexed by {@link SortStat}). */
  public final long[] sort;
  /** The task pool's figures (indexed by {@link org.nativepool.spark.jni.PoolStat}). */
  public final long[] pool;

  TaskOutcome(
      long taskAttemptId, int partition, Fingerprint in, Fingerprint out, long[] sort, long[] pool) {
    this.taskAttemptId = taskAttemptId;
    this.partition = partition;
    this.in = in;
    this.out = out;
    this.sort = sort.clone();
    this.pool = pool.clone();
  }

  /** Whether the sorter returned exactly the generated rows, in order. */
  public boolean correct() {
    return out.disorder() == 0 && in.sameRows(out);
  }
}
