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
 * ledger.growthReports} counter, and the driver posts it to Spark's listener bus. For a heap part
 * ({@code jvm.heap.afterGc}) it names the heap's holders instead ({@link #getHeapHolders()}): the
 * live objects sampled since the growth began, with their paths from a GC root.
 *
 * <p>The driver reports its own heap the same way, as executor {@value #DRIVER}: its boundaries are
 * the readings of its heap that moved, not tasks. Immutable.
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

  /** The executor id of the driver's own reports (Spark's id of the driver). */
  public static final String DRIVER = "driver";

  /** {@link #getBoundary()} of the executors' reports. */
  public static final String TASK = "task";

  /** {@link #getBoundary()} of the driver's reports of its own heap: a reading that moved. */
  public static final String HEAP_READING = "heap reading";

  private final String executorId;
  private final long timeMillis;
  private final String part;
  private final long fromBytes;
  private final long toBytes;
  private final long tasks;
  private final long taskCount;
  private final List<String> owners;
  private final List<HeapHolder> heapHolders;
  private final String heapHoldersNote;
  private final String boundary;

  /** A report without heap holders. */
  public GrowthReportEvent(
      String executorId,
      long timeMillis,
      String part,
      long fromBytes,
      long toBytes,
      long tasks,
      long taskCount,
      List<String> owners) {
    this(
        executorId, timeMillis, part, fromBytes, toBytes, tasks, taskCount, owners, null, null,
        TASK);
  }

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
      @JsonProperty("owners") List<String> owners,
      @JsonProperty("heapHolders") List<HeapHolder> heapHolders,
      @JsonProperty("heapHoldersNote") String heapHoldersNote,
      @JsonProperty("boundary") String boundary) {
    this.executorId = executorId;
    this.timeMillis = timeMillis;
    this.part = part;
    this.fromBytes = fromBytes;
    this.toBytes = toBytes;
    this.tasks = tasks;
    this.taskCount = taskCount;
    this.owners = owners == null ? List.of() : List.copyOf(owners);
    this.heapHolders = heapHolders == null ? List.of() : List.copyOf(heapHolders);
    this.heapHoldersNote = heapHoldersNote;
    this.boundary = boundary == null ? TASK : boundary;
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
   * What the detector's boundaries were: {@value #TASK} (an executor: task ends) or {@value
   * #HEAP_READING} (the driver's own heap: its readings that moved). {@link #getTasks()} and {@link
   * #getTaskCount()} count them.
   */
  public String getBoundary() {
    return boundary;
  }

  /** The heap's holders, largest first, for a heap part; empty for other parts. */
  public List<HeapHolder> getHeapHolders() {
    return heapHolders;
  }

  /**
   * What the heap analysis saw (samples, path search time, whether it ran out of time) or why there
   * was none; null for parts that are not the heap.
   */
  public String getHeapHoldersNote() {
    return heapHoldersNote;
  }

  /** The heap holders as the event the Native Memory page keeps; null for other parts. */
  public HeapHoldersEvent heapHoldersEvent() {
    if (heapHoldersNote == null) {
      return null;
    }
    return new HeapHoldersEvent(
        executorId, timeMillis, "growth of " + part, 0, heapHoldersNote, heapHolders);
  }

  /**
   * The WARN line, e.g. {@code nativepool: executor 1 ledger: native.allocated keeps growing: its
   * floor rose from 1.0 MiB to 26.0 MiB over 100 tasks (256.0 KiB per task); still held by …}.
   */
  public String describe() {
    String unit = boundary;
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
            .append(' ')
            .append(unit)
            .append("s (")
            .append(Bytes.format(tasks > 0 ? getGrowth() / tasks : getGrowth()))
            .append(" per ")
            .append(unit)
            .append(')');
    if (!owners.isEmpty()) {
      b.append("; still held by ").append(String.join(", ", owners));
    }
    if (heapHoldersNote != null) {
      b.append("; heap holders: ").append(heapHoldersNote);
      int i = 1;
      for (HeapHolder h : heapHolders) {
        b.append(i == 1 ? "; " : " | ").append(i++).append(") ").append(h.describe());
      }
    }
    return b.toString();
  }

  @Override
  public String toString() {
    return "GrowthReportEvent(" + describe() + ")";
  }
}
