package org.nativepool.spark.driver;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricFilter;
import com.codahale.metrics.MetricRegistry;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.ToLongFunction;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.ledger.ExecutorLedger;
import org.nativepool.spark.ledger.LedgerReader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The live executors the driver hears from, and their gauges: an executor is admitted at its first
 * {@link ExecutorSample} and gets a gauge per figure, {@code executor.<id>.<figure>}, plus {@code
 * executor.<id>.stagePeakReserved} and {@code .stagePeakHeld} ({@link StagePeakTracker}); the
 * totals over live executors are {@code total.<figure>} for the additive figures ({@link #TOTALS})
 * and {@code total.executors}. An executor's gauges go when Spark removes it, after which its late
 * samples are dropped, or when it has sent nothing for ten heartbeat intervals. Gauges show the
 * last sample: they are as old as one heartbeat interval.
 *
 * <p>Safe for concurrent use: samples arrive on Spark's RPC threads, removals on the listener
 * bus's thread, gauge reads on the metrics sinks' threads.
 */
final class ExecutorRegistry {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorRegistry.class);

  /**
   * The figures whose sum over executors means something, each a {@code total.<figure>} gauge:
   * current bytes and counts, cumulative counters. Peaks, limits and settings are per executor
   * only.
   */
  static final List<String> TOTALS =
      List.of(
          ProcessStat.LIVE_TASKS.gaugeName(),
          ProcessStat.RESERVED.gaugeName(),
          ProcessStat.HELD.gaugeName(),
          ProcessStat.SLACK.gaugeName(),
          ProcessStat.OVERCOMMIT.gaugeName(),
          ProcessStat.UPSTREAM_CALLS.gaugeName(),
          ProcessStat.SPILL_REQUESTS.gaugeName(),
          ProcessStat.SPILL_BYTES_FREED.gaugeName(),
          ProcessStat.LATE_RELEASES.gaugeName(),
          ProcessStat.SPILL_REENTRIES.gaugeName(),
          ProcessStat.LEAKS.gaugeName(),
          ProcessStat.LEAKED_BYTES.gaugeName(),
          ProcessStat.LEAKED_RESIDENT.gaugeName(),
          ExecutorLedger.GAUGE_PREFIX + LedgerReader.RSS,
          ExecutorLedger.GAUGE_PREFIX + LedgerReader.UNEXPLAINED,
          ProcessStat.GO_MAPPED.gaugeName(),
          ProcessStat.GO_HEAP_RETURNS.gaugeName(),
          ProcessStat.GO_HEAP_RETURNED_BYTES.gaugeName(),
          "nativeAllocated",
          "arrowLiveAllocators",
          "rssBytes");

  private final MetricRegistry registry;

  /** How many reserved-bytes thresholds each executor's view tracks. */
  private final int levels;

  /** Live executors by Spark's executor id. */
  private final Map<String, View> executors = new ConcurrentHashMap<>();

  /** Ids of executors Spark removed: their late samples are dropped. */
  private final Set<String> removed = ConcurrentHashMap.newKeySet();

  /**
   * @param registry the driver plugin's metric registry, where the gauges go
   * @param levels the number of {@code spark.nativepool.executor.reservedThresholds} levels
   */
  ExecutorRegistry(MetricRegistry registry, int levels) {
    this.registry = registry;
    this.levels = levels;
  }

  /** Registers the {@code total.*} gauges of the live executors. */
  void registerTotals() {
    for (String figure : TOTALS) {
      registry.register("total." + figure, (Gauge<Long>) () -> total(figure));
    }
    registry.register("total.executors", (Gauge<Long>) () -> (long) executors.size());
  }

  /** The live executors. */
  Collection<View> live() {
    return executors.values();
  }

  /** Whether Spark removed executor {@code id}. */
  boolean isRemoved(String id) {
    return removed.contains(id);
  }

  /**
   * The state of the sample's executor, made at its first sample, with {@code s} as its latest
   * sample seen at {@code nowMillis}; null if Spark removed it. The check and the add are one
   * atomic step on the executor's map entry, and {@link #remove} marks the id removed before it
   * removes the entry: a sample racing the removal either is added first and then removed with the
   * rest, or finds the id removed. (A check before a separate add let such a sample re-add the
   * executor after its removal, with gauges nobody would remove.)
   */
  View admit(ExecutorSample s, long nowMillis) {
    boolean[] made = new boolean[1];
    View e =
        executors.compute(
            s.executorId(),
            (id, old) -> {
              if (removed.contains(id)) {
                return null;
              }
              if (old != null) {
                return old;
              }
              made[0] = true;
              return new View(id, s, levels);
            });
    if (made[0]) {
      LOG.info("nativepool: executor {} reports to the driver", s.executorId());
    }
    if (e != null) {
      e.latest = s;
      e.lastSeenMillis = nowMillis;
      registerGauges(e, s.figures().keySet());
    }
    return e;
  }

  /** Spark removed executor {@code id}: its late samples are dropped, its gauges go. */
  void remove(String id) {
    removed.add(id);
    forget(id);
  }

  /** Removes the executors that sent nothing for {@code limitMillis} before {@code nowMillis}. */
  void forgetStale(long nowMillis, long limitMillis) {
    for (View e : executors.values()) {
      if (nowMillis - e.lastSeenMillis > limitMillis) {
        LOG.info(
            "nativepool: executor {} sent nothing for {} ms; its gauges go", e.id, limitMillis);
        forget(e.id);
      }
    }
  }

  /** The sum of {@code figure} over live executors (negative figures, "unknown", are skipped). */
  long total(String figure) {
    long sum = 0;
    for (View e : executors.values()) {
      long v = e.latest.figure(figure, -1);
      if (v > 0) {
        sum += v;
      }
    }
    return sum;
  }

  /**
   * A gauge-name-safe form of an executor id: letters, digits, '_' and '-' kept, anything else (a
   * '.', which would split the Dropwizard name) becomes '_'.
   */
  static String gaugeKey(String executorId) {
    return executorId.replaceAll("[^A-Za-z0-9_-]", "_");
  }

  /** Registers the gauges of figures {@code e} has none for yet. */
  private void registerGauges(View e, Set<String> figures) {
    synchronized (e) {
      if (e.removed) {
        return;
      }
      for (String f : figures) {
        if (e.gauges.add(f)) {
          register(e, f, x -> x.latest.figure(f, -1));
        }
      }
      if (e.gauges.add(StagePeakTracker.STAGE_PEAK_RESERVED)) {
        register(e, StagePeakTracker.STAGE_PEAK_RESERVED, x -> x.stagePeakReserved);
        register(e, StagePeakTracker.STAGE_PEAK_HELD, x -> x.stagePeakHeld);
      }
    }
  }

  private void register(View e, String figure, ToLongFunction<View> read) {
    try {
      registry.register(e.prefix + figure, (Gauge<Long>) () -> read.applyAsLong(e));
    } catch (IllegalArgumentException dup) {
      // An executor id reused after its removal raced with the removal: keep the older gauge,
      // which reads the same figures by name.
      LOG.debug("nativepool: gauge {} already registered", e.prefix + figure);
    }
  }

  private void forget(String id) {
    View e = executors.remove(id);
    if (e == null) {
      return;
    }
    synchronized (e) {
      e.removed = true;
      registry.removeMatching(MetricFilter.startsWith(e.prefix));
    }
  }

  /** One executor's state on the driver. */
  static final class View {
    final String id;
    final String prefix;

    /** The last sample; replaced on each, read by gauges without a lock. */
    volatile ExecutorSample latest;

    volatile long lastSeenMillis;

    /** The {@code stagePeak*} gauges' figures. Written under {@link StagePeakTracker}'s lock. */
    volatile long stagePeakReserved;

    volatile long stagePeakHeld;

    /** Figures with a gauge. Guarded by this. */
    final Set<String> gauges = new HashSet<>();

    /** Per threshold: whether reserved is at or above it. Guarded by this. */
    final boolean[] above;

    /** Set once, when the executor's gauges are removed. Guarded by this. */
    boolean removed;

    /**
     * Sample events posted, when the last was (sample time) and its sequence; the boundary events
     * of the current timer period, and when that period began. Guarded by this ({@link
     * SampleEvents}).
     */
    long sampleEvents;

    long lastSampleEventMillis;

    long lastPostedSequence = -1;

    long boundaryEvents;

    long boundaryWindowStartMillis;

    View(String id, ExecutorSample first, int levels) {
      this.id = id;
      this.prefix = "executor." + gaugeKey(id) + ".";
      this.latest = first;
      this.above = new boolean[levels];
    }
  }
}
