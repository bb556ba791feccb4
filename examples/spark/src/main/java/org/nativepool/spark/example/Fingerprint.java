package org.nativepool.spark.example;

import java.io.Serializable;

/**
 * The order-independent summary of a multiset of {@code (key, payload)} rows, computed exactly as
 * the Go side's {@code extsort.Fingerprint} ({@code examples/sort/checksum.go}): row count,
 * wrapping key sum, and the wrapping sum and xor of SplitMix64's finaliser applied twice. Two
 * permutations of the same rows have equal fingerprints; a lost, duplicated or altered row changes
 * it with overwhelming probability. Also checks order: {@link #add} counts rows smaller than their
 * predecessor in {@code (key, payload)} order.
 *
 * <p>Not safe for concurrent mutation; one per task.
 */
public final class Fingerprint implements Serializable {
  private static final long serialVersionUID = 1L;

  private long rows;
  private long keySum;
  private long hashSum;
  private long hashXor;

  private long lastKey;
  private long lastPayload;
  private long disorder;

  /** Folds one row in. */
  public void add(long key, long payload) {
    if (rows > 0 && (key < lastKey || (key == lastKey && payload < lastPayload))) {
      disorder++;
    }
    lastKey = key;
    lastPayload = payload;
    long h = mixRow(key, payload);
    rows++;
    keySum += key;
    hashSum += h;
    hashXor ^= h;
  }

  /** Rows folded in. */
  public long rows() {
    return rows;
  }

  /** Rows that came after a larger row ({@code (key, payload)} order): 0 for sorted input. */
  public long disorder() {
    return disorder;
  }

  /** Whether {@code o} summarises the same multiset of rows (order is not compared). */
  public boolean sameRows(Fingerprint o) {
    return rows == o.rows && keySum == o.keySum && hashSum == o.hashSum && hashXor == o.hashXor;
  }

  /** SplitMix64's finaliser, as {@code extsort.splitmix}. */
  public static long splitmix(long x) {
    x += 0x9e3779b97f4a7c15L;
    x = (x ^ (x >>> 30)) * 0xbf58476d1ce4e5b9L;
    x = (x ^ (x >>> 27)) * 0x94d049bb133111ebL;
    return x ^ (x >>> 31);
  }

  static long mixRow(long key, long payload) {
    return splitmix(splitmix(key) ^ payload);
  }

  @Override
  public String toString() {
    return String.format(
        "{Rows:%d KeySum:%d HashSum:%s HashXor:%s}",
        rows, keySum, Long.toUnsignedString(hashSum), Long.toUnsignedString(hashXor));
  }
}
