package org.nativepool.spark.ui;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.events.ExecutorDiagnosisEvent;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.ExecutorSampleEvent;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.events.GuardEpisodeEvent;
import org.nativepool.spark.events.HeapHolder;
import org.nativepool.spark.events.HeapHoldersEvent;
import org.nativepool.spark.events.LedgerCrossingEvent;
import org.nativepool.spark.events.ReservedThresholdEvent;
import org.nativepool.spark.events.StagePeaksEvent;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.ledger.LedgerReader;

/**
 * What the Native Memory page shows, gathered from the plugin's events as the listener bus delivers
 * them, live or replayed from the event log: per executor its ledger over time (from the {@link
 * ExecutorSampleEvent}s), its memory limit, markers for threshold crossings, growth reports and its
 * end with the diagnosis, bands for pod guard episodes, its leak figures; each JVM's last heap
 * holders (the driver's too: from growth reports of the heap and {@link HeapHoldersEvent}s); and
 * the stages' native peaks.
 *
 * <p><b>Bounds.</b> Per executor at most {@value #POINTS_KEPT} samples (when full, every other one
 * is dropped and only every second later one kept, so the whole life stays covered at half the
 * resolution; the newest sample is always shown), {@value #MARKS_KEPT} markers and {@value
 * #BANDS_KEPT} episodes, the last ones kept; the last {@value #STAGES_KEPT} stages; the last
 * {@value #EXECUTORS_KEPT} executors to report, and the heap holders of the last {@value
 * #EXECUTORS_KEPT} JVMs analysed. Safe for concurrent use.
 */
public final class NativeMemoryTimeline {
  static final int POINTS_KEPT = 600;
  static final int MARKS_KEPT = 200;
  static final int BANDS_KEPT = 100;
  static final int STAGES_KEPT = 500;
  static final int EXECUTORS_KEPT = 100;
  static final int LOST_STAGES_KEPT = 10;

  /** Where a kept sample holds an accounting figure, apart from the parts that add up. */
  private static final String ACCOUNTING_PREFIX = "acct.";

  /**
   * The accounting figures the page's off-heap panel shows, by ledger part: what nativepool's pools
   * hold of Spark's off-heap memory, what the pod guard holds of it, and Spark's off-heap memory in
   * use in all.
   */
  static final List<String> OFF_HEAP_FIGURES =
      List.of(
          LedgerReader.NATIVE_HELD,
          LedgerReader.GUARD_OFF_HEAP_BALLAST,
          LedgerReader.SPARK_OFF_HEAP_USED);

  /** The leak figures of a sample the page shows, by gauge name. */
  static final List<String> LEAK_FIGURES =
      List.of(
          ProcessStat.LEAKS.gaugeName(),
          ProcessStat.LEAKED_BYTES.gaugeName(),
          ProcessStat.LEAKED_RESIDENT.gaugeName());

  private final Map<String, Track> executors = new LinkedHashMap<>();
  private final List<Snapshot.Stage> stages = new ArrayList<>();

  /** Each JVM's last heap holders, the driver's included. */
  private final Map<String, Snapshot.Holders> holders = new LinkedHashMap<>();

  private long offHeapBudget = -1;

  /** An empty timeline. */
  public NativeMemoryTimeline() {}

  /** The executors' off-heap budget ({@code spark.memory.offHeap.size}), bytes; -1: none. */
  public synchronized void setOffHeapBudget(long bytes) {
    offHeapBudget = bytes;
  }

  /**
   * Takes one of the plugin's events; any other event is ignored, and so is an event of an
   * executor that names none (replayed from a log that lacks the field).
   */
  public synchronized void accept(SparkListenerEvent event) {
    if (!(event instanceof StagePeaksEvent) && executorOf(event) == null) {
      return;
    }
    if (event instanceof ExecutorSampleEvent s) {
      track(s.getExecutorId()).add(s.getTimeMillis(), s.getFigures());
    } else if (event instanceof LedgerCrossingEvent c) {
      track(c.getExecutorId()).mark(new Snapshot.Mark(c.getTimeMillis(), "crossing", c.describe()));
    } else if (event instanceof ReservedThresholdEvent r) {
      track(r.getExecutorId())
          .mark(
              new Snapshot.Mark(
                  r.getTimeMillis(),
                  "crossing",
                  "reserved "
                      + (r.isUp() ? "rose to " : "fell to ")
                      + Bytes.format(r.getReserved())
                      + (r.isUp() ? ", crossing " : ", below ")
                      + Bytes.format(r.getLevel())));
    } else if (event instanceof GrowthReportEvent g) {
      if (!GrowthReportEvent.DRIVER.equals(g.getExecutorId()) || executors.containsKey("driver")) {
        Track t = track(g.getExecutorId());
        t.mark(new Snapshot.Mark(g.getTimeMillis(), "growth", g.describe()));
      }
      HeapHoldersEvent h = g.heapHoldersEvent();
      if (h != null) {
        holders(h);
      }
    } else if (event instanceof HeapHoldersEvent h) {
      holders(h);
    } else if (event instanceof GuardEpisodeEvent g) {
      long end = g.isOpen() ? g.getStartMillis() + g.getRecoveryMicros() / 1000 : g.getEndMillis();
      track(g.getExecutorId()).band(new Snapshot.Band(g.getStartMillis(), end, g.summary()));
    } else if (event instanceof ExecutorDiagnosisEvent d) {
      Track t = track(d.getExecutorId());
      t.end = d;
      t.mark(new Snapshot.Mark(d.getTimeMillis(), "end", d.describe()));
    } else if (event instanceof StagePeaksEvent p) {
      long maxExecutor = 0;
      for (long v : p.getExecutorPeakReserved().values()) {
        maxExecutor = Math.max(maxExecutor, v);
      }
      stages.add(
          new Snapshot.Stage(
              p.getStageId(),
              p.getStageAttemptId(),
              p.getTimeMillis(),
              p.getTotalPeakReserved(),
              p.getTotalPeakHeld(),
              maxExecutor,
              p.getTaskPoolPeak(),
              new LinkedHashMap<>(p.getConsumerPeaks())));
      while (stages.size() > STAGES_KEPT) {
        stages.remove(0);
      }
    }
  }

  /** The executor an executor's event is of; null for another event, or an event naming none. */
  private static String executorOf(SparkListenerEvent event) {
    if (event instanceof ExecutorSampleEvent s) {
      return s.getExecutorId();
    } else if (event instanceof LedgerCrossingEvent c) {
      return c.getExecutorId();
    } else if (event instanceof ReservedThresholdEvent r) {
      return r.getExecutorId();
    } else if (event instanceof GrowthReportEvent g) {
      return g.getExecutorId();
    } else if (event instanceof GuardEpisodeEvent g) {
      return g.getExecutorId();
    } else if (event instanceof ExecutorDiagnosisEvent d) {
      return d.getExecutorId();
    } else if (event instanceof HeapHoldersEvent h) {
      return h.getExecutorId();
    }
    return null;
  }

  /** Keeps {@code h} as its JVM's last heap holders. */
  private void holders(HeapHoldersEvent h) {
    holders.remove(h.getExecutorId());
    holders.put(
        h.getExecutorId(),
        new Snapshot.Holders(
            h.getExecutorId(), h.getTimeMillis(), h.getTrigger(), h.getNote(), h.getHolders()));
    while (holders.size() > EXECUTORS_KEPT) {
      holders.remove(holders.keySet().iterator().next());
    }
  }

  /**
   * A task failed because executor {@code executorId} was lost ({@code ExecutorLostFailure}), in
   * stage {@code stageId}.{@code attempt}: counted with the executor's end.
   */
  public synchronized void taskLost(String executorId, int stageId, int attempt) {
    Track t = track(executorId);
    t.lostTasks++;
    if (t.lostStages.size() < LOST_STAGES_KEPT) {
      t.lostStages.add(stageId + "." + attempt);
    }
  }

  private Track track(String id) {
    Track t = executors.get(id);
    if (t == null) {
      t = new Track(id);
      executors.put(id, t);
      if (executors.size() > EXECUTORS_KEPT) {
        executors.remove(executors.keySet().iterator().next());
      }
    }
    return t;
  }

  /** A copy of everything, for one rendering or for the History Server's store. */
  public synchronized Snapshot snapshot() {
    List<Snapshot.Executor> out = new ArrayList<>();
    for (Track t : executors.values()) {
      out.add(t.snapshot());
    }
    return new Snapshot(offHeapBudget, out, List.copyOf(stages), List.copyOf(holders.values()));
  }

  /** One executor's series while events come. Guarded by the timeline. */
  private static final class Track {
    final String id;
    final List<Long> times = new ArrayList<>();
    final List<Map<String, Long>> figures = new ArrayList<>();
    final List<Snapshot.Mark> marks = new ArrayList<>();
    final List<Snapshot.Band> bands = new ArrayList<>();
    ExecutorDiagnosisEvent end;
    Map<String, Long> leaks = new LinkedHashMap<>();

    /** Keep one sample in {@code stride}; doubled each time the points are halved. */
    int stride = 1;

    int skipped;

    long lostTasks;
    final LinkedHashSet<String> lostStages = new LinkedHashSet<>();

    /** Whether the last point is a sample off the stride, kept only until the next one. */
    boolean lastProvisional;

    Track(String id) {
      this.id = id;
    }

    void add(long time, Map<String, Long> f) {
      Map<String, Long> l = new LinkedHashMap<>();
      for (String n : LEAK_FIGURES) {
        Long v = f.get(n);
        if (v != null) {
          l.put(n, v);
        }
      }
      leaks = l;
      boolean onStride = ++skipped >= stride;
      if (onStride) {
        skipped = 0;
      }
      Map<String, Long> kept = new LinkedHashMap<>();
      Long limit = f.get(ProcessStat.GUARD_LIMIT.gaugeName());
      if (limit != null) {
        kept.put(ProcessStat.GUARD_LIMIT.gaugeName(), limit);
      }
      boolean heapResident =
          f.containsKey(ExecutorSample.LEDGER_PREFIX + LedgerReader.JVM_HEAP_RESIDENT);
      for (Map.Entry<String, Long> e : f.entrySet()) {
        String k = e.getKey();
        if (k.startsWith(ExecutorSample.LEDGER_PREFIX)) {
          String part = k.substring(ExecutorSample.LEDGER_PREFIX.length());
          if (LedgerReader.adds(part, heapResident)) {
            kept.put(k, e.getValue());
          } else if (OFF_HEAP_FIGURES.contains(part)) {
            kept.put(ACCOUNTING_PREFIX + part, e.getValue());
          }
        }
      }
      if (lastProvisional) { // the newest sample is always shown
        times.set(times.size() - 1, time);
        figures.set(figures.size() - 1, kept);
      } else {
        times.add(time);
        figures.add(kept);
      }
      lastProvisional = !onStride;
      if (times.size() > POINTS_KEPT) {
        for (int i = times.size() - 1; i >= 0; i--) {
          if (i % 2 == 1) {
            times.remove(i);
            figures.remove(i);
          }
        }
        stride *= 2;
        lastProvisional = false;
      }
    }

    void mark(Snapshot.Mark m) {
      marks.add(m);
      if (marks.size() > MARKS_KEPT) {
        marks.remove(0);
      }
    }

    void band(Snapshot.Band b) {
      bands.add(b);
      if (bands.size() > BANDS_KEPT) {
        bands.remove(0);
      }
    }

    Snapshot.Executor snapshot() {
      LinkedHashSet<String> names = new LinkedHashSet<>();
      for (Map<String, Long> f : figures) {
        for (String k : f.keySet()) {
          if (k.startsWith(ExecutorSample.LEDGER_PREFIX)) {
            names.add(k.substring(ExecutorSample.LEDGER_PREFIX.length()));
          }
        }
      }
      List<String> parts = List.copyOf(names);
      long[] t = new long[times.size()];
      long[][] v = new long[parts.size()][t.length];
      Map<String, long[]> offHeap = new LinkedHashMap<>();
      long limit = -1;
      for (int i = 0; i < t.length; i++) {
        t[i] = times.get(i);
        Map<String, Long> f = figures.get(i);
        for (int p = 0; p < parts.size(); p++) {
          v[p][i] = f.getOrDefault(ExecutorSample.LEDGER_PREFIX + parts.get(p), 0L);
        }
        for (String o : OFF_HEAP_FIGURES) {
          Long x = f.get(ACCOUNTING_PREFIX + o);
          if (x != null) {
            offHeap.computeIfAbsent(o, k -> new long[t.length])[i] = x;
          }
        }
        limit = Math.max(limit, f.getOrDefault(ProcessStat.GUARD_LIMIT.gaugeName(), -1L));
      }
      return new Snapshot.Executor(
          id,
          t,
          parts,
          v,
          offHeap,
          limit,
          List.copyOf(marks),
          List.copyOf(bands),
          end == null ? null : Snapshot.End.of(end),
          new LinkedHashMap<>(leaks),
          lostTasks,
          List.copyOf(lostStages));
    }
  }

  /**
   * Everything the page shows, at one moment: plain data, Jackson-writable, so that the History
   * Server can keep it in its store.
   *
   * @param offHeapBudget the executors' off-heap budget, bytes; -1: none
   * @param executors each executor's series and events, in the order they first reported
   * @param stages the stages' native peaks, in the order they completed
   * @param heapHolders each JVM's last heap holders (the driver's too), the last analysed last;
   *     null reads as none (a History Server store written before they existed)
   */
  public record Snapshot(
      long offHeapBudget, List<Executor> executors, List<Stage> stages, List<Holders> heapHolders) {
    /** A snapshot without heap holders. */
    public Snapshot(long offHeapBudget, List<Executor> executors, List<Stage> stages) {
      this(offHeapBudget, executors, stages, List.of());
    }

    /** Each JVM's last heap holders; never null. */
    public List<Holders> holders() {
      return heapHolders == null ? List.of() : heapHolders;
    }

    /**
     * A JVM's last analysis of its heap's holders.
     *
     * @param executorId an executor's id, or {@code driver}
     * @param timeMillis when it was made
     * @param trigger why (a growth report, or on demand)
     * @param note what it saw, or why there was none
     * @param holders the largest holders, largest first
     */
    public record Holders(
        String executorId,
        long timeMillis,
        String trigger,
        String note,
        List<HeapHolder> holders) {}

    /**
     * One executor.
     *
     * @param executorId the executor
     * @param times its samples' times (epoch ms)
     * @param parts the ledger parts sampled, which add up to its resident set
     * @param values per part, one value per time
     * @param offHeap the accounting figures of {@link #OFF_HEAP_FIGURES} each sample had, one value
     *     per time (0 where a sample lacked it)
     * @param limit the highest memory limit its pod guard reported, bytes; -1: none
     * @param marks crossings, growth reports and its end
     * @param bands its pod guard episodes
     * @param end why it ended, if it did
     * @param leaks its last leak figures ({@code leaks}, {@code leakedBytes}, {@code
     *     leakedResident})
     * @param lostTasks tasks that failed because it was lost ({@code ExecutorLostFailure})
     * @param lostStages the stages of those tasks ({@code id.attempt}), the first {@value
     *     #LOST_STAGES_KEPT}
     */
    public record Executor(
        String executorId,
        long[] times,
        List<String> parts,
        long[][] values,
        Map<String, long[]> offHeap,
        long limit,
        List<Mark> marks,
        List<Band> bands,
        End end,
        Map<String, Long> leaks,
        long lostTasks,
        List<String> lostStages) {}

    /** A marker: {@code kind} is {@code crossing}, {@code growth} or {@code end}. */
    public record Mark(long timeMillis, String kind, String label) {}

    /** A pod guard episode. */
    public record Band(long startMillis, long endMillis, String label) {}

    /**
     * An executor's end, from its {@link ExecutorDiagnosisEvent}.
     *
     * @param timeMillis when Spark removed it
     * @param cause the cause's words
     * @param exitCode the exit code; null if none
     * @param verdict why
     * @param failedTasks its last tasks that failed for lack of memory, one line each
     * @param container its container, as the cluster manager names it (YARN's {@code
     *     container_…}); null if unknown
     * @param limit the limit its container was held to, in words ({@link
     *     ExecutorDiagnosisEvent#limitText()}: the one YARN enforced, where it says)
     */
    public record End(
        long timeMillis,
        String cause,
        Integer exitCode,
        String verdict,
        List<String> failedTasks,
        String container,
        String limit) {
      static End of(ExecutorDiagnosisEvent d) {
        String cause = d.getCause().label();
        if (d.getSuspected() != null) {
          cause += " (" + d.getSuspected().label() + " would fit)";
        }
        return new End(
            d.getTimeMillis(),
            cause,
            d.getExitCode(),
            d.getVerdict(),
            d.getFailedTasks(),
            d.getContainer(),
            d.limitText());
      }
    }

    /**
     * A stage's native peaks, from its {@link StagePeaksEvent}.
     *
     * @param stageId the stage
     * @param attempt its attempt
     * @param timeMillis when it completed
     * @param totalReserved the highest reserved bytes summed over executors
     * @param totalHeld the highest held bytes summed over executors
     * @param maxExecutorReserved the highest reserved bytes of one executor
     * @param taskPoolPeak the highest peak of one task pool
     * @param consumers the largest consumers' peaks
     */
    public record Stage(
        int stageId,
        int attempt,
        long timeMillis,
        long totalReserved,
        long totalHeld,
        long maxExecutorReserved,
        long taskPoolPeak,
        Map<String, Long> consumers) {}
  }
}
