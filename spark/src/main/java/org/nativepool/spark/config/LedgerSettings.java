package org.nativepool.spark.config;

import java.util.List;
import org.apache.spark.SparkConf;

/**
 * The executor's view of the executor memory ledger's keys of {@link NativePoolConf}: thresholds
 * and their hysteresis, the listeners to load, and the growth detector. Immutable.
 */
public final class LedgerSettings {
  /** The threshold name of the whole resident set (the ledger's {@code rss}). */
  public static final String TOTAL = "total";


  private final List<LedgerThreshold> thresholds;
  private final double hysteresis;
  private final List<String> listeners;
  private final int growthWindow;
  private final int growthWindows;
  private final long growthMinBytes;

  /**
   * Settings given directly, for code that runs a ledger without a Spark configuration.
   *
   * @throws IllegalArgumentException for a hysteresis outside [0, 1), a window below 1, or a
   *     negative minimum
   */
  public LedgerSettings(
      List<LedgerThreshold> thresholds,
      double hysteresis,
      List<String> listeners,
      int growthWindow,
      int growthWindows,
      long growthMinBytes) {
    if (!(hysteresis >= 0 && hysteresis < 1) || growthWindow < 1 || growthWindows < 1) {
      throw new IllegalArgumentException(
          "nativepool: ledger settings out of range: hysteresis "
              + hysteresis
              + ", windows "
              + growthWindows
              + " x "
              + growthWindow);
    }
    if (growthMinBytes < 0) {
      throw new IllegalArgumentException("nativepool: negative growth minimum " + growthMinBytes);
    }
    this.thresholds = List.copyOf(thresholds);
    this.hysteresis = hysteresis;
    this.listeners = List.copyOf(listeners);
    this.growthWindow = growthWindow;
    this.growthWindows = growthWindows;
    this.growthMinBytes = growthMinBytes;
  }

  /** The defaults of every key: no thresholds, no listeners, the detector on. */
  public static LedgerSettings defaults() {
    return fromConf(new SparkConf(false));
  }

  /**
   * Reads the settings from a Spark configuration.
   *
   * @throws IllegalArgumentException naming the key, for a value that does not parse or is out of
   *     range
   */
  public static LedgerSettings fromConf(SparkConf conf) {
    return new LedgerSettings(
        NativePoolConf.LEDGER_THRESHOLDS.read(conf),
        NativePoolConf.LEDGER_HYSTERESIS.read(conf),
        NativePoolConf.LEDGER_LISTENERS.read(conf),
        NativePoolConf.GROWTH_WINDOW.read(conf),
        NativePoolConf.GROWTH_WINDOWS.read(conf),
        NativePoolConf.GROWTH_MIN_BYTES.read(conf));
  }

  /** The thresholds, in order. */
  public List<LedgerThreshold> thresholds() {
    return thresholds;
  }

  /** {@link NativePoolConf#LEDGER_HYSTERESIS}. */
  public double hysteresis() {
    return hysteresis;
  }

  /** {@link NativePoolConf#LEDGER_LISTENERS}: class names. */
  public List<String> listeners() {
    return listeners;
  }

  /** {@link NativePoolConf#GROWTH_WINDOW}. */
  public int growthWindow() {
    return growthWindow;
  }

  /** {@link NativePoolConf#GROWTH_WINDOWS}. */
  public int growthWindows() {
    return growthWindows;
  }

  /** {@link NativePoolConf#GROWTH_MIN_BYTES}. */
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
        + " bytes)";
  }
}
