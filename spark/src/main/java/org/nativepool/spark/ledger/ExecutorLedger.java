package org.nativepool.spark.ledger;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.IntFunction;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.config.LedgerSettings;
import org.nativepool.spark.config.LedgerThreshold;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.events.ExecutorSample;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.events.HeapHoldersEvent;
import org.nativepool.spark.events.LedgerCrossingEvent;
import org.nativepool.spark.events.LedgerSample;
import org.nativepool.spark.events.StagePeaksEvent;
import org.nativepool.spark.jni.ArrowProcessStats;
import org.nativepool.spark.jni.ProcessStats;
import org.nativepool.spark.memory.ExecutorState;
import org.nativepool.spark.memory.TaskPoolObserver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor's memory ledger at run time: the latest {@link LedgerSnapshot}, high-water marks,
 * threshold crossings and the growth detector. One per executor plugin, reachable with {@link
 * #current()} (the process registry of the plugin, like its settings); the plugin's reporting
 * thread reads the ledger every poll period and at every task end.
 *
 * <ul>
 *   <li><b>Gauges</b> in the plugin's metric source: {@code ledger.<part>} for every part, {@code
 *       ledger.rss} and {@code ledger.unexplained}, served from the latest reading; counters {@code
 *       ledger.thresholdCrossings} and {@code ledger.growthReports}.
 *   <li><b>High-water marks</b> ({@link #peaks()}): per part, per task pool ({@link
 *       #taskPoolPeak()}) and per consumer ({@link #consumerPeaks()}, the largest {@value
 *       #CONSUMER_PEAKS_KEPT}), since the last {@link #resetPeaks()}. The driver keeps the same
 *       marks per stage from each sample's interval peaks and resets them when the stage ends
 *       ({@link StagePeaksEvent}).
 *   <li><b>Thresholds</b> ({@link NativePoolConf#LEDGER_THRESHOLDS}): each crossing, up or down
 *       with hysteresis, goes to the {@link LedgerListener}s, a log line (WARN up, INFO down), the
 *       crossings counter and the driver (event log).
 *   <li><b>Growth</b>: at each task end the parts go to a {@link GrowthDetector}; a part whose
 *       floor keeps rising is reported (WARN, counter, listeners, event log), naming for native
 *       memory the consumers and allocation sites still live, and for the heap after collections
 *       the heap's holders ({@link HeapHolders}: the objects sampled since the growth began, with
 *       their paths from a GC root).
 *   <li><b>History</b> ({@link #history()}): the last minute of readings with their times, so that
 *       what the ledger looked like before and during a moment (a pod guard episode) can be read
 *       afterwards.
 * </ul>
 */
public final class ExecutorLedger implements TaskPoolObserver {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorLedger.class);

  /** Gauge name prefix of the ledger's parts. */
  public static final String GAUGE_PREFIX = ExecutorSample.LEDGER_PREFIX;

  /** Counter name: threshold crossings, up and down. */
  public static final String CROSSINGS_COUNTER = "ledger.thresholdCrossings";

  /** Counter name: growth reports. */
  public static final String GROWTH_COUNTER = "ledger.growthReports";

  /** Consumers per sample with their peaks (the largest). */
  static final int CONSUMERS_PER_SAMPLE = 10;

  /**
   * Consumer names whose peaks the ledger keeps, per interval and since the last reset: the
   * largest. Engines name consumers per operator instance or per task ("sort[task 4711]"), so in a
   * long-running executor (a streaming job) the names never stop coming; the smallest peak makes
   * way for a larger one, and one smaller than all kept is not kept.
   */
  static final int CONSUMER_PEAKS_KEPT = 256;

  /** Owners a growth report names. */
  static final int OWNERS_PER_REPORT = 5;

  private final String executorId;
  private final LedgerSettings settings;
  private final LedgerReader ledger;
  private final Consumer<Object> toDriver;
  private final MetricRegistry registry;
  private final Counter crossings;
  private final Counter growthReports;
  private final CopyOnWriteArrayList<LedgerListener> listeners = new CopyOnWriteArrayList<>();
  private final GrowthDetector detector;
  private final boolean[] above;
  private final IntFunction<List<String>> owners;

  private volatile LedgerSnapshot latest;

  /** This JVM's heap holders, named in reports of the heap's growth; null: none. */
  private volatile HeapHolders heapHolders;

  /**
   * After a rise of the heap its analysis found to be garbage, the least time before the next
   * analysis (and a window of task ends): the rise stays a candidate, but the JVM is not paused
   * for a path search at every task end while garbage piles up.
   */
  static final long HEAP_REANALYSIS_MILLIS = 10_000;

  private volatile long heapMinIntervalMillis;

  // The next heap analysis: not before this task boundary and this time. On the reporting thread.
  private long nextHeapAnalysis;
  private long nextHeapAnalysisMillis;

  /** Every reading of the last minute ({@link LedgerHistory}'s default bounds). */
  private final LedgerHistory history = new LedgerHistory();

  // Guarded by this.
  private final Set<String> gauges = new HashSet<>();
  private final Map<String, Long> peaks = new LinkedHashMap<>();
  private final Map<String, Long> intervalPeaks = new LinkedHashMap<>();
  private long taskPoolPeak;
  private long taskPoolPeakTask = -1;
  private long intervalTaskPoolPeak;
  private final Map<String, Long> consumerPeaks = new LinkedHashMap<>();
  private final Map<String, Long> intervalConsumerPeaks = new LinkedHashMap<>();

  /**
   * @param executorId the executor's id, for log lines and events
   * @param settings thresholds, hysteresis, detector
   * @param ledger where readings come from
   * @param registry where the gauges and counters go (null: none)
   * @param toDriver sends a crossing or report to the driver side (never throws)
   * @param owners the {@code n} largest live native owners, as growth reports name them
   */
  public ExecutorLedger(
      String executorId,
      LedgerSettings settings,
      LedgerReader ledger,
      MetricRegistry registry,
      Consumer<Object> toDriver,
      IntFunction<List<String>> owners) {
    this.executorId = executorId;
    this.settings = settings;
    this.ledger = ledger;
    this.registry = registry == null ? new MetricRegistry() : registry;
    this.toDriver = toDriver;
    this.owners = owners;
    this.crossings = this.registry.counter(CROSSINGS_COUNTER);
    this.growthReports = this.registry.counter(GROWTH_COUNTER);
    this.detector =
        new GrowthDetector(
            settings.growthWindow(),
            settings.growthWindows(),
            settings.growthMinBytes(),
            part -> part.startsWith("jvm."));
    this.above = new boolean[settings.thresholds().size()];
  }

  /**
   * The ledger of this JVM's executor plugin, or null if none is running: the task pool observer
   * the plugin installed ({@link ExecutorState#observer()}).
   */
  public static ExecutorLedger current() {
    return ExecutorState.observer() instanceof ExecutorLedger l ? l : null;
  }

  /**
   * Loads the listeners {@link NativePoolConf#LEDGER_LISTENERS} names. A class that cannot be made
   * is left out and logged at ERROR: the ledger and the native pools work on without it, since a
   * monitoring setting never disables native pools (the driver refuses such a class at the
   * application's start already, {@link #checkListenerClasses}, so only a class the executor's
   * classpath lacks gets here).
   *
   * @return the reasons of the classes left out, one line each
   */
  public List<String> loadListeners(ClassLoader loader) {
    List<String> failed = new ArrayList<>();
    for (String name : settings.listeners()) {
      try {
        Class<?> c = Class.forName(name, true, loader);
        addListener((LedgerListener) c.getDeclaredConstructor().newInstance());
        LOG.info("nativepool: ledger listener {} registered", name);
      } catch (ReflectiveOperationException | ClassCastException | LinkageError e) {
        String why =
            "nativepool: executor "
                + executorId
                + ": "
                + NativePoolConf.LEDGER_LISTENERS.key()
                + ": cannot make a LedgerListener of "
                + name
                + " ("
                + e
                + "); the ledger runs without it";
        LOG.error(why);
        failed.add(why);
      }
    }
    return failed;
  }

  /**
   * Checks the classes {@code names} without making one: each must be found by {@code loader}, be a
   * public, concrete {@link LedgerListener} and have a public no-argument constructor. The driver's
   * check at the application's start, so that a listener the executors cannot make fails the
   * application once instead of being left out on every executor.
   *
   * @throws IllegalArgumentException naming the key, the class and the rule, for the first class
   *     that fails
   */
  public static void checkListenerClasses(List<String> names, ClassLoader loader) {
    for (String name : names) {
      String why;
      try {
        Class<?> c = Class.forName(name, false, loader);
        if (!LedgerListener.class.isAssignableFrom(c)) {
          why = "does not implement " + LedgerListener.class.getName();
        } else if (!Modifier.isPublic(c.getModifiers())
            || Modifier.isAbstract(c.getModifiers())
            || c.isInterface()) {
          why = "is not a public concrete class";
        } else {
          c.getConstructor(); // public, no argument
          continue;
        }
      } catch (ClassNotFoundException | LinkageError e) {
        why = "not found on the driver's classpath (ship it with --jars, which puts it on the"
            + " driver's and the executors')";
      } catch (NoSuchMethodException e) {
        why = "has no public no-argument constructor";
      }
      throw new IllegalArgumentException(
          "nativepool: "
              + NativePoolConf.LEDGER_LISTENERS.key()
              + " = '"
              + String.join(",", names)
              + "': class "
              + name
              + " "
              + why
              + "; each must be a public class implementing "
              + LedgerListener.class.getName()
              + " with a public no-argument constructor");
    }
  }

  /**
   * Reports of the heap's growth ({@value LedgerReader#JVM_HEAP_AFTER_GC}) are analysed with
   * {@code holders} (null: the heap's growth is not reported), at most once per {@code
   * minIntervalMillis}: each analysis pauses the JVM for its path search.
   */
  public void setHeapHolders(HeapHolders holders, long minIntervalMillis) {
    this.heapHolders = holders;
    this.heapMinIntervalMillis = minIntervalMillis;
  }

  /** Adds a listener for crossings and growth reports. */
  public void addListener(LedgerListener l) {
    listeners.add(l);
  }

  /** The settings. */
  public LedgerSettings settings() {
    return settings;
  }

  /** The latest reading (null before the first). */
  public LedgerSnapshot latest() {
    return latest;
  }

  /** The recent readings, every one this ledger made, within the history's bounds. */
  public LedgerHistory history() {
    return history;
  }

  /**
   * Reads the ledger now, and updates the gauges' reading, the high-water marks and the thresholds
   * (a crossing notifies on this thread).
   */
  public LedgerSnapshot readNow() {
    return update(ledger.read());
  }

  /**
   * {@link #readNow()} from native figures the caller read once for every consumer of a poll (the
   * executor's gauges and this ledger).
   */
  public LedgerSnapshot readNow(ProcessStats process, ArrowProcessStats arrow) {
    return update(ledger.read(process, arrow));
  }

  private LedgerSnapshot update(LedgerSnapshot s) {
    List<LedgerCrossingEvent> crossed = new ArrayList<>();
    synchronized (this) {
      latest = s;
      history.add(s);
      Map<String, Long> f = s.figures();
      for (Map.Entry<String, Long> e : f.entrySet()) {
        peaks.merge(e.getKey(), e.getValue(), Math::max);
        intervalPeaks.merge(e.getKey(), e.getValue(), Math::max);
        if (gauges.add(e.getKey())) {
          String part = e.getKey();
          try {
            registry.register(GAUGE_PREFIX + part, (Gauge<Long>) () -> figure(part));
          } catch (IllegalArgumentException dup) {
            LOG.debug("nativepool: gauge {} already registered", GAUGE_PREFIX + part);
          }
        }
      }
      List<LedgerThreshold> th = settings.thresholds();
      for (int i = 0; i < th.size(); i++) {
        LedgerThreshold t = th.get(i);
        String part = t.part().equals(LedgerSettings.TOTAL) ? LedgerReader.RSS : t.part();
        if (!s.has(part) || (part.equals(LedgerReader.UNEXPLAINED) && s.rss() < 0)) {
          continue;
        }
        long v = s.get(part);
        long lower = (long) (t.level() * (1 - settings.hysteresis()));
        if (!above[i] && v >= t.level()) {
          above[i] = true;
          crossed.add(
              new LedgerCrossingEvent(executorId, s.timeMillis(), part, t.level(), true, v, lower));
        } else if (above[i] && v < lower) {
          above[i] = false;
          crossed.add(
              new LedgerCrossingEvent(
                  executorId, s.timeMillis(), part, t.level(), false, v, lower));
        }
      }
    }
    for (LedgerCrossingEvent c : crossed) {
      crossings.inc();
      if (c.isUp()) {
        LOG.warn(c.describe());
      } else {
        LOG.info(c.describe());
      }
      for (LedgerListener l : listeners) {
        try {
          l.onCrossing(c);
        } catch (RuntimeException e) {
          LOG.warn("nativepool: ledger listener {} failed on {}", l, c, e);
        }
      }
      toDriver.accept(c);
    }
    return s;
  }

  /** The latest reading's figure of {@code part}; -1 if none. */
  private long figure(String part) {
    LedgerSnapshot s = latest;
    return s == null ? -1 : s.get(part);
  }

  /**
   * A task ended: reads the ledger and gives the reading to the growth detector; returns the
   * reports it made (each already logged, counted, sent and given to the listeners).
   */
  public List<GrowthReportEvent> taskBoundary() {
    return taskBoundary(1);
  }

  /**
   * {@code tasks} tasks ended since the last reading: one reading counts for each of them (the
   * reporting thread coalesces a burst of task ends into one reading). Returns the reports.
   */
  public List<GrowthReportEvent> taskBoundary(int tasks) {
    if (tasks <= 0) {
      return List.of();
    }
    LedgerSnapshot s = readNow();
    Map<String, Long> watched = new LinkedHashMap<>();
    for (Map.Entry<String, Long> e : s.figures().entrySet()) {
      if (watched(s, e.getKey())) {
        watched.put(e.getKey(), e.getValue());
      }
    }
    if (watched.containsKey(LedgerReader.UNEXPLAINED)) {
      watched.put(LedgerReader.UNEXPLAINED, conservativeUnexplained(s));
    }
    List<GrowthDetector.Growth> found;
    long seen;
    synchronized (detector) {
      found = new ArrayList<>();
      for (int i = 0; i < tasks; i++) {
        found.addAll(detector.sample(watched, s.timeMillis()));
      }
      seen = detector.samples();
    }
    List<GrowthReportEvent> out = new ArrayList<>();
    for (GrowthDetector.Growth g : found) {
      List<String> named = ownedByNative(g.part()) ? owners.apply(OWNERS_PER_REPORT) : List.of();
      HeapHoldersEvent holders = null;
      if (heapPart(g.part())) {
        HeapHolders h = heapHolders;
        if (h == null) {
          continue; // nothing tells a leak from garbage not yet collected
        }
        if (seen < nextHeapAnalysis || s.timeMillis() < nextHeapAnalysisMillis) {
          withdraw(g.part()); // analysed a moment ago: the garbage then may be collected by now
          continue;
        }
        holders = h.analyze(executorId, "growth of " + g.part(), g.sinceMillis());
        if (!holders.confirmsGrowth(g.toBytes() - g.fromBytes())) {
          LOG.info(unconfirmed(executorId, g, holders));
          withdraw(g.part());
          nextHeapAnalysis = seen + settings.growthWindow();
          nextHeapAnalysisMillis = s.timeMillis() + HEAP_REANALYSIS_MILLIS;
          continue;
        }
        nextHeapAnalysisMillis = s.timeMillis() + heapMinIntervalMillis;
      }
      GrowthReportEvent r =
          new GrowthReportEvent(
              executorId,
              s.timeMillis(),
              g.part(),
              g.fromBytes(),
              g.toBytes(),
              g.tasks(),
              seen,
              named,
              holders == null ? null : holders.getHolders(),
              holders == null ? null : holders.getNote(),
              GrowthReportEvent.TASK);
      growthReports.inc();
      LOG.warn(r.describe());
      for (LedgerListener l : listeners) {
        try {
          l.onGrowth(r);
        } catch (RuntimeException e) {
          LOG.warn("nativepool: ledger listener {} failed on {}", l, r, e);
        }
      }
      toDriver.accept(r);
      out.add(r);
    }
    return out;
  }

  private void withdraw(String part) {
    synchronized (detector) {
      detector.withdraw(part);
    }
  }

  /**
   * The INFO line of a rise of the heap that its analysis did not confirm: what grew was mostly
   * garbage the collections had not reached yet (objects promoted by young collections, which the
   * old generation's next collection frees), so no report is made.
   */
  static String unconfirmed(String executorId, GrowthDetector.Growth g, HeapHoldersEvent h) {
    return "nativepool: "
        + (executorId.equals(GrowthReportEvent.DRIVER) ? "driver" : "executor " + executorId)
        + ": "
        + g.part()
        + " rose from "
        + Bytes.format(g.fromBytes())
        + " to "
        + Bytes.format(g.toBytes())
        + ", but the heap's samples since show garbage not yet collected, not a leak: "
        + h.getNote();
  }

  /** Whether {@code part} is the heap's, whose growth reports name the heap's holders. */
  static boolean heapPart(String part) {
    return part.equals(LedgerReader.JVM_HEAP_AFTER_GC) || part.equals(LedgerReader.JVM_HEAP_USED);
  }

  /**
   * Whether the detector watches {@code part} (the heap after collections only with a recording of
   * the heap's holders: a rise is reported when their analysis confirms it): everything but the
   * totals' RSS (its growth shows in
   * a part or in the unexplained remainder), the JVM heap's resident and committed bytes (bounded
   * by {@code -Xmx}) and the detail parts, except the heap after collections ({@value
   * LedgerReader#JVM_HEAP_AFTER_GC}), whose floor rises when the heap leaks.
   */
  private static boolean watched(LedgerSnapshot s, String part) {
    if (part.equals(LedgerReader.JVM_HEAP_AFTER_GC)) {
      return true; // reported only when the heap holders confirm it (taskBoundary)
    }
    if (part.equals(LedgerReader.RSS)
        || part.equals(LedgerReader.JVM_HEAP_COMMITTED)
        || part.equals(LedgerReader.JVM_HEAP_RESIDENT)
        || part.equals(LedgerReader.NATIVE_SLACK)) {
      return false;
    }
    return s.kind(part) != LedgerSnapshot.Kind.DETAIL;
  }

  /**
   * The unexplained remainder with the heap counted as committed rather than resident: what the
   * detector watches. A heap reading is reused for a while ({@link HeapResidency}), and heap pages
   * touched in between would read as unexplained growth over several short windows; counted as
   * committed, touching the heap moves nothing, and committing more heap counts as heap.
   */
  static long conservativeUnexplained(LedgerSnapshot s) {
    long u = s.unexplained();
    if (s.kind(LedgerReader.JVM_HEAP_RESIDENT) == LedgerSnapshot.Kind.RESIDENT) {
      long untouched =
          s.get(LedgerReader.JVM_HEAP_COMMITTED) - s.get(LedgerReader.JVM_HEAP_RESIDENT);
      u -= Math.max(0, untouched);
    }
    return u;
  }

  /** Whether the native owners explain growth of {@code part}. */
  private static boolean ownedByNative(String part) {
    return part.startsWith("native.")
        || part.startsWith("go.")
        || part.startsWith("leaked")
        || part.equals(LedgerReader.ARROW_JAVA)
        || part.equals(LedgerReader.MALLOC_RETAINED)
        || part.equals(LedgerReader.UNEXPLAINED);
  }

  /**
   * A task pool closed: its peak reserved bytes and its consumers' peaks (consumer name → bytes)
   * count in the high-water marks. Any thread.
   */
  @Override
  public void poolClosed(long taskAttemptId, long peak, Map<String, Long> consumers) {
    synchronized (this) {
      if (peak > taskPoolPeak) {
        taskPoolPeak = peak;
        taskPoolPeakTask = taskAttemptId;
      }
      intervalTaskPoolPeak = Math.max(intervalTaskPoolPeak, peak);
      for (Map.Entry<String, Long> e : consumers.entrySet()) {
        keepPeak(consumerPeaks, e.getKey(), e.getValue());
        keepPeak(intervalConsumerPeaks, e.getKey(), e.getValue());
      }
    }
  }

  /**
   * Raises {@code name}'s peak in {@code peaks} to {@code bytes}, keeping at most {@value
   * #CONSUMER_PEAKS_KEPT} names: the largest peaks.
   */
  public static void keepPeak(Map<String, Long> peaks, String name, long bytes) {
    Long old = peaks.get(name);
    if (old != null) {
      if (bytes > old) {
        peaks.put(name, bytes);
      }
      return;
    }
    if (peaks.size() >= CONSUMER_PEAKS_KEPT) {
      Map.Entry<String, Long> least = null;
      for (Map.Entry<String, Long> e : peaks.entrySet()) {
        if (least == null || e.getValue() < least.getValue()) {
          least = e;
        }
      }
      if (least.getValue() >= bytes) {
        return;
      }
      peaks.remove(least.getKey());
    }
    peaks.put(name, bytes);
  }

  /**
   * The ledger's part of the next sample to the driver, and a new interval: the latest reading,
   * each part's highest reading since the previous call, the highest task pool that closed since,
   * and the largest {@value #CONSUMERS_PER_SAMPLE} consumer peaks of those pools.
   */
  public synchronized LedgerSample takeSample() {
    LedgerSnapshot s = latest;
    Map<String, Long> consumers = new LinkedHashMap<>();
    intervalConsumerPeaks.entrySet().stream()
        .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
        .limit(CONSUMERS_PER_SAMPLE)
        .forEach(e -> consumers.put(e.getKey(), e.getValue()));
    LedgerSample out =
        new LedgerSample(
            s == null ? Map.of() : s.figures(), intervalPeaks, intervalTaskPoolPeak, consumers);
    intervalPeaks.clear();
    intervalTaskPoolPeak = 0;
    intervalConsumerPeaks.clear();
    return out;
  }

  /** Each figure's highest value since the last {@link #resetPeaks()} (totals included). */
  public synchronized Map<String, Long> peaks() {
    return Collections.unmodifiableMap(new LinkedHashMap<>(peaks));
  }

  /** The highest peak of a task pool closed since the last {@link #resetPeaks()}; 0 if none. */
  public synchronized long taskPoolPeak() {
    return taskPoolPeak;
  }

  /** The task attempt of {@link #taskPoolPeak()}; -1 if none. */
  public synchronized long taskPoolPeakTask() {
    return taskPoolPeakTask;
  }

  /**
   * Each consumer's highest reserved bytes in a pool closed since the last reset, by name: the
   * {@value #CONSUMER_PEAKS_KEPT} largest.
   */
  public synchronized Map<String, Long> consumerPeaks() {
    return Collections.unmodifiableMap(new LinkedHashMap<>(consumerPeaks));
  }

  /** Starts the high-water marks again (e.g. at a stage's start). */
  public synchronized void resetPeaks() {
    peaks.clear();
    taskPoolPeak = 0;
    taskPoolPeakTask = -1;
    consumerPeaks.clear();
    LedgerSnapshot s = latest;
    if (s != null) {
      peaks.putAll(s.figures());
    }
  }

  /** Task boundaries the growth detector has seen. */
  public long taskBoundaries() {
    synchronized (detector) {
      return detector.samples();
    }
  }

  @Override
  public String toString() {
    return "ExecutorLedger(executor=" + executorId + ", " + settings + ")";
  }
}
