package org.nativepool.spark.config;

import org.apache.spark.SparkConf;

/**
 * Both plugin sides' view of the reporting keys of {@link NativePoolConf}: how often executors send
 * their figures to the driver (Spark's heartbeat), the executor summary line, the event log's
 * sample rate, the driver's executor thresholds and {@code autoOverhead}. Immutable.
 */
public final class ReportingSettings {
  /** The longest an executor waits between two reads of its figures ({@link #pollMillis()}). */
  public static final long MAX_POLL_MILLIS = 1000;

  private final long heartbeatMillis;
  private final long logIntervalMillis;
  private final int eventLogSampleEvery;
  private final boolean autoOverhead;
  private final long[] executorThresholds;
  private final boolean monitoring;

  private ReportingSettings(SparkConf conf) {
    long heartbeat = conf.getTimeAsMs("spark.executor.heartbeatInterval", "10s");
    if (heartbeat <= 0) {
      throw new IllegalArgumentException(
          "nativepool: spark.executor.heartbeatInterval = " + heartbeat + " ms: must be > 0");
    }
    this.heartbeatMillis = heartbeat;
    this.logIntervalMillis = NativePoolConf.LOG_INTERVAL.read(conf);
    this.eventLogSampleEvery = NativePoolConf.EVENT_LOG_SAMPLE_EVERY.read(conf);
    this.autoOverhead = NativePoolConf.AUTO_OVERHEAD.read(conf);
    this.executorThresholds = NativePoolConf.EXECUTOR_RESERVED_THRESHOLDS.read(conf);
    this.monitoring = NativePoolConf.MONITORING.read(conf);
  }

  /**
   * Reads the settings from a Spark configuration.
   *
   * @throws IllegalArgumentException naming the key, for a value that does not parse or is out of
   *     range
   */
  public static ReportingSettings fromConf(SparkConf conf) {
    return new ReportingSettings(conf);
  }

  /** How often an executor sends a sample to the driver: Spark's heartbeat interval, in ms. */
  public long heartbeatMillis() {
    return heartbeatMillis;
  }

  /**
   * How often an executor reads its figures between two sends, so that a sample's interval peaks
   * see short bursts: the heartbeat interval, at most {@value #MAX_POLL_MILLIS} ms.
   */
  public long pollMillis() {
    return Math.min(heartbeatMillis, MAX_POLL_MILLIS);
  }

  /** {@link NativePoolConf#LOG_INTERVAL} in ms; 0 = no summary line. */
  public long logIntervalMillis() {
    return logIntervalMillis;
  }

  /** {@link NativePoolConf#EVENT_LOG_SAMPLE_EVERY}; 0 = no sample events. */
  public int eventLogSampleEvery() {
    return eventLogSampleEvery;
  }

  /** {@link NativePoolConf#AUTO_OVERHEAD}. */
  public boolean autoOverhead() {
    return autoOverhead;
  }

  /**
   * {@link NativePoolConf#MONITORING}: whether the executor registers its gauges, runs its
   * reporting thread and reads its ledger.
   */
  public boolean monitoring() {
    return monitoring;
  }

  /** A copy of {@link NativePoolConf#EXECUTOR_RESERVED_THRESHOLDS} in bytes. */
  public long[] executorThresholds() {
    return executorThresholds.clone();
  }

  @Override
  public String toString() {
    return "ReportingSettings(heartbeatMs="
        + heartbeatMillis
        + ", logIntervalMs="
        + logIntervalMillis
        + ", eventLogSampleEvery="
        + eventLogSampleEvery
        + ", autoOverhead="
        + autoOverhead
        + ", executorThresholds="
        + java.util.Arrays.toString(executorThresholds)
        + ", monitoring="
        + monitoring
        + ")";
  }
}
