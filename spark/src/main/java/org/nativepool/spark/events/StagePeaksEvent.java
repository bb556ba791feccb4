package org.nativepool.spark.events;


import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * A stage's native memory peaks, posted by the driver side of the plugin two heartbeat intervals
 * after the stage completes (the event log keeps it): the highest reserved and held bytes of each
 * executor in the samples whose interval overlapped the stage (each sample carries the peaks of
 * its interval, including the peak of each task pool that closed in it), and the highest sum over
 * executors of those interval peaks. Sample resolution: an interval that overlaps two stages
 * counts in both; an executor with no such sample is absent from the maps. Immutable.
 */
@JsonDeserialize(using = StagePeaksEvent.Json.class)
public final class StagePeaksEvent implements SparkListenerEvent {
  /**
   * Jackson's reader of the event in an event log: every field read leniently, so that a malformed
   * event never stops the History Server's replay ({@link LenientEventDeserializer}).
   */
  public static final class Json extends LenientEventDeserializer<StagePeaksEvent> {
    private static final long serialVersionUID = 1L;

    /** The reader. */
    public Json() {
      super(StagePeaksEvent.class);
    }
  }

  private final int stageId;
  private final int stageAttemptId;
  private final long timeMillis;
  private final Map<String, Long> executorPeakReserved;
  private final Map<String, Long> executorPeakHeld;
  private final long totalPeakReserved;
  private final long totalPeakHeld;
  private final Map<String, Map<String, Long>> executorLedgerPeaks;
  private final long taskPoolPeak;
  private final Map<String, Long> consumerPeaks;

  /** A stage's reserved and held peaks, without ledger figures. */
  public StagePeaksEvent(
      int stageId,
      int stageAttemptId,
      long timeMillis,
      Map<String, Long> executorPeakReserved,
      Map<String, Long> executorPeakHeld,
      long totalPeakReserved,
      long totalPeakHeld) {
    this(
        stageId,
        stageAttemptId,
        timeMillis,
        executorPeakReserved,
        executorPeakHeld,
        totalPeakReserved,
        totalPeakHeld,
        null,
        0,
        null);
  }

  /** A stage's peaks; Jackson's creator when the event log is replayed. */
  @JsonCreator
  public StagePeaksEvent(
      @JsonProperty("stageId") int stageId,
      @JsonProperty("stageAttemptId") int stageAttemptId,
      @JsonProperty("timeMillis") long timeMillis,
      @JsonProperty("executorPeakReserved") Map<String, Long> executorPeakReserved,
      @JsonProperty("executorPeakHeld") Map<String, Long> executorPeakHeld,
      @JsonProperty("totalPeakReserved") long totalPeakReserved,
      @JsonProperty("totalPeakHeld") long totalPeakHeld,
      @JsonProperty("executorLedgerPeaks") Map<String, Map<String, Long>> executorLedgerPeaks,
      @JsonProperty("taskPoolPeak") long taskPoolPeak,
      @JsonProperty("consumerPeaks") Map<String, Long> consumerPeaks) {
    this.stageId = stageId;
    this.stageAttemptId = stageAttemptId;
    this.timeMillis = timeMillis;
    this.executorPeakReserved = copy(executorPeakReserved);
    this.executorPeakHeld = copy(executorPeakHeld);
    this.totalPeakReserved = totalPeakReserved;
    this.totalPeakHeld = totalPeakHeld;
    TreeMap<String, Map<String, Long>> l = new TreeMap<>();
    if (executorLedgerPeaks != null) {
      executorLedgerPeaks.forEach((e, m) -> l.put(e, copy(m)));
    }
    this.executorLedgerPeaks = Collections.unmodifiableMap(l);
    this.taskPoolPeak = taskPoolPeak;
    this.consumerPeaks = copy(consumerPeaks);
  }

  /**
   * Executor → ledger figure ({@code LedgerReader.RSS}, each part, {@code
   * LedgerReader.UNEXPLAINED}) → the highest value that executor read during the stage.
   */
  public Map<String, Map<String, Long>> getExecutorLedgerPeaks() {
    return executorLedgerPeaks;
  }

  /** The highest peak of a task pool that closed during the stage, on any executor; 0 if none. */
  public long getTaskPoolPeak() {
    return taskPoolPeak;
  }

  /** Consumer name → its highest reserved bytes in a task pool closed during the stage. */
  public Map<String, Long> getConsumerPeaks() {
    return consumerPeaks;
  }

  private static Map<String, Long> copy(Map<String, Long> m) {
    return Collections.unmodifiableMap(m == null ? new TreeMap<>() : new TreeMap<>(m));
  }

  /** The completed stage. */
  public int getStageId() {
    return stageId;
  }

  /** Its attempt. */
  public int getStageAttemptId() {
    return stageAttemptId;
  }

  /** When the driver saw the stage complete (epoch ms). */
  public long getTimeMillis() {
    return timeMillis;
  }

  /** Executor id → highest reserved bytes while the stage ran. */
  public Map<String, Long> getExecutorPeakReserved() {
    return executorPeakReserved;
  }

  /** Executor id → highest bytes held from Spark while the stage ran. */
  public Map<String, Long> getExecutorPeakHeld() {
    return executorPeakHeld;
  }

  /** The highest sum over executors of their interval peaks of reserved bytes. */
  public long getTotalPeakReserved() {
    return totalPeakReserved;
  }

  /** The same for held bytes. */
  public long getTotalPeakHeld() {
    return totalPeakHeld;
  }

  @Override
  public String toString() {
    return "StagePeaksEvent(stage="
        + stageId
        + "."
        + stageAttemptId
        + ", totalPeakReserved="
        + totalPeakReserved
        + ", totalPeakHeld="
        + totalPeakHeld
        + ")";
  }
}
