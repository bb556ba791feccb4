package org.nativepool.spark;

import org.apache.spark.SparkConf;

/**
 * The settings of the plugin's reporting (issue 12): what executors send to the driver, the
 * executor summary line, the event log and the driver's memoryOverhead choice. Read from the
 * Spark configuration by both sides of {@link NativePoolPlugin}. Immutable.
 *
 * <ul>
 *   <li>{@code spark.executor.heartbeatInterval} (Spark's, default 10s): how often each executor
 *       sends its figures to the driver;
 *   <li>{@value #LOG_INTERVAL} (default 0 = off): one summary line per interval on each executor;
 *   <li>{@value #EVENT_LOG_SAMPLE_EVERY} (default 6): the driver posts at most one sample of each
 *       executor to the event log per that many heartbeat intervals (6 × 10s = one a minute per
 *       executor);
 *   <li>{@value #AUTO_OVERHEAD} (default false): the driver sets {@code
 *       spark.executor.memoryOverhead} ({@link AutoOverhead}).
 * </ul>
 */
public final class ReportingSettings {
  /** Executor summary line interval (a duration; 0 or unset = off). */
  public static final String LOG_INTERVAL = "spark.nativepool.memory.logInterval";

  /** Heartbeat intervals per sample event of an executor in the event log (0 = none). */
  public static final String EVENT_LOG_SAMPLE_EVERY = "spark.nativepool.eventLog.sampleEvery";

  /** Whether the driver sets {@code spark.executor.memoryOverhead} ({@link AutoOverhead}). */
  public static final String AUTO_OVERHEAD = "spark.nativepool.autoOverhead";

  /** Default of {@value #EVENT_LOG_SAMPLE_EVERY}. */
  public static final int DEFAULT_EVENT_LOG_SAMPLE_EVERY = 6;

  /** The longest an executor waits between two reads of its figures ({@link #pollMillis()}). */
  static final long MAX_POLL_MILLIS = 1000;

  private final long heartbeatMillis;
  private final long logIntervalMillis;
  private final int eventLogSampleEvery;
  private final boolean autoOverhead;

  private ReportingSettings(
      long heartbeatMillis, long logIntervalMillis, int eventLogSampleEvery, boolean autoOverhead) {
    this.heartbeatMillis = heartbeatMillis;
    this.logIntervalMillis = logIntervalMillis;
    this.eventLogSampleEvery = eventLogSampleEvery;
    this.autoOverhead = autoOverhead;
  }

  /**
   * Reads the settings from a Spark configuration.
   *
   * @throws IllegalArgumentException naming the key, for a value that does not parse or is
   *     negative
   */
  public static ReportingSettings fromConf(SparkConf conf) {
    long heartbeat = conf.getTimeAsMs("spark.executor.heartbeatInterval", "10s");
    if (heartbeat <= 0) {
      throw new IllegalArgumentException(
          "nativepool: spark.executor.heartbeatInterval = " + heartbeat + " ms: must be > 0");
    }
    long log = conf.getTimeAsMs(LOG_INTERVAL, "0");
    if (log < 0) {
      throw new IllegalArgumentException("nativepool: " + LOG_INTERVAL + ": negative duration");
    }
    int every = conf.getInt(EVENT_LOG_SAMPLE_EVERY, DEFAULT_EVENT_LOG_SAMPLE_EVERY);
    if (every < 0) {
      throw new IllegalArgumentException(
          "nativepool: " + EVENT_LOG_SAMPLE_EVERY + " = " + every + ": must be >= 0");
    }
    return new ReportingSettings(heartbeat, log, every, conf.getBoolean(AUTO_OVERHEAD, false));
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

  /** {@value #LOG_INTERVAL} in ms; 0 = no summary line. */
  public long logIntervalMillis() {
    return logIntervalMillis;
  }

  /**
   * {@value #EVENT_LOG_SAMPLE_EVERY}: heartbeat intervals per sample event of an executor; 0 = no
   * sample events (threshold and stage events stay).
   */
  public int eventLogSampleEvery() {
    return eventLogSampleEvery;
  }

  /** {@value #AUTO_OVERHEAD}. */
  public boolean autoOverhead() {
    return autoOverhead;
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
        + ")";
  }
}
