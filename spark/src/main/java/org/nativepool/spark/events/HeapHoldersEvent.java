package org.nativepool.spark.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.io.Serializable;
import java.util.List;
import java.util.Objects;
import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * Who held one JVM's heap at one moment: the result of one analysis of its Old Object Samples
 * ({@link HeapHolder}s, largest first), with what the analysis could see ({@link #getNote()}). A
 * growth report of a heap part carries the same in {@link GrowthReportEvent#getHeapHolders()}; this
 * event carries the analyses asked for on the Native Memory page ("who holds the heap"), from an
 * executor (sent to the driver) or the driver itself, and the driver posts it to Spark's listener
 * bus, so the event log keeps it and the History Server shows it.
 *
 * <p>Immutable; Java-serialisable for plugin RPC, Jackson-readable for the event log.
 */
public final class HeapHoldersEvent implements SparkListenerEvent, Serializable {
  private static final long serialVersionUID = 1L;

  private final String executorId;
  private final long timeMillis;
  private final String trigger;
  private final long sinceMillis;
  private final String note;
  private final List<HeapHolder> holders;
  private final int recentSamples;
  private final int liveSamples;
  private final long liveBytes;


  /** An analysis without a live share: refused, failed, or none made. */
  public HeapHoldersEvent(
      String executorId,
      long timeMillis,
      String trigger,
      long sinceMillis,
      String note,
      List<HeapHolder> holders) {
    this(executorId, timeMillis, trigger, sinceMillis, note, holders, -1, -1, -1);
  }

  /**
   * One analysis; Jackson's creator when the event log is replayed.
   *
   * @param executorId the JVM: an executor's id, or {@code driver}
   * @param timeMillis when it was made (epoch ms)
   * @param trigger why, e.g. {@code on demand} or {@code growth of jvm.heap.afterGc}
   * @param sinceMillis samples allocated before this were left out (epoch ms); 0: none
   * @param note what the analysis saw: samples kept, live, path search time, and whether it ran
   *     out of time; or why there was no analysis
   * @param holders the largest holders, largest first
   * @param recentSamples the samples allocated since {@code sinceMillis}; -1: no analysis
   * @param liveSamples of those, the live ones; -1: no analysis
   * @param liveBytes their sizes added up (those the JVM gives); -1: no analysis
   */
  @JsonCreator
  public HeapHoldersEvent(
      @JsonProperty("executorId") String executorId,
      @JsonProperty("timeMillis") long timeMillis,
      @JsonProperty("trigger") String trigger,
      @JsonProperty("sinceMillis") long sinceMillis,
      @JsonProperty("note") String note,
      @JsonProperty("holders") List<HeapHolder> holders,
      @JsonProperty("recentSamples") int recentSamples,
      @JsonProperty("liveSamples") int liveSamples,
      @JsonProperty("liveBytes") long liveBytes) {
    this.executorId = executorId;
    this.timeMillis = timeMillis;
    this.trigger = trigger == null ? "" : trigger;
    this.sinceMillis = sinceMillis;
    this.note = note == null ? "" : note;
    this.holders = holders == null ? List.of() : List.copyOf(holders);
    this.recentSamples = recentSamples;
    this.liveSamples = liveSamples;
    this.liveBytes = liveBytes;
  }

  /** The JVM: an executor's id, or {@code driver}. */
  public String getExecutorId() {
    return executorId;
  }

  /** When the analysis was made (epoch ms). */
  public long getTimeMillis() {
    return timeMillis;
  }

  /** Why it was made. */
  public String getTrigger() {
    return trigger;
  }

  /** Samples allocated before this were left out (epoch ms); 0: none. */
  public long getSinceMillis() {
    return sinceMillis;
  }

  /** What the analysis saw, or why there was none. */
  public String getNote() {
    return note;
  }

  /** The largest holders, largest first. */
  public List<HeapHolder> getHolders() {
    return holders;
  }

  /** The samples allocated since {@link #getSinceMillis()}; -1: no analysis. */
  public int getRecentSamples() {
    return recentSamples;
  }

  /** Of those, the live ones; -1: no analysis. */
  public int getLiveSamples() {
    return liveSamples;
  }

  /** The live ones' sizes added up; -1: no analysis. */
  public long getLiveBytes() {
    return liveBytes;
  }

  /**
   * Whether the analysis confirms that the heap grew by {@code growthBytes} with live objects:
   * holders found, and the live samples allocated since the growth began add up to at least 5% of
   * it (the JVM samples by bytes allocated, so large objects, and a growing collection's backing
   * array, are always among the samples: 20–66% of the rise in the leaks tested). Otherwise what grew is garbage the collections have not
   * reached yet (objects the young collections promoted, large arrays no longer referenced, which
   * the next collection of the old generation frees), beside a little live memory of the JVM's own
   * (classes loaded, caches filled: 0.1–1.7% of the rise in a spark-shell and at the demo's
   * start). A leak of small objects only, with no array growing with it, whose samples' own sizes
   * stay under 5% of the rise, is not confirmed.
   */
  public boolean confirmsGrowth(long growthBytes) {
    if (holders.isEmpty() || liveSamples <= 0) {
      return false;
    }
    return liveBytes * 20 >= growthBytes;
  }

  /** The holders, one line each, as {@link HeapHolder#describe()}. */
  @JsonIgnore
  public List<String> lines() {
    return holders.stream().map(HeapHolder::describe).toList();
  }

  /**
   * The log line, e.g. {@code nativepool: driver heap holders (on demand): 235 samples, 12 live
   * …;
   * 1) 12 × long[16384] … | 2) …}.
   */
  public String describe() {
    StringBuilder b =
        new StringBuilder("nativepool: ")
            .append(executorId.equals("driver") ? "driver" : "executor " + executorId)
            .append(" heap holders (")
            .append(trigger)
            .append("): ")
            .append(note);
    int i = 1;
    for (HeapHolder h : holders) {
      b.append(i == 1 ? "; " : " | ").append(i++).append(") ").append(h.describe());
    }
    return b.toString();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof HeapHoldersEvent e
        && Objects.equals(executorId, e.executorId)
        && timeMillis == e.timeMillis
        && trigger.equals(e.trigger)
        && sinceMillis == e.sinceMillis
        && note.equals(e.note)
        && holders.equals(e.holders);
  }

  @Override
  public int hashCode() {
    return Objects.hash(executorId, timeMillis, trigger);
  }

  @Override
  public String toString() {
    return "HeapHoldersEvent(" + describe() + ")";
  }
}
