package org.nativepool.spark;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.network.util.JavaUtils;

/**
 * The settings of the executor memory ledger (issue 13): thresholds and their hysteresis, the
 * listeners to load, and the growth detector. Read by the executor side of {@link
 * NativePoolPlugin}. Immutable.
 */
public final class LedgerSettings {
  /**
   * Thresholds, comma-separated {@code part=size}: a ledger part name, {@code total} (the RSS) or
   * {@code unexplained}, e.g. {@code total=6g,unexplained=512m,native.allocated=2g}.
   */
  public static final String THRESHOLDS = "spark.nativepool.ledger.thresholds";

  /**
   * Hysteresis, a fraction in [0, 1): after an upward crossing of level L, the part must fall
   * below L × (1 − h) for the downward crossing (and before it can cross upwards again).
   */
  public static final String HYSTERESIS = "spark.nativepool.ledger.hysteresis";

  /** Comma-separated {@link LedgerListener} classes (public, no-argument constructor). */
  public static final String LISTENERS = "spark.nativepool.ledger.listeners";

  /** Tasks per window of the growth detector: a part's floor is its least value over a window. */
  public static final String GROWTH_WINDOW = "spark.nativepool.ledger.growth.window";

  /** Consecutive rising window floors after which the growth detector reports a part. */
  public static final String GROWTH_WINDOWS = "spark.nativepool.ledger.growth.windows";

  /** The least growth of a part's floor over those windows that the detector reports. */
  public static final String GROWTH_MIN_BYTES = "spark.nativepool.ledger.growth.minBytes";

  /** The threshold name of the RSS. */
  public static final String TOTAL = "total";

  /** Default of {@value #HYSTERESIS}. */
  public static final double DEFAULT_HYSTERESIS = 0.1;

  /** Default of {@value #GROWTH_WINDOW}. */
  public static final int DEFAULT_GROWTH_WINDOW = 25;

  /** Default of {@value #GROWTH_WINDOWS}. */
  public static final int DEFAULT_GROWTH_WINDOWS = 4;

  /** Default of {@value #GROWTH_MIN_BYTES}: 16 MiB. */
  public static final long DEFAULT_GROWTH_MIN_BYTES = 16L << 20;

  /** One threshold: a part (as {@link LedgerSnapshot#get} names it) and a level in bytes. */
  public record Threshold(String part, long level) {}

  private final List<Threshold> thresholds;
  private final double hysteresis;
  private final List<String> listeners;
  private final int growthWindow;
  private final int growthWindows;
  private final long growthMinBytes;

  LedgerSettings(
      List<Threshold> thresholds,
      double hysteresis,
      List<String> listeners,
      int growthWindow,
      int growthWindows,
      long growthMinBytes) {
    this.thresholds = List.copyOf(thresholds);
    this.hysteresis = hysteresis;
    this.listeners = List.copyOf(listeners);
    this.growthWindow = growthWindow;
    this.growthWindows = growthWindows;
    this.growthMinBytes = growthMinBytes;
  }

  /** The defaults: no thresholds, no listeners, the detector on. */
  public static LedgerSettings defaults() {
    return new LedgerSettings(
        Collections.emptyList(),
        DEFAULT_HYSTERESIS,
        Collections.emptyList(),
        DEFAULT_GROWTH_WINDOW,
        DEFAULT_GROWTH_WINDOWS,
        DEFAULT_GROWTH_MIN_BYTES);
  }

  /**
   * Reads the settings from a Spark configuration.
   *
   * @throws IllegalArgumentException naming the key, for a value that does not parse or is out of
   *     range
   */
  public static LedgerSettings fromConf(SparkConf conf) {
    List<Threshold> th = parseThresholds(conf.get(THRESHOLDS, ""));
    double h;
    try {
      h = Double.parseDouble(conf.get(HYSTERESIS, Double.toString(DEFAULT_HYSTERESIS)).trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "nativepool: " + HYSTERESIS + " = " + conf.get(HYSTERESIS) + ": not a number", e);
    }
    if (!(h >= 0 && h < 1)) {
      throw new IllegalArgumentException(
          "nativepool: " + HYSTERESIS + " = " + h + ": must be in [0, 1)");
    }
    List<String> ls = new ArrayList<>();
    for (String c : conf.get(LISTENERS, "").split(",")) {
      if (!c.isBlank()) {
        ls.add(c.trim());
      }
    }
    int window = conf.getInt(GROWTH_WINDOW, DEFAULT_GROWTH_WINDOW);
    int windows = conf.getInt(GROWTH_WINDOWS, DEFAULT_GROWTH_WINDOWS);
    if (window < 1 || windows < 1) {
      throw new IllegalArgumentException(
          "nativepool: "
              + GROWTH_WINDOW
              + " = "
              + window
              + " and "
              + GROWTH_WINDOWS
              + " = "
              + windows
              + ": both must be >= 1");
    }
    long min = size(GROWTH_MIN_BYTES, conf.get(GROWTH_MIN_BYTES, "16m"));
    return new LedgerSettings(th, h, ls, window, windows, min);
  }

  /** Parses {@value #THRESHOLDS}. */
  static List<Threshold> parseThresholds(String spec) {
    List<Threshold> out = new ArrayList<>();
    for (String item : spec.split(",")) {
      if (item.isBlank()) {
        continue;
      }
      int eq = item.indexOf('=');
      if (eq <= 0 || eq == item.length() - 1) {
        throw new IllegalArgumentException(
            "nativepool: " + THRESHOLDS + ": '" + item.trim() + "' is not part=size");
      }
      String part = item.substring(0, eq).trim();
      if (part.equals(TOTAL)) {
        part = MemoryLedger.RSS;
      }
      long level = size(THRESHOLDS, item.substring(eq + 1));
      if (level <= 0) {
        throw new IllegalArgumentException(
            "nativepool: " + THRESHOLDS + ": level of " + part + " must be > 0");
      }
      out.add(new Threshold(part, level));
    }
    return out;
  }

  private static long size(String key, String v) {
    try {
      return JavaUtils.byteStringAsBytes(v.trim());
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(
          "nativepool: " + key + ": '" + v.trim() + "' is not a size", e);
    }
  }

  /** {@value #THRESHOLDS}, in order ({@code total} is named {@link MemoryLedger#RSS}). */
  public List<Threshold> thresholds() {
    return thresholds;
  }

  /** {@value #HYSTERESIS}. */
  public double hysteresis() {
    return hysteresis;
  }

  /** {@value #LISTENERS}: class names. */
  public List<String> listeners() {
    return listeners;
  }

  /** {@value #GROWTH_WINDOW}. */
  public int growthWindow() {
    return growthWindow;
  }

  /** {@value #GROWTH_WINDOWS}. */
  public int growthWindows() {
    return growthWindows;
  }

  /** {@value #GROWTH_MIN_BYTES}. */
  public long growthMinBytes() {
    return growthMinBytes;
  }

  @Override
  public String toString() {
    return "LedgerSettings(thresholds="
        + thresholds
        + ", hysteresis="
        + hysteresis
        + ", listeners="
        + listeners
        + ", growth="
        + growthWindows
        + "x"
        + growthWindow
        + " tasks, >= "
        + growthMinBytes
        + " B)";
  }
}
