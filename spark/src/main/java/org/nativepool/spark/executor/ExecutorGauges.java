package org.nativepool.spark.executor;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.nativepool.spark.jni.ArrowProcessStat;
import org.nativepool.spark.jni.ArrowProcessStats;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.jni.ProcessStats;

/**
 * The executor plugin's gauges, served from one reading per poll: the reporting thread takes one
 * {@link Reading} (one {@code processStats0} and one {@code processArrowStats0}, at one instant)
 * every poll period, and every gauge, the sample sent to the driver and the ledger's native parts
 * read from it. A metrics scrape therefore costs no native call at all, the values of one scrape
 * come from one instant, and glibc's {@code mallinfo2} (which locks every malloc arena, inside
 * {@code processStats0}) runs once per poll, on the reporting thread, never on a task's path.
 *
 * <p>The gauges: one per {@link ProcessStat} and per named {@link ArrowProcessStat} (the README's
 * metrics table), {@value #DRIFT_GAUGE} and {@value #GAP_GAUGE}. Safe for concurrent use.
 */
public final class ExecutorGauges {
  /** Gauge name → figure of {@code processStats0}: one gauge per {@link ProcessStat}. */
  public static final Map<String, ProcessStat> GAUGES =
      gaugeTable(ProcessStat.values(), ProcessStat::gaugeName);

  /** Gauge name → figure of {@code processArrowStats0}: the named {@link ArrowProcessStat}s. */
  public static final Map<String, ArrowProcessStat> ARROW_GAUGES =
      gaugeTable(ArrowProcessStat.values(), ArrowProcessStat::gaugeName);

  /**
   * {@code rssDrift} = RSS now − RSS when the plugin initialised − bytes the pools hold from Spark
   * now: how far the process has grown beyond what Spark was told. A trend to watch, never a gate
   * (RSS lags allocation and counts the JVM's own growth); the executor memory ledger says where
   * the bytes are. -1 if RSS cannot be read.
   */
  public static final String DRIFT_GAUGE = "rssDrift";

  /**
   * {@code allocationGap} = bytes reserved by native consumers − bytes the accounted Arrow
   * allocators hold: what is reserved but not in an Arrow buffer (chunk and reservation slack,
   * operators' reservations for other memory). Never negative at an instant.
   */
  public static final String GAP_GAUGE = "allocationGap";

  /** One reading of the native figures, taken at one instant. */
  public record Reading(long timeMillis, ProcessStats process, ArrowProcessStats arrow) {}

  private final long baselineRss;
  private final AtomicReference<Reading> latest = new AtomicReference<>();

  /**
   * @param baselineRss the process's RSS when the plugin initialised (-1: unknown), for {@value
   *     #DRIFT_GAUGE}
   */
  public ExecutorGauges(long baselineRss) {
    this.baselineRss = baselineRss;
  }

  /** Takes a new reading (one call of each stats native) and returns it. */
  public Reading refresh() {
    Reading r =
        new Reading(System.currentTimeMillis(), Natives.processStats(), Natives.processArrowStats());
    latest.set(r);
    return r;
  }

  /** The latest reading, taking one if none was taken yet. */
  public Reading latest() {
    Reading r = latest.get();
    return r != null ? r : refresh();
  }

  /** Registers every gauge in {@code registry}, each reading {@link #latest()}. */
  public void register(MetricRegistry registry) {
    for (Map.Entry<String, ProcessStat> e : GAUGES.entrySet()) {
      ProcessStat s = e.getValue();
      registry.register(e.getKey(), (Gauge<Long>) () -> latest().process().get(s));
    }
    for (Map.Entry<String, ArrowProcessStat> e : ARROW_GAUGES.entrySet()) {
      ArrowProcessStat s = e.getValue();
      registry.register(e.getKey(), (Gauge<Long>) () -> latest().arrow().get(s));
    }
    registry.register(DRIFT_GAUGE, (Gauge<Long>) () -> drift(latest()));
    registry.register(GAP_GAUGE, (Gauge<Long>) () -> gap(latest()));
  }

  /** Every gauge's value in {@code r}, by gauge name, in registration order. */
  public Map<String, Long> figures(Reading r) {
    Map<String, Long> out = new LinkedHashMap<>();
    for (Map.Entry<String, ProcessStat> e : GAUGES.entrySet()) {
      out.put(e.getKey(), r.process().get(e.getValue()));
    }
    for (Map.Entry<String, ArrowProcessStat> e : ARROW_GAUGES.entrySet()) {
      out.put(e.getKey(), r.arrow().get(e.getValue()));
    }
    out.put(DRIFT_GAUGE, drift(r));
    out.put(GAP_GAUGE, gap(r));
    return out;
  }

  private long drift(Reading r) {
    long rss = r.arrow().get(ArrowProcessStat.RSS);
    if (rss < 0 || baselineRss < 0) {
      return -1L;
    }
    return rss - baselineRss - r.process().get(ProcessStat.HELD);
  }

  private static long gap(Reading r) {
    return r.process().get(ProcessStat.RESERVED) - r.arrow().get(ArrowProcessStat.ALLOCATED);
  }

  /** Gauge name → figure, for the figures {@code name} gives a name (non-null), in enum order. */
  private static <E extends Enum<E>> Map<String, E> gaugeTable(
      E[] stats, Function<E, String> name) {
    Map<String, E> m = new LinkedHashMap<>();
    for (E s : stats) {
      String g = name.apply(s);
      if (g != null) {
        m.put(g, s);
      }
    }
    return Collections.unmodifiableMap(m);
  }
}
