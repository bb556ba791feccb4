package org.nativepool.spark.config;

import org.apache.spark.SparkConf;

/**
 * Both plugin sides' view of the heap holder keys of {@link NativePoolConf}: whether the JVM keeps
 * its recording of Old Object Samples, the path search's time bound, the Native Memory page's
 * on-demand action and its rate limit, and the driver's check of its own heap. Immutable.
 */
public final class HeapHolderSettings {
  private final boolean enabled;
  private final long cutoffMillis;
  private final boolean onDemand;
  private final long minIntervalMillis;
  private final int driverWindow;
  private final int driverWindows;
  private final long growthMinBytes;

  /**
   * Settings given directly, for code that runs without a Spark configuration.
   *
   * @throws IllegalArgumentException for a cutoff, window or minimum below 1, or a negative
   *     interval
   */
  public HeapHolderSettings(
      boolean enabled,
      long cutoffMillis,
      boolean onDemand,
      long minIntervalMillis,
      int driverWindow,
      int driverWindows,
      long growthMinBytes) {
    if (cutoffMillis < 1
        || minIntervalMillis < 0
        || driverWindow < 1
        || driverWindows < 1
        || growthMinBytes < 1) {
      throw new IllegalArgumentException(
          "nativepool: heap holder settings out of range: cutoff "
              + cutoffMillis
              + " ms, interval "
              + minIntervalMillis
              + " ms, windows "
              + driverWindows
              + " x "
              + driverWindow
              + ", minimum "
              + growthMinBytes);
    }
    this.enabled = enabled;
    this.cutoffMillis = cutoffMillis;
    this.onDemand = onDemand;
    this.minIntervalMillis = minIntervalMillis;
    this.driverWindow = driverWindow;
    this.driverWindows = driverWindows;
    this.growthMinBytes = growthMinBytes;
  }

  /**
   * Reads the settings from a Spark configuration.
   *
   * @throws IllegalArgumentException naming the key, for a value that does not parse or is out of
   *     range
   */
  public static HeapHolderSettings fromConf(SparkConf conf) {
    return new HeapHolderSettings(
        NativePoolConf.HEAP_HOLDERS.read(conf),
        NativePoolConf.HEAP_HOLDERS_CUTOFF.read(conf),
        NativePoolConf.HEAP_HOLDERS_ON_DEMAND.read(conf),
        NativePoolConf.HEAP_HOLDERS_INTERVAL.read(conf),
        NativePoolConf.DRIVER_HEAP_WINDOW.read(conf),
        NativePoolConf.DRIVER_HEAP_WINDOWS.read(conf),
        NativePoolConf.DRIVER_HEAP_MIN_BYTES.read(conf));
  }

  /** {@link NativePoolConf#HEAP_HOLDERS}. */
  public boolean enabled() {
    return enabled;
  }

  /** {@link NativePoolConf#HEAP_HOLDERS_CUTOFF}, ms. */
  public long cutoffMillis() {
    return cutoffMillis;
  }

  /** {@link NativePoolConf#HEAP_HOLDERS_ON_DEMAND}, and the recording on. */
  public boolean onDemand() {
    return enabled && onDemand;
  }

  /** {@link NativePoolConf#HEAP_HOLDERS_INTERVAL}, ms. */
  public long minIntervalMillis() {
    return minIntervalMillis;
  }

  /** {@link NativePoolConf#DRIVER_HEAP_WINDOW}. */
  public int driverWindow() {
    return driverWindow;
  }

  /** {@link NativePoolConf#DRIVER_HEAP_WINDOWS}. */
  public int driverWindows() {
    return driverWindows;
  }

  /** {@link NativePoolConf#DRIVER_HEAP_MIN_BYTES}: the least growth the driver's check reports. */
  public long growthMinBytes() {
    return growthMinBytes;
  }

  @Override
  public String toString() {
    return "HeapHolderSettings(enabled="
        + enabled
        + ", cutoff="
        + cutoffMillis
        + " ms, onDemand="
        + onDemand
        + ", minInterval="
        + minIntervalMillis
        + " ms, driver="
        + driverWindows
        + "x"
        + driverWindow
        + " readings, >= "
        + growthMinBytes
        + " bytes)";
  }
}
