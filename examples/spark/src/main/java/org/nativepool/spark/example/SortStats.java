package org.nativepool.spark.example;

import org.nativepool.spark.jni.Stats;

/**
 * An immutable snapshot of one sorter's figures ({@code stats0}), named by {@link SortStat}. Read
 * one by one, not under one lock.
 */
public final class SortStats extends Stats<SortStat> {
  SortStats(long[] values) {
    super(SortStat.class, "stats0", values);
  }
}
