package org.nativepool.spark.events;





import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import java.io.Serializable;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.config.LedgerSettings;

/**
 * A part of an executor's memory ledger crossed one of its {@link
 * org.nativepool.spark.config.NativePoolConf#LEDGER_THRESHOLDS}
 * levels: upwards when the part reached the level, downwards when it fell back below the level
 * less the hysteresis ({@link org.nativepool.spark.config.NativePoolConf#LEDGER_HYSTERESIS}). Each crossing reaches the executor's
 * {@code LedgerListener}s, a log line and the {@code ledger.thresholdCrossings} counter, and is
 * sent to the driver, which posts it to Spark's listener bus (the event log keeps it). Immutable;
 * Java-serialisable for plugin RPC, Jackson-readable for the event log.
 */
@JsonDeserialize(using = LedgerCrossingEvent.Json.class)
public final class LedgerCrossingEvent implements SparkListenerEvent, Serializable {
  /**
   * Jackson's reader of the event in an event log: every field read leniently, so that a malformed
   * event never stops the History Server's replay ({@link LenientEventDeserializer}).
   */
  public static final class Json extends LenientEventDeserializer<LedgerCrossingEvent> {
    private static final long serialVersionUID = 1L;

    /** The reader. */
    public Json() {
      super(LedgerCrossingEvent.class);
    }
  }

  private static final long serialVersionUID = 1L;

  private final String executorId;
  private final long timeMillis;
  private final String part;
  private final long level;
  private final boolean up;
  private final long bytes;
  private final long lowerLevel;

  /** One crossing; Jackson's creator when the event log is replayed. */
  @JsonCreator
  public LedgerCrossingEvent(
      @JsonProperty("executorId") String executorId,
      @JsonProperty("timeMillis") long timeMillis,
      @JsonProperty("part") String part,
      @JsonProperty("level") long level,
      @JsonProperty("up") boolean up,
      @JsonProperty("bytes") long bytes,
      @JsonProperty("lowerLevel") long lowerLevel) {
    this.executorId = executorId;
    this.timeMillis = timeMillis;
    this.part = part;
    this.level = level;
    this.up = up;
    this.bytes = bytes;
    this.lowerLevel = lowerLevel;
  }

  /** The executor whose ledger crossed. */
  public String getExecutorId() {
    return executorId;
  }

  /** When the reading that showed it was taken (epoch ms). */
  public long getTimeMillis() {
    return timeMillis;
  }

  /** The part: a ledger part name, {@code LedgerReader.RSS} or {@code LedgerReader.UNEXPLAINED}. */
  public String getPart() {
    return part;
  }

  /** The threshold, bytes. */
  public long getLevel() {
    return level;
  }

  /** True for an upward crossing, false for a downward one. */
  public boolean isUp() {
    return up;
  }

  /** The part's bytes in the reading that crossed. */
  public long getBytes() {
    return bytes;
  }

  /** The level a downward crossing needs the part to fall below: level × (1 − hysteresis). */
  public long getLowerLevel() {
    return lowerLevel;
  }

  /**
   * The log line, e.g. {@code nativepool: executor 1 ledger: unexplained rose to 530.0 MiB,
   * crossing 512.0 MiB}.
   */
  public String describe() {
    return "nativepool: executor "
        + executorId
        + " ledger: "
        + part
        + (up ? " rose to " : " fell to ")
        + Bytes.format(bytes)
        + (up
            ? ", crossing " + Bytes.format(level)
            : ", below "
                + Bytes.format(lowerLevel)
                + " (threshold "
                + Bytes.format(level)
                + ")");
  }

  @Override
  public String toString() {
    return "LedgerCrossingEvent(executor="
        + executorId
        + ", part="
        + part
        + ", level="
        + level
        + (up ? ", up" : ", down")
        + ", bytes="
        + bytes
        + ")";
  }
}
