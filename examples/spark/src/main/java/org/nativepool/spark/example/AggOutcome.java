package org.nativepool.spark.example;

import java.io.Serializable;

/**
 * What one task of the soak's aggregation reports to the driver (through an accumulator): the
 * micro-batch, the partition and the aggregation's figures ({@link AggStat} order), read after its
 * new state version was committed.
 */
record AggOutcome(long batchId, int partition, long taskAttemptId, long[] stats)
    implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The figure {@code s}. */
  long get(AggStat s) {
    return stats[s.ordinal()];
  }
}
