package org.nativepool.spark.events;

import java.io.Serializable;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One executor's figures, sent to the driver side of the plugin over plugin RPC ({@code
 * PluginContext.send}) once per heartbeat interval, at its start and when a task ends. Immutable;
 * Java-serialisable (Spark's RPC serialiser), carrying only JDK types besides its own records.
 *
 * @param executorId the sending executor ({@code PluginContext.executorID()})
 * @param timeMillis when the figures were read (epoch ms)
 * @param sequence 0 for the executor's first sample, then one more per sample
 * @param gauges the executor plugin's gauges by their names ({@code reserved}, {@code
 *     heldFromSpark}, … {@code rssBytes}, {@code allocationGap}: the README's metrics table), from
 *     one reading
 * @param intervalPeakReserved the highest reserved bytes the executor saw since its previous
 *     sample: polled readings, and the peaks of task pools that closed meanwhile
 * @param intervalPeakHeld the highest bytes held from Spark it saw since its previous sample
 * @param ledger the executor memory ledger's part of the sample
 * @param boundary whether the executor sent it at a boundary of its work, its start or a task's
 *     end, rather than on its timer: the driver posts such samples to the event log beyond its
 *     timer's rate, so that a job shorter than one sampling period still has points
 */
public record ExecutorSample(
    String executorId,
    long timeMillis,
    long sequence,
    Map<String, Long> gauges,
    long intervalPeakReserved,
    long intervalPeakHeld,
    LedgerSample ledger,
    boolean boundary)
    implements Serializable {
  private static final long serialVersionUID = 1L;

  /** Gauge name of {@link #intervalPeakReserved()} on the driver. */
  public static final String INTERVAL_PEAK_RESERVED = "intervalPeakReserved";

  /** Gauge name of {@link #intervalPeakHeld()} on the driver. */
  public static final String INTERVAL_PEAK_HELD = "intervalPeakHeld";

  /** Gauge name prefix of a ledger part on both sides: {@code ledger.<part>}. */
  public static final String LEDGER_PREFIX = "ledger.";

  /** Copies the gauges (keeping their order) and makes them unmodifiable. */
  public ExecutorSample {
    gauges = Collections.unmodifiableMap(new LinkedHashMap<>(gauges));
    ledger = ledger == null ? LedgerSample.EMPTY : ledger;
  }

  /** A sample the executor sent on its timer ({@code boundary} false). */
  public ExecutorSample(
      String executorId,
      long timeMillis,
      long sequence,
      Map<String, Long> gauges,
      long intervalPeakReserved,
      long intervalPeakHeld,
      LedgerSample ledger) {
    this(
        executorId,
        timeMillis,
        sequence,
        gauges,
        intervalPeakReserved,
        intervalPeakHeld,
        ledger,
        false);
  }

  /**
   * Every figure the driver shows as a gauge of this executor, by gauge name: the executor's
   * gauges, the interval peaks and the ledger's parts ({@code ledger.<part>}).
   */
  public Map<String, Long> figures() {
    Map<String, Long> out = new LinkedHashMap<>(gauges);
    out.put(INTERVAL_PEAK_RESERVED, intervalPeakReserved);
    out.put(INTERVAL_PEAK_HELD, intervalPeakHeld);
    for (Map.Entry<String, Long> e : ledger.parts().entrySet()) {
      out.put(LEDGER_PREFIX + e.getKey(), e.getValue());
    }
    return out;
  }

  /** The figure of {@link #figures()} named {@code name}, or {@code otherwise}. */
  public long figure(String name, long otherwise) {
    if (name.equals(INTERVAL_PEAK_RESERVED)) {
      return intervalPeakReserved;
    }
    if (name.equals(INTERVAL_PEAK_HELD)) {
      return intervalPeakHeld;
    }
    if (name.startsWith(LEDGER_PREFIX)) {
      Long v = ledger.parts().get(name.substring(LEDGER_PREFIX.length()));
      if (v != null) {
        return v;
      }
    }
    Long v = gauges.get(name);
    return v == null ? otherwise : v;
  }
}
