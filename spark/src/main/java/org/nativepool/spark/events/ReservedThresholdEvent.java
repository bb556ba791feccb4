package org.nativepool.spark.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.nativepool.spark.config.NativePoolConf;

/**
 * An executor's reserved bytes crossed one of the {@link NativePoolConf#EXECUTOR_RESERVED_THRESHOLDS}
 * levels, posted by the driver side of the plugin to Spark's listener bus (every crossing; the event log
 * keeps it). Seen at sample resolution: up when the highest reserved figure of a sample's interval
 * reaches the level, down when a sample's current figure is back under it. (The Go side's
 * per-task crossings are logged on the executor, not forwarded.) Immutable.
 */
@JsonDeserialize(using = ReservedThresholdEvent.Json.class)
public final class ReservedThresholdEvent implements SparkListenerEvent {
  /**
   * Jackson's reader of the event in an event log: every field read leniently, so that a malformed
   * event never stops the History Server's replay ({@link LenientEventDeserializer}).
   */
  public static final class Json extends LenientEventDeserializer<ReservedThresholdEvent> {
    private static final long serialVersionUID = 1L;

    /** The reader. */
    public Json() {
      super(ReservedThresholdEvent.class);
    }
  }

  private final String executorId;
  private final long timeMillis;
  private final long level;
  private final boolean up;
  private final long reserved;

  /** One crossing; Jackson's creator when the event log is replayed. */
  @JsonCreator
  public ReservedThresholdEvent(
      @JsonProperty("executorId") String executorId,
      @JsonProperty("timeMillis") long timeMillis,
      @JsonProperty("level") long level,
      @JsonProperty("up") boolean up,
      @JsonProperty("reserved") long reserved) {
    this.executorId = executorId;
    this.timeMillis = timeMillis;
    this.level = level;
    this.up = up;
    this.reserved = reserved;
  }

  /** The executor whose reserved bytes crossed the level. */
  public String getExecutorId() {
    return executorId;
  }

  /** When the sample that showed it was read (epoch ms). */
  public long getTimeMillis() {
    return timeMillis;
  }

  /** The threshold, in bytes. */
  public long getLevel() {
    return level;
  }

  /** True for an upward crossing, false for a downward one. */
  public boolean isUp() {
    return up;
  }

  /** The reserved bytes that crossed: the interval's peak going up, the current figure down. */
  public long getReserved() {
    return reserved;
  }

  @Override
  public String toString() {
    return "ReservedThresholdEvent(executor="
        + executorId
        + ", level="
        + level
        + (up ? ", up" : ", down")
        + ", reserved="
        + reserved
        + ")";
  }
}
