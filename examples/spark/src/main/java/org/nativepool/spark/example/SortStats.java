package org.nativepool.spark.example;

import java.util.Arrays;

/**
 * An immutable snapshot of one sorter's figures ({@code stats0}, {@code SORT_STAT_*} indices of
 * {@link SortBridge}). Read one by one, not under one lock.
 */
public final class SortStats {
  private final long[] values;

  SortStats(long[] values) {
    if (values == null || values.length < SortBridge.SORT_STAT_COUNT) {
      throw new IllegalStateException(
          "nativesort: stats0 returned "
              + (values == null ? "null" : values.length + " values")
              + ", expected "
              + SortBridge.SORT_STAT_COUNT);
    }
    this.values = values.clone();
  }

  /** The figure at a {@code SORT_STAT_*} index. */
  public long get(int index) {
    return values[index];
  }

  /** A copy of every figure, by {@code SORT_STAT_*} index. */
  public long[] toArray() {
    return values.clone();
  }

  @Override
  public String toString() {
    return "SortStats" + Arrays.toString(values);
  }
}
