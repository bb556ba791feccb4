package org.nativepool.spark.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.nativepool.spark.config.ReportingSettings;

/**
 * An executor's figures, posted by the driver side of the plugin to Spark's listener bus (and so
 * to the event log, which the History Server replays) at most once per {@link
 * org.nativepool.spark.config.NativePoolConf#EVENT_LOG_SAMPLE_EVERY} heartbeat intervals for each executor. In the event log
 * it is one JSON line: {@code {"Event":"org.nativepool.spark.events.ExecutorSampleEvent",
 * "executorId":"1","timeMillis":…,"sequence":…,"figures":{"liveTasks":…,"reserved":…,…}}}.
 * Immutable.
 */
@JsonDeserialize(using = ExecutorSampleEvent.Json.class)
public final class ExecutorSampleEvent implements SparkListenerEvent {
  /**
   * Jackson's reader of the event in an event log: every field read leniently, so that a malformed
   * event never stops the History Server's replay ({@link LenientEventDeserializer}).
   */
  public static final class Json extends LenientEventDeserializer<ExecutorSampleEvent> {
    private static final long serialVersionUID = 1L;

    /** The reader. */
    public Json() {
      super(ExecutorSampleEvent.class);
    }
  }

  private final String executorId;
  private final long timeMillis;
  private final long sequence;
  private final Map<String, Long> figures;

  /** The event of one sample; Jackson's creator when the event log is replayed. */
  @JsonCreator
  public ExecutorSampleEvent(
      @JsonProperty("executorId") String executorId,
      @JsonProperty("timeMillis") long timeMillis,
      @JsonProperty("sequence") long sequence,
      @JsonProperty("figures") Map<String, Long> figures) {
    this.executorId = executorId;
    this.timeMillis = timeMillis;
    this.sequence = sequence;
    this.figures =
        Collections.unmodifiableMap(
            figures == null ? new LinkedHashMap<>() : new LinkedHashMap<>(figures));
  }

  /** The executor the figures are from. */
  public String getExecutorId() {
    return executorId;
  }

  /** When the executor read them (epoch ms). */
  public long getTimeMillis() {
    return timeMillis;
  }

  /** The executor's sample counter (see {@link ExecutorSample#sequence()}). */
  public long getSequence() {
    return sequence;
  }

  /** Figure name → value, as in {@link ExecutorSample#figures()}. */
  public Map<String, Long> getFigures() {
    return figures;
  }

  @Override
  public String toString() {
    return "ExecutorSampleEvent(executor=" + executorId + ", seq=" + sequence + ")";
  }
}
