package org.nativepool.spark.example;

import org.nativepool.spark.jni.Stats;

/**
 * An immutable snapshot of one streaming aggregation's figures ({@code stats0}), named by {@link
 * AggStat}. Read one by one, not under one lock.
 */
public final class AggStats extends Stats<AggStat> {
  AggStats(long[] values) {
    super(AggStat.class, "stats0", values);
  }
}
