package org.nativepool.spark.config;

import java.util.Locale;
import org.apache.spark.network.util.JavaUtils;

/**
 * Byte counts as operators read and write them: the one formatter of the plugin's log lines, events
 * and reports, and the parser of size settings (Spark's byte strings). Stateless.
 */
public final class Bytes {
  private static final String[] UNITS = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

  private Bytes() {}

  /**
   * {@code n} bytes in binary units with one decimal ("12.0 MiB", "512 B"); "?" for a negative
   * count (an unknown figure).
   */
  public static String format(long n) {
    if (n < 0) {
      return "?";
    }
    if (n < 1024) {
      return n + " B";
    }
    double v = n;
    int u = -1;
    while (v >= 1024 && u < UNITS.length - 1) {
      v /= 1024;
      u++;
    }
    return String.format(Locale.ROOT, "%.1f %s", v, UNITS[u]);
  }

  /**
   * {@code n} bytes in MiB with one decimal and thousands separators ("1,328.0 MiB"), for figures
   * read side by side with a limit, where {@link #format}'s "1.3 GiB" would hide the difference;
   * "?" for a negative count.
   */
  public static String mib(long n) {
    if (n < 0) {
      return "?";
    }
    return String.format(Locale.ROOT, "%,.1f MiB", n / 1048576.0);
  }

  /** Spark's byte-string suffixes, largest first, with their multipliers. */
  private static final String[] SUFFIXES = {"p", "t", "g", "m", "k"};

  /**
   * {@code n} bytes as a Spark byte string that {@link #parse} reads back as exactly {@code n}: the
   * largest suffix that divides it ({@code 64m}, {@code 1g}, {@code 1536k}), else bytes ({@code
   * 1000b}). The printer of size settings, where {@link #format} is the reader's.
   *
   * @throws IllegalArgumentException if {@code n} is negative
   */
  public static String spec(long n) {
    if (n < 0) {
      throw new IllegalArgumentException("negative size " + n);
    }
    for (int i = 0; i < SUFFIXES.length; i++) {
      long unit = 1L << (10 * (SUFFIXES.length - i));
      if (n != 0 && n % unit == 0) {
        return n / unit + SUFFIXES[i];
      }
    }
    return n + "b";
  }

  /**
   * Parses a Spark byte string ({@code 512k}, {@code 8m}, {@code 1g}; a bare number is bytes).
   *
   * @throws IllegalArgumentException if it is not one, or is negative
   */
  public static long parse(String s) {
    long v;
    try {
      v = JavaUtils.byteStringAsBytes(s.trim());
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("not a size (e.g. 512k, 64m, 2g)", e);
    }
    if (v < 0) {
      throw new IllegalArgumentException("negative size");
    }
    return v;
  }
}
