package org.nativepool.spark.events;





import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import java.io.Serializable;
import java.util.List;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.config.LedgerSettings;
import org.nativepool.spark.config.PoolSettings;

/**
 * The growth detector found a ledger part whose floor keeps rising: over {@link #getTasks()} task
 * boundaries its least value per window of {@link org.nativepool.spark.config.NativePoolConf#GROWTH_WINDOW} tasks rose in
 * every one of {@link org.nativepool.spark.config.NativePoolConf#GROWTH_WINDOWS} consecutive windows, by {@link
 * #getGrowth()} bytes in all. For native memory it names the owners still live: the consumers and
 * (with {@link org.nativepool.spark.config.NativePoolConf#ALLOCATION_SITES}) the allocation sites holding the most. Each
 * report reaches the executor's {@code LedgerListener}s, a WARN line and the {@code
 * ledger.growthReports} counter, and the driver posts it to Spark's listener bus. Immutable.
 */
@JsonDeserialize(using = GrowthReportEvent.Json.class)
public final class GrowthReportEvent implements SparkListenerEvent, Serializable {
  /**
   * Jackson's reader of the event in an event log: every field read leniently, so that a malformed
   * event never stops the History Server's replay ({@link LenientEventDeserializer}).
   */
  public static final class Json extends LenientEventDeserializer<GrowthReportEvent> {
    private static final long serialVersionUID = 1L;

    /** The reader. */
    public Json() {
      super(GrowthReportEvent.class);
    }
  }

  private static final long serialVersionUID = 1L;

  private final String executorId;
  private final long timeMillis;
  private final String part;
  private final long fromBytes;
  private final long toBytes;
  private final long tasks;
  private final long taskCount;
  private final List<String> owners;

  /** One report; Jackson's creator when the event log is replayed. */
  @JsonCreator
  public GrowthReportEvent(
      @JsonProperty("executorId") String executorId,
      @JsonProperty("timeMillis") long timeMillis,
      @JsonProperty("part") String part,
      @JsonProperty("fromBytes") long fromBytes,
      @JsonProperty("toBytes") long toBytes,
      @JsonProperty("tasks") long tasks,
      @JsonProperty("taskCount") long taskCount,
      @JsonProperty("owners") List<String> owners) {
    this.executorId = executorId;
    this.timeMillis = timeMillis;
    this.part = part;
    this.fromBytes = fromBytes;
    this.toBytes = toBytes;
    this.tasks = tasks;
    this.taskCount = taskCount;
    this.owners = owners == null ? List.of() : List.copyOf(owners);
  }

  /** The executor. */
  public String getExecutorId() {
    return executorId;
  }

  /** When the detector reported (epoch ms). */
  public long getTimeMillis() {
    return timeMillis;
  }

  /** The ledger part that grows (or {@code LedgerReader.UNEXPLAINED}). */
  public String getPart() {
    return part;
  }

  /** The part's floor at the start of the rising windows, bytes. */
  public long getFromBytes() {
    return fromBytes;
  }

  /** The part's floor in the last window, bytes. */
  public long getToBytes() {
    return toBytes;
  }

  /** {@link #getToBytes()} less {@link #getFromBytes()}. */
  public long getGrowth() {
    return toBytes - fromBytes;
  }

  /** The task boundaries the rising windows span. */
  public long getTasks() {
    return tasks;
  }

  /** The task boundaries the executor's detector had seen when it reported. */
  public long getTaskCount() {
    return taskCount;
  }

  /**
   * The owners still holding native memory, largest first, each as {@code consumer @ site: bytes}
   * (the site only when allocation sites are recorded); empty for parts without owners.
   */
  public List<String> getOwners() {
    return owners;
  }

  /**
   * The WARN line, e.g. {@code nativepool: executor 1 ledger: native.allocated keeps growing: its
   * floor rose from 1.0 MiB to 26.0 MiB over 100 tasks (256.0 KiB per task); still held by …}.
   */
  public String describe() {
    StringBuilder b =
        new StringBuilder("nativepool: executor ")
            .append(executorId)
            .append(" ledger: ")
            .append(part)
            .append(" keeps growing: its floor rose from ")
            .append(Bytes.format(fromBytes))
            .append(" to ")
            .append(Bytes.format(toBytes))
            .append(" over ")
            .append(tasks)
            .append(" tasks (")
            .append(Bytes.format(tasks > 0 ? getGrowth() / tasks : getGrowth()))
            .append(" per task)");
    if (!owners.isEmpty()) {
      b.append("; still held by ").append(String.join(", ", owners));
    }
    return b.toString();
  }

  @Override
  public String toString() {
    return "GrowthReportEvent(" + describe() + ")";
  }
}
