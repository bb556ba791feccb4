package org.nativepool.spark.jni;

import java.util.Arrays;

/**
 * An immutable snapshot of one stats array of the Go side, indexed by the enum {@code E}: the
 * constant's ordinal is its index ({@link PoolStat}, {@link ProcessStat}, {@link
 * org.nativepool.spark.jni.ArrowStat}, {@link org.nativepool.spark.jni.ArrowProcessStat}).
 * The arrays are declared once, in the Go tables of {@code internal/bridge/stats.go} and {@code
 * internal/bridge/arrow_stats.go}; a Go test checks every enum against its table. Values are read
 * one by one on the Go side, not under one lock, so while other threads use the pool they need not
 * be mutually consistent. Instances are immutable and safe to share between threads.
 *
 * @param <E> the enum naming the figures of this array
 */
public abstract class Stats<E extends Enum<E>> {
  private final Class<E> stat;
  private final long[] values;

  /**
   * Copies {@code values}, as the native {@code source} returned them.
   *
   * @throws IllegalStateException if there are fewer values than {@code E} has constants
   */
  protected Stats(Class<E> stat, String source, long[] values) {
    int n = stat.getEnumConstants().length;
    if (values == null || values.length < n) {
      throw new IllegalStateException(
          "nativepool: "
              + source
              + " returned "
              + (values == null ? "null" : values.length + " values")
              + ", expected "
              + n);
    }
    this.stat = stat;
    this.values = values.clone();
  }

  /** The figure {@code s}. */
  public final long get(E s) {
    return values[s.ordinal()];
  }

  /** The figure at an index (the ordinal of an {@code E} constant). */
  public final long get(int index) {
    return values[index];
  }

  /** A copy of all figures, in {@code E}'s order. */
  public final long[] toArray() {
    return values.clone();
  }

  @Override
  public final boolean equals(Object o) {
    return o != null
        && o.getClass() == getClass()
        && Arrays.equals(values, ((Stats<?>) o).values);
  }

  @Override
  public final int hashCode() {
    return Arrays.hashCode(values);
  }

  /** {@code PoolStats(reserved=…, held=…, …)}: every figure, named after its constant. */
  @Override
  public final String toString() {
    StringBuilder b = new StringBuilder(getClass().getSimpleName()).append('(');
    for (E s : stat.getEnumConstants()) {
      if (s.ordinal() > 0) {
        b.append(", ");
      }
      b.append(camelCase(s.name())).append('=').append(values[s.ordinal()]);
    }
    return b.append(')').toString();
  }

  /** {@code SPILL_BYTES_FREED} → {@code spillBytesFreed}. */
  static String camelCase(String constant) {
    StringBuilder b = new StringBuilder(constant.length());
    boolean up = false;
    for (char c : constant.toCharArray()) {
      if (c == '_') {
        up = true;
      } else {
        b.append(up ? c : Character.toLowerCase(c));
        up = false;
      }
    }
    return b.toString();
  }
}
