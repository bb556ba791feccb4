package org.nativepool.spark;

import java.io.Serializable;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One executor's figures, sent to the driver side of the plugin over plugin RPC ({@code
 * PluginContext.send}) once per heartbeat interval. Immutable; Java-serialisable (Spark's RPC
 * serialiser), and carrying only JDK types besides itself.
 *
 * <p>{@link #figures()} holds the executor plugin's gauges by their names ({@code reserved},
 * {@code heldFromSpark}, … {@code rssBytes}, {@code rssDrift}, {@code allocationGap}: the README's
 * metrics table) as read when the sample was taken, plus {@value #INTERVAL_PEAK_RESERVED} and
 * {@value #INTERVAL_PEAK_HELD}: the highest reserved and held figures the executor read since its
 * previous sample (it reads them every {@link ReportingSettings#pollMillis()}).
 */
public final class ExecutorSample implements Serializable {
  private static final long serialVersionUID = 1L;

  /** Figure name: the highest reserved bytes read since the previous sample. */
  public static final String INTERVAL_PEAK_RESERVED = "intervalPeakReserved";

  /** Figure name: the highest held bytes read since the previous sample. */
  public static final String INTERVAL_PEAK_HELD = "intervalPeakHeld";

  private final String executorId;
  private final long timeMillis;
  private final long sequence;
  private final LinkedHashMap<String, Long> figures;

  /**
   * @param executorId the sending executor ({@code PluginContext.executorID()})
   * @param timeMillis when the figures were read (epoch ms)
   * @param sequence 0 for the executor's first sample, then one more per sample
   * @param figures figure name → value; copied
   */
  public ExecutorSample(
      String executorId, long timeMillis, long sequence, Map<String, Long> figures) {
    this.executorId = executorId;
    this.timeMillis = timeMillis;
    this.sequence = sequence;
    this.figures = new LinkedHashMap<>(figures);
  }

  /** The sending executor's id. */
  public String executorId() {
    return executorId;
  }

  /** When the figures were read, in epoch milliseconds. */
  public long timeMillis() {
    return timeMillis;
  }

  /** The executor's sample counter: 0 for its first sample. */
  public long sequence() {
    return sequence;
  }

  /** Figure name → value, in the executor's order; unmodifiable. */
  public Map<String, Long> figures() {
    return Collections.unmodifiableMap(figures);
  }

  /** The figure {@code name}, or {@code otherwise} if the sample has none. */
  public long figure(String name, long otherwise) {
    Long v = figures.get(name);
    return v == null ? otherwise : v;
  }

  @Override
  public String toString() {
    return "ExecutorSample(executor=" + executorId + ", seq=" + sequence + ", " + figures + ")";
  }
}
