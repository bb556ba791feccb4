package org.nativepool.spark.example;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.pmod;
import static org.apache.spark.sql.functions.sum;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.api.java.function.ForeachPartitionFunction;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.util.CollectionAccumulator;
import org.nativepool.spark.NativePoolPlugin;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.jni.GuardEpisode;
import org.nativepool.spark.jni.LibraryLoader;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.PoolStat;
import org.nativepool.spark.jni.ProcessStats;
import org.nativepool.spark.ledger.ExecutorLedger;

/**
 * The project's main demo ({@code make example}; {@code examples/spark/README.md}): a Go external
 * sort inside Spark 4.1 tasks, fed and drained through JNI and the Arrow C Data Interface, next to
 * a Spark hash aggregation in the same tasks, on a small off-heap budget, so that memory is taken
 * back in both directions. It prints a report and writes {@code samples.csv} and {@code ledger.csv}
 * (the executor memory ledger, {@link LedgerSampler}; both for {@code examples/chart}) and {@code
 * report.properties} (the same figures, for tests) under {@code --out}.
 *
 * <p>The job: {@code spark.range(rows, partitions)} → {@link SortTask} (each row once as generated,
 * {@code src = 0}, once as sorted by Go, {@code src = 1}) → {@code groupBy(src, pmod(key, G))
 * .agg(count, sum(payload))} → {@code groupBy(src)} totals. The partial aggregation runs in the
 * sort's task and takes Tungsten off-heap pages from the same {@code TaskMemoryManager} as the
 * native pool. Correct means: each task's sorted rows are in order and have the fingerprint of its
 * generated rows, and Spark's totals for both sources agree (rows, payload sum, groups).
 *
 * <p>Measured: peak RSS growth over a baseline taken after a warm-up run, against the peak of what
 * Spark believes the process holds off-heap; {@code allocated ≤ reserved} is checked by the Go side
 * after every native call and at every sample the demo takes (every 50 ms, or only at the measured
 * run's start and end with {@code --sampling off}). The JVM should run with {@code -Xms} equal to
 * {@code -Xmx} and {@code -XX:+AlwaysPreTouch} ({@code examples/spark/run.sh} does), so heap growth
 * is not counted as growth.
 */
public final class SortDemo {
  private SortDemo() {}

  /**
   * Runs the demo; exits 0 if the result is correct and the books held, 1 otherwise, 2 on usage.
   */
  public static void main(String[] args) throws IOException {
    if (java.util.Arrays.asList(args).contains("--help")
        || java.util.Arrays.asList(args).contains("-h")) {
      System.out.println(DemoConfig.USAGE); // asked for: not an error
      return;
    }
    DemoConfig cfg;
    try {
      cfg = DemoConfig.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println(e.getMessage());
      System.exit(2);
      return;
    }
    Result r = run(cfg, System.out);
    System.exit(r.ok() ? 0 : 1);
  }

  /** What {@link #run} measured; {@link #properties()} is report.properties. */
  public static final class Result {
    final Properties props = new Properties();

    /** Correct output, no allocated > reserved, no leak. */
    public boolean ok() {
      return Boolean.parseBoolean(props.getProperty("ok"));
    }

    /** Every figure of the report by name (a copy). */
    public Properties properties() {
      Properties p = new Properties();
      p.putAll(props);
      return p;
    }

    void put(String k, Object v) {
      props.setProperty(k, String.valueOf(v));
    }
  }

  /**
   * Runs the demo in this JVM: loads the library, starts a local SparkSession with the plugin, runs
   * the warm-up and the measured job, prints the report to {@code out} and writes the files. The
   * library must not have been loaded from another file in this JVM.
   */
  public static Result run(DemoConfig cfg, PrintStream out) throws IOException {
    Path dir = Path.of(cfg.outDir);
    Files.createDirectories(dir);
    Files.createDirectories(Path.of(cfg.tempDir()));

    // The Go runtime's own cost: RSS growth from loading the library and one empty native call.
    long rssBeforeLoad = MemorySampler.readRss();
    LibraryLoader.ensureLoaded(cfg.library);
    SortBridge.ensureLoaded();
    long[] first = SortBridge.sample();
    long goLoadRss = MemorySampler.readRss() - rssBeforeLoad;
    long goRuntimeAtLoad = first[SortBridge.SAMPLE_GO_RUNTIME];

    SparkSession spark =
        SparkSession.builder()
            .appName("nativepool-sortdemo")
            .config("spark.metrics.namespace", "sortdemo")
            .master("local[" + cfg.threads + "]")
            .config("spark.plugins", NativePoolPlugin.class.getName())
            .config(NativePoolConf.LIBRARY.key(), cfg.library)
            .config(NativePoolConf.POOL.key(), cfg.pool.configName())
            .config(NativePoolConf.CHUNK_SIZE.key(), Long.toString(cfg.chunk))
            .config(
                NativePoolConf.POOL_SIZE.key(),
                Long.toString(cfg.poolSize > 0 ? cfg.poolSize : cfg.budget))
            .config(NativePoolConf.GUARD_ENABLED.key(), cfg.guard)
            .config("spark.memory.offHeap.enabled", "true")
            .config("spark.memory.offHeap.size", Long.toString(cfg.budget))
            .config("spark.unsafe.exceptionOnMemoryLeak", "true")
            // Off unless the JVM says otherwise: bench/watch-cost.sh scrapes the UI's Prometheus
            // endpoints (-Dspark.ui.enabled=true, with the metrics settings as -D too).
            .config("spark.ui.enabled", System.getProperty("spark.ui.enabled", "false"))
            .config("spark.sql.shuffle.partitions", Integer.toString(cfg.threads))
            .config("spark.sql.adaptive.enabled", "false")
            // Spark merges all of a task's aggregation spill files at once, with a reader per
            // file; read-ahead would give each reader two more 1 MiB heap buffers and a thread
            // (README, "Scale"). The rows per task (DemoConfig.partitionsFor) bound the files.
            .config("spark.unsafe.sorter.spill.read.ahead.enabled", "false")
            .config("spark.executor.processTreeMetrics.enabled", "true")
            .config("spark.driver.host", "localhost")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.local.dir", Path.of(cfg.tempDir(), "spark").toString())
            .getOrCreate();
    // The native engines spill under tempDir: the pod guard writes their run files back (and
    // Spark's, under spark.local.dir, which the plugin adds) during an episode with dirty pages.
    Natives.addSpillDir(Path.of(cfg.tempDir()).toAbsolutePath().toString());
    // The idle baseline: the JVM with Spark started and the library loaded, before any job.
    long idleRss = MemorySampler.readRss();
    Result r = new Result();
    try {
      TaskMetricsListener metrics = new TaskMetricsListener();
      spark.sparkContext().addSparkListener(metrics);

      if (cfg.warmupRows > 0) {
        out.printf(
            Locale.ROOT, "sortdemo: warm-up run of %,d rows (not measured)...%n", cfg.warmupRows);
        Job warm = runJob(spark, cfg.withRows(cfg.warmupRows));
        if (!warm.correct()) {
          out.println("sortdemo: the warm-up run was not correct: " + warm.problem);
        }
      }
      metrics.clear();
      ProcessStats before = Natives.processStats();
      long[] sampleBefore = SortBridge.sample();
      // The baseline, and how much RSS moves by itself with no job: the spread of a quiet second.
      long[] quiet = quietRss(QUIET_READS, QUIET_PERIOD_MS);
      long baseline = quiet[2];
      long baselineVariation = quiet[1] - quiet[0];
      // The kernel's peaks from here on: VmHWM, and the memory cgroup's if the JVM is in one.
      boolean hwmReset = TruePeaks.resetHighWaterMark();
      TruePeaks.Cgroup cgroup = TruePeaks.cgroup();
      boolean cgroupReset = cgroup != null && cgroup.resetPeak();
      long cgroupBaseline = cgroup == null ? -1 : cgroup.usage();
      long cgroupAnonBaseline = cgroup == null ? -1 : cgroup.anon();
      long directBaseline = directBuffersUsed();
      out.printf(
          Locale.ROOT,
          "sortdemo: %,d rows, pool %s, budget %s, chunk %s, %d tasks on local[%d]...%n",
          cfg.rows,
          cfg.pool,
          size(cfg.budget),
          size(cfg.chunk),
          cfg.partitions,
          cfg.threads);
      // The executor plugin's ledger (local mode: in this JVM): its high-water marks and consumer
      // peaks start again here, so that the report's are the measured run's.
      ExecutorLedger executorLedger = ExecutorLedger.current();
      if (executorLedger != null) {
        executorLedger.readNow();
        executorLedger.resetPeaks();
      }
      long statsCalls0 = Natives.processStatsCalls();
      long arrowStatsCalls0 = Natives.processArrowStatsCalls();
      long t0 = System.nanoTime();
      long t0Millis = System.currentTimeMillis();
      Job job;
      // The burst waits for the native sort to hold memory, so that it overlaps native memory.
      Burst burst = Burst.start(cfg.burst, t0, () -> Natives.processStats().held(), 1);
      MemorySampler sampler;
      LedgerSampler ledger;
      try {
        sampler =
            MemorySampler.start(
                baseline,
                sampleBefore[SortBridge.SAMPLE_GO_RUNTIME],
                cgroup,
                burst::held,
                dir.resolve("samples.csv"),
                cfg.sampling ? MemorySampler.PERIOD_MS : Long.MAX_VALUE);
      } catch (IOException | RuntimeException e) {
        burst.close();
        throw e;
      }
      try {
        ledger =
            LedgerSampler.start(
                executorLedger,
                t0,
                dir.resolve("ledger.csv"),
                cfg.sampling ? LedgerSampler.PERIOD_MS : Long.MAX_VALUE);
      } catch (IOException | RuntimeException e) {
        sampler.close();
        burst.close();
        throw e;
      }
      try {
        job = runJob(spark, cfg);
      } finally {
        try {
          burst.close();
          ledger.close();
        } finally {
          sampler.close();
        }
      }
      List<GuardEpisode> episodes = new ArrayList<>();
      for (GuardEpisode e : Natives.guardEpisodes()) {
        if (e.startMillis() >= t0Millis) {
          episodes.add(e);
        }
      }
      long elapsedMs = (System.nanoTime() - t0) / 1_000_000;
      // The stats natives' calls in the measured run: the plugin's polls, and the demo's samplers'
      // (two each with --sampling off).
      r.put("processStatsCalls", Natives.processStatsCalls() - statsCalls0);
      r.put("processArrowStatsCalls", Natives.processArrowStatsCalls() - arrowStatsCalls0);
      ProcessStats after = Natives.processStats();
      long[] sampleAfter = SortBridge.sample();
      Peaks peaks =
          new Peaks(
              idleRss,
              TruePeaks.highWaterMark(),
              hwmReset,
              cgroup,
              cgroup == null ? -1 : cgroup.peak(),
              cgroupReset,
              cgroupBaseline,
              cgroupAnonBaseline,
              directBaseline);

      report(
          r,
          cfg,
          job,
          metrics,
          sampler,
          before,
          after,
          sampleBefore,
          sampleAfter,
          baseline,
          baselineVariation,
          goLoadRss,
          goRuntimeAtLoad,
          elapsedMs,
          peaks,
          ledger,
          executorLedger,
          burst,
          episodes);
      if (cfg.idleSeconds > 0) {
        out.printf(
            Locale.ROOT,
            "sortdemo: idle for %d s (--idle), the SparkSession up%n",
            cfg.idleSeconds);
        out.flush();
        try {
          Thread.sleep(cfg.idleSeconds * 1000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    } finally {
      spark.stop();
    }
    String coloured = (String) r.props.remove("coloured");
    try (OutputStream o = Files.newOutputStream(dir.resolve("report.properties"))) {
      r.props.store(o, "nativepool sortdemo");
    }
    out.print(
        coloured == null ? r.props.getProperty("text", "") : forOutput(coloured, colour()));
    return r;
  }

  /** The kernel's peaks of the measured run, and the idle baseline. */
  record Peaks(
      long idleRss,
      long hwm,
      boolean hwmReset,
      TruePeaks.Cgroup cgroup,
      long cgroupPeak,
      boolean cgroupReset,
      long cgroupBaseline,
      long cgroupAnonBaseline,
      long directBaseline) {}

  /** One job's outcome. */
  static final class Job {
    final List<TaskOutcome> tasks;
    final List<Row> totals;
    final String problem;

    Job(List<TaskOutcome> tasks, List<Row> totals, String problem) {
      this.tasks = tasks;
      this.totals = totals;
      this.problem = problem;
    }

    boolean correct() {
      return problem == null;
    }
  }

  /** Runs the job (the sort + aggregation, or the sort alone) and checks its result. */
  static Job runJob(SparkSession spark, DemoConfig cfg) {
    CollectionAccumulator<TaskOutcome> acc =
        spark.sparkContext().collectionAccumulator("nativesort outcomes");
    Dataset<Long> ids = spark.range(0, cfg.rows, 1, cfg.partitions);
    Dataset<Row> rows =
        ids.mapPartitions(new SortTask(cfg, acc), Encoders.row(SortTask.ROW_SCHEMA));
    if (cfg.sortOnly()) {
      // The sorted rows were checked by SortTask's iterator (order, fingerprint); drop them.
      rows.foreachPartition((ForeachPartitionFunction<Row>) SortDemo::drain);
      List<TaskOutcome> tasks = new ArrayList<>(acc.value());
      return new Job(tasks, List.of(), check(cfg, tasks, List.of()));
    }
    Dataset<Row> groups =
        rows.groupBy(col("src"), pmod(col("key"), lit(cfg.groups)).as("g"))
            .agg(count(lit(1)).as("n"), sum(col("payload")).as("s"));
    List<Row> totals =
        groups
            .groupBy(col("src"))
            .agg(sum(col("n")).as("rows"), sum(col("s")).as("payloads"), count(lit(1)).as("groups"))
            .orderBy(col("src"))
            .collectAsList();
    List<TaskOutcome> tasks = new ArrayList<>(acc.value());
    return new Job(tasks, totals, check(cfg, tasks, totals));
  }

  /** The sort-only job's sink: consumes a partition's rows. */
  private static void drain(Iterator<Row> it) {
    while (it.hasNext()) {
      it.next();
    }
  }

  /** Null if the job's output is right, else what is wrong. */
  static String check(DemoConfig cfg, List<TaskOutcome> tasks, List<Row> totals) {
    if (tasks.size() != cfg.partitions) {
      return tasks.size() + " sort tasks reported, expected " + cfg.partitions;
    }
    long rowsIn = 0;
    for (TaskOutcome t : tasks) {
      if (!t.correct()) {
        return "task "
            + t.taskAttemptId
            + " (partition "
            + t.partition
            + "): "
            + (t.out.disorder() > 0 ? t.out.disorder() + " rows out of order; " : "")
            + "generated "
            + t.in
            + ", sorted "
            + t.out;
      }
      rowsIn += t.in.rows();
    }
    if (rowsIn != cfg.rows) {
      return "the tasks generated " + rowsIn + " rows, expected " + cfg.rows;
    }
    if (cfg.sortOnly()) {
      return null; // no aggregation: each task's order and fingerprint were checked above
    }
    if (cfg.rows == 0) {
      return totals.isEmpty() ? null : "Spark's totals of no rows: " + totals;
    }
    if (totals.size() != 2) {
      return "Spark's totals have " + totals.size() + " sources, expected 2: " + totals;
    }
    Row gen = totals.get(0);
    Row sorted = totals.get(1);
    if (gen.getLong(1) != cfg.rows
        || sorted.getLong(1) != cfg.rows
        || gen.getLong(2) != sorted.getLong(2)
        || gen.getLong(3) != sorted.getLong(3)) {
      return "Spark's aggregation of the generated rows "
          + gen
          + " differs from the sorted "
          + sorted;
    }
    return null;
  }

  /** Spark's task metrics of the measured job, by task attempt id. */
  static final class TaskMetricsListener extends SparkListener {
    /** taskId → {memoryBytesSpilled, diskBytesSpilled, peakOffHeapExecutionMemory, stageId}. */
    final Map<Long, long[]> tasks = new ConcurrentHashMap<>();

    @Override
    public void onTaskEnd(SparkListenerTaskEnd e) {
      if (e.taskMetrics() == null) {
        return;
      }
      tasks.put(
          e.taskInfo().taskId(),
          new long[] {
            e.taskMetrics().memoryBytesSpilled(),
            e.taskMetrics().diskBytesSpilled(),
            e.taskMetrics().peakOffHeapExecutionMemory(),
            e.stageId()
          });
    }

    void clear() {
      tasks.clear();
    }
  }

  /**
   * The report's words for what the demo's process samples were, so that each line says what was
   * measured: with {@code --sampling on}, a sample every {@link MemorySampler#PERIOD_MS} ms; with
   * {@code off}, only the two at the measured run's start and end.
   *
   * @param checks when the Go side checked {@code allocated ≤ reserved}: after every native call of
   *     a sorter, and at every sample
   * @param peak how the peak RSS growth was sampled
   * @param worst the sample that the untracked figure's worst case comes from
   */
  record SampleWords(String checks, String peak, String worst) {
    static SampleWords of(boolean sampling) {
      if (!sampling) {
        return new SampleWords(
            "after every native call, and at the run's start and end samples (--sampling off)",
            "sampled at the run's start and end only (--sampling off)",
            "the worse of the run's start and end samples");
      }
      long ms = MemorySampler.PERIOD_MS;
      return new SampleWords(
          "after every native call and at every " + ms + " ms sample",
          "sampled every " + ms + " ms",
          "the worst " + ms + " ms sample");
    }
  }

  private static void report(
      Result r,
      DemoConfig cfg,
      Job job,
      TaskMetricsListener metrics,
      MemorySampler smp,
      ProcessStats before,
      ProcessStats after,
      long[] sampleBefore,
      long[] sampleAfter,
      long baseline,
      long baselineVariation,
      long goLoadRss,
      long goRuntimeAtLoad,
      long elapsedMs,
      Peaks peaks,
      LedgerSampler ledger,
      ExecutorLedger executorLedger,
      Burst burst,
      List<GuardEpisode> episodes) {
    // Native figures summed over the sort tasks.
    long rowsIn = 0, rowsOut = 0, self = 0, requested = 0, requests = 0, spilledBytes = 0;
    long runs = 0, batchesIn = 0, batchesOut = 0, peakSorterReserved = 0, peakAllocated = 0;
    long peakSlack = 0;
    long maxFanIn = 0, mergeLevels = 0;
    long poolPeak = 0,
        acquires = 0,
        releases = 0,
        reclaims = 0,
        reclaimedBytes = 0,
        shortGrants = 0;
    // Spark's figures of the same tasks, and of the whole job.
    long sparkMemSpilled = 0, sparkDiskSpilled = 0, sparkSpillingTasks = 0, peakTaskOffHeap = 0;
    for (TaskOutcome t : job.tasks) {
      long[] s = t.sort;
      rowsIn += s[SortStat.ROWS_IN.ordinal()];
      rowsOut += s[SortStat.ROWS_OUT.ordinal()];
      self += s[SortStat.SELF_SPILLS.ordinal()];
      requested += s[SortStat.REQUESTED_SPILLS.ordinal()];
      requests += s[SortStat.SPILL_REQUESTS.ordinal()];
      spilledBytes += s[SortStat.SPILLED_BYTES.ordinal()];
      runs += s[SortStat.RUNS.ordinal()];
      maxFanIn = Math.max(maxFanIn, s[SortStat.MAX_FAN_IN.ordinal()]);
      mergeLevels = Math.max(mergeLevels, s[SortStat.MERGE_LEVELS.ordinal()]);
      batchesIn += s[SortStat.BATCHES_IN.ordinal()];
      batchesOut += s[SortStat.BATCHES_OUT.ordinal()];
      peakSorterReserved = Math.max(peakSorterReserved, s[SortStat.PEAK_RESERVED.ordinal()]);
      peakSlack = Math.max(peakSlack, s[SortStat.PEAK_SLACK.ordinal()]);
      peakAllocated = Math.max(peakAllocated, s[SortStat.PEAK_ALLOCATED.ordinal()]);
      long[] p = t.pool;
      poolPeak = Math.max(poolPeak, p[PoolStat.PEAK.ordinal()]);
      acquires += p[PoolStat.ACQUIRE_CALLS.ordinal()];
      releases += p[PoolStat.RELEASE_CALLS.ordinal()];
      reclaims += p[PoolStat.SPILL_REQUESTS.ordinal()];
      reclaimedBytes += p[PoolStat.SPILL_BYTES_FREED.ordinal()];
      shortGrants += p[PoolStat.SHORT_GRANTS.ordinal()];
      long[] m = metrics.tasks.get(t.taskAttemptId);
      if (m != null) {
        sparkMemSpilled += m[0];
        sparkDiskSpilled += m[1];
        sparkSpillingTasks += m[0] > 0 ? 1 : 0;
        peakTaskOffHeap = Math.max(peakTaskOffHeap, m[2]);
      }
    }
    long jobMemSpilled = 0;
    for (long[] m : metrics.tasks.values()) {
      jobMemSpilled += m[0];
    }
    long checks = sampleAfter[SortBridge.SAMPLE_CHECKS] - sampleBefore[SortBridge.SAMPLE_CHECKS];
    long violations =
        sampleAfter[SortBridge.SAMPLE_VIOLATIONS]
            - sampleBefore[SortBridge.SAMPLE_VIOLATIONS]
            + smp.sumViolations.get();
    long leaks = after.leaks() - before.leaks();
    long upcalls = after.upstreamCalls() - before.upstreamCalls();
    long growth = smp.peakRss.get() - baseline;
    long goGrowth =
        Math.max(0, smp.peakGoRuntime.get() - sampleBefore[SortBridge.SAMPLE_GO_RUNTIME]);
    long sparkPeak = smp.peakSparkOffHeap.get();
    double ratio = sparkPeak > 0 ? (double) growth / sparkPeak : Double.NaN;
    double ratioNet = sparkPeak > 0 ? (double) (growth - goGrowth) / sparkPeak : Double.NaN;
    boolean ok = job.correct() && violations == 0 && leaks == 0;
    String threshold = System.getenv("MALLOC_MMAP_THRESHOLD_");
    String mallocEnv = mallocEnvironment();
    // The true peak (VmHWM, kept by the kernel) against what was reserved plus the baseline.
    long goPeakGrowth =
        Math.max(
            0, sampleAfter[SortBridge.SAMPLE_GO_PEAK] - sampleBefore[SortBridge.SAMPLE_GO_RUNTIME]);
    // The kernel raises VmHWM when it unmaps memory, not when memory goes back by madvise (as
    // the JVM's GC and the Go runtime return it), so a peak followed by such a drop can be missed:
    // the true peak is the larger of VmHWM and the highest sample.
    long truePeak = Math.max(peaks.hwm(), smp.peakRss.get());
    long hwmGrowth = truePeak - baseline;
    long over = truePeak - (baseline + sparkPeak);
    Noise noise = new Noise(goPeakGrowth, smp.mallocRetainedGrowth(), baselineVariation);
    boolean exceeds = over > noise.total();
    long untrackedBound = Math.max(0, hwmGrowth - sparkPeak - goPeakGrowth);
    long untrackedSampled = Math.max(0, smp.peakUntracked.get());
    double hwmRatio = sparkPeak > 0 ? (double) hwmGrowth / sparkPeak : Double.NaN;
    long directBaseline = peaks.directBaseline();

    r.put("ok", ok);
    r.put("correct", job.correct());
    r.put("problem", job.problem == null ? "" : job.problem);
    r.put("job", cfg.job);
    r.put("mallocRetainedAtUntrackedPeak", smp.mallocRetainedAtUntrackedPeak);
    r.put("peakMallocRetained", smp.peakMallocRetained.get());
    r.put("rows", cfg.rows);
    r.put("rowsIn", rowsIn);
    r.put("rowsOut", rowsOut);
    r.put("nativeSelfSpills", self);
    r.put("nativeRequestedSpills", requested);
    r.put("nativeSpillRequests", requests);
    r.put("nativeSpilledBytes", spilledBytes);
    r.put("nativeRuns", runs);
    r.put("sparkReclaimCalls", reclaims);
    r.put("sparkReclaimedBytes", reclaimedBytes);
    r.put("sparkMemoryBytesSpilled", sparkMemSpilled);
    r.put("sparkDiskBytesSpilled", sparkDiskSpilled);
    r.put("sparkSpillingTasks", sparkSpillingTasks);
    r.put("sparkJobMemoryBytesSpilled", jobMemSpilled);
    r.put("peakSparkOffHeap", sparkPeak);
    r.put("peakTaskOffHeap", peakTaskOffHeap);
    r.put("peakNativeReserved", smp.peakNativeReserved.get());
    r.put("peakNativeHeld", smp.peakNativeHeld.get());
    r.put("peakTaskPoolReserved", poolPeak);
    r.put("peakSorterReserved", peakSorterReserved);
    r.put("peakSorterSlack", peakSlack);
    r.put("peakAllocated", peakAllocated);
    r.put("peakAllocatedSampled", smp.peakAllocated.get());
    r.put("baselineRss", baseline);
    r.put("mallocMmapThreshold", threshold == null ? "" : threshold);
    r.put("mallocEnvironment", mallocEnv);
    r.put("partitions", cfg.partitions);
    r.put("idleRss", peaks.idleRss());
    r.put("peakRssHwm", truePeak);
    r.put("vmHwm", peaks.hwm());
    r.put("hwmReset", peaks.hwmReset());
    r.put("hwmGrowth", hwmGrowth);
    r.put("hwmRatio", String.format(Locale.ROOT, "%.3f", hwmRatio));
    r.put("overReservedPlusBaseline", Math.max(0, over));
    r.put("noise", noise.total());
    r.put("noiseGoRuntime", noise.goRuntime());
    r.put("noiseMallocRetained", noise.mallocRetained());
    r.put("noiseBaselineVariation", noise.baselineVariation());
    r.put("exceedsReserved", exceeds);
    r.put("goRuntimePeak", sampleAfter[SortBridge.SAMPLE_GO_PEAK]);
    r.put("goRuntimePeakGrowth", goPeakGrowth);
    r.put("goRuntimeMapped", sampleAfter[SortBridge.SAMPLE_GO_MAPPED]);
    r.put("jvmUntracked", untrackedBound);
    r.put("jvmUntrackedSampled", untrackedSampled);
    r.put("directBaseline", directBaseline);
    r.put("peakDirect", smp.peakDirect.get());
    r.put("cgroup", peaks.cgroup() == null ? "" : peaks.cgroup().path());
    r.put("cgroupPeak", peaks.cgroupPeak());
    r.put("cgroupPeakReset", peaks.cgroupReset());
    r.put("cgroupBaseline", peaks.cgroupBaseline());
    r.put("cgroupAnonBaseline", peaks.cgroupAnonBaseline());
    r.put("cgroupPeakAnon", smp.peakCgroupAnon.get());
    r.put("cgroupLimit", peaks.cgroup() == null ? -1 : peaks.cgroup().limit());
    r.put("nativeMaxFanIn", maxFanIn);
    r.put("nativeMergeLevels", mergeLevels);
    r.put("peakRss", smp.peakRss.get());
    r.put("rssGrowth", growth);
    r.put("goLoadRss", goLoadRss);
    r.put("goRuntimeAtLoad", goRuntimeAtLoad);
    r.put("goRuntimeGrowth", goGrowth);
    r.put("ratio", String.format(Locale.ROOT, "%.3f", ratio));
    r.put("ratioNetOfGo", String.format(Locale.ROOT, "%.3f", ratioNet));
    r.put("checks", checks);
    r.put("violations", violations);
    r.put("leaks", leaks);
    r.put("upcalls", upcalls);
    r.put("acquireCalls", acquires);
    r.put("releaseCalls", releases);
    r.put("shortGrants", shortGrants);
    r.put("samples", smp.samples.get());
    r.put("elapsedMs", elapsedMs);

    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "%nnativepool Spark demo%s: %,d rows, %d tasks on local[%d], pool %s, off-heap budget"
                + " %s, chunk %s, %s%n",
            cfg.sortOnly() ? " (sort only)" : "",
            cfg.rows,
            cfg.partitions,
            cfg.threads,
            cfg.pool == PoolKind.FAIR_UNIFIED
                ? cfg.pool
                    + " ("
                    + size(cfg.poolSize > 0 ? cfg.poolSize : cfg.budget)
                    + " per task)"
                : cfg.pool,
            size(cfg.budget),
            size(cfg.chunk),
            cfg.sortOnly()
                ? "no Spark aggregation"
                : String.format(Locale.ROOT, "%,d groups", cfg.groups)));
    line(
        b,
        "correctness",
        job.correct()
            ? (cfg.sortOnly()
                ? "OK (every task's rows sorted and complete)"
                : "OK (every task's rows sorted and complete; Spark's totals of generated and"
                    + " sorted rows agree)")
            : "FAIL: " + job.problem);
    line(
        b,
        "rows",
        String.format(
            Locale.ROOT,
            "%,d in, %,d out (%,d + %,d Arrow batches over C Data)",
            rowsIn,
            rowsOut,
            batchesIn,
            batchesOut));
    line(
        b,
        "native spills",
        String.format(
            Locale.ROOT,
            "%d self-initiated, %d Spark-requested (%d requests); %d run files, %s written;"
                + " merge fan-in ≤ %d (what the pool granted), %d level%s",
            self,
            requested,
            requests,
            runs,
            size(spilledBytes),
            maxFanIn,
            mergeLevels,
            mergeLevels == 1 ? "" : "s"));
    line(
        b,
        "Spark → native",
        String.format(
            Locale.ROOT,
            "%d spill calls on the native consumer released %s to Spark",
            reclaims,
            size(reclaimedBytes)));
    line(
        b,
        "Spark spills",
        String.format(
            Locale.ROOT,
            "%s (memory) / %s (disk) in %d of %d sort tasks",
            size(sparkMemSpilled),
            size(sparkDiskSpilled),
            sparkSpillingTasks,
            job.tasks.size()));
    line(
        b,
        "peak reserved",
        String.format(
            Locale.ROOT,
            "%s off-heap as Spark sees it (process, sampled; max task peakOffHeapExecutionMemory"
                + " %s); native pools %s (held from Spark %s), sorter %s (its chunks' account's"
                + " slack at most %s of it)",
            size(sparkPeak),
            size(peakTaskOffHeap),
            size(smp.peakNativeReserved.get()),
            size(smp.peakNativeHeld.get()),
            size(peakSorterReserved),
            size(peakSlack)));
    line(
        b,
        "peak allocated",
        String.format(
            Locale.ROOT,
            "%s native (per sorter; %s summed over sorters, sampled)",
            size(peakAllocated),
            size(smp.peakAllocated.get())));
    line(
        b,
        "allocated ≤ reserved",
        String.format(
            Locale.ROOT,
            "%s: %,d checks (%s), %d violations",
            violations == 0 ? "held" : "VIOLATED",
            checks,
            SampleWords.of(cfg.sampling).checks(),
            violations));
    line(
        b,
        "baselines",
        String.format(
            Locale.ROOT,
            "idle %s (Spark started, library loaded, no job); %s %s (the baseline below)",
            mib(peaks.idleRss()),
            mib(baseline),
            cfg.warmupRows > 0
                ? "after a warm-up run"
                : "before the first job (no warm-up: JIT and class loading count as growth)"));
    String peakText =
        String.format(
            Locale.ROOT,
            "%s %s = baseline + %s (%.2f × the %s reserved)%s",
            truePeak > peaks.hwm()
                ? "highest sample (above VmHWM " + mib(peaks.hwm()) + ")"
                : "VmHWM",
            mib(truePeak),
            size(hwmGrowth),
            hwmRatio,
            size(sparkPeak),
            peaks.hwmReset()
                ? ""
                : "; VmHWM could not be reset: it is the process's lifetime peak");
    line(b, "true peak", peakText + "; " + truePeakVerdict(over, noise, untrackedBound));
    TruePeaks.Cgroup c = peaks.cgroup();
    int procs = c == null ? 0 : c.others();
    if (c != null && procs != 0) {
      line(
          b,
          "cgroup peak",
          String.format(
              Locale.ROOT,
              "not reported: the JVM's memory cgroup holds %d other processes (DEMO_CGROUP puts"
                  + " the JVM in one of its own)",
              procs));
    } else if (c != null) {
      line(
          b,
          "cgroup peak",
          String.format(
              Locale.ROOT,
              "%s (v%d %s, %s, %s): peak %s%s, %s at the baseline (page cache included);"
                  + " anonymous %s at the baseline, peak %s (sampled)",
              c.path(),
              c.v2() ? 2 : 1,
              c.v2() ? "memory.peak" : "memory.max_usage_in_bytes",
              c.limit() < 0 ? "no limit" : "limit " + mib(c.limit()),
              peaks.cgroupReset() ? "peak reset at the baseline" : "peak since the cgroup was made",
              mib(peaks.cgroupPeak()),
              peaks.cgroupPeak() > peaks.cgroupBaseline()
                  ? String.format(
                      Locale.ROOT, " (+%s)", mib(peaks.cgroupPeak() - peaks.cgroupBaseline()))
                  : "",
              mib(peaks.cgroupBaseline()),
              mib(peaks.cgroupAnonBaseline()),
              mib(smp.peakCgroupAnon.get())));
    }
    line(
        b,
        "Go runtime",
        String.format(
            Locale.ROOT,
            "%s RSS to load the library and make one native call (%s mapped); peak %s"
                + " (runtime/metrics, read after every native call), %s over the baseline; %s"
                + " mapped in all",
            size(goLoadRss),
            size(goRuntimeAtLoad),
            size(sampleAfter[SortBridge.SAMPLE_GO_PEAK]),
            size(goPeakGrowth),
            size(sampleAfter[SortBridge.SAMPLE_GO_MAPPED])));
    line(
        b,
        "JVM untracked",
        String.format(
            Locale.ROOT,
            "≥ %s at the true peak (VmHWM growth − reserved − Go runtime growth), %s at %s:"
                + " memory outside Spark's books and the native side's (which are"
                + " exact, above) — the JVM's own (Spark's spill-file readers: 1 MiB each, README"
                + " \"Scale\") and freed memory the C allocator keeps (%s more of it than at the"
                + " start, at that sample; mallinfo2); java.nio direct pool %s → %s",
            size(untrackedBound),
            size(untrackedSampled),
            SampleWords.of(cfg.sampling).worst(),
            size(Math.max(0, smp.mallocRetainedAtUntrackedPeak)),
            size(directBaseline),
            size(smp.peakDirect.get())));
    line(
        b,
        "peak RSS growth",
        String.format(
            Locale.ROOT,
            "%s %s (the true peak is VmHWM); glibc %s",
            size(growth),
            SampleWords.of(cfg.sampling).peak(),
            mallocEnv.isEmpty()
                ? "as the library set it (no MALLOC_* variable in the environment)"
                : red("tuned by the environment: " + mallocEnv)));
    line(
        b,
        "RSS growth ÷ reserved",
        String.format(
            Locale.ROOT,
            "%.2f sampled (%.2f without the Go runtime's growth); %s true (VmHWM)",
            ratio,
            ratioNet,
            exceeds
                ? red(String.format(Locale.ROOT, "%.2f", hwmRatio))
                : String.format(Locale.ROOT, "%.2f", hwmRatio)));
    line(
        b,
        "JNI upcalls",
        String.format(
            Locale.ROOT,
            "%,d acquire/release (%,d + %,d in the sort tasks, %d short grants), leaks %d",
            upcalls,
            acquires,
            releases,
            shortGrants,
            leaks));
    line(
        b,
        "elapsed",
        String.format(
            Locale.ROOT,
            "%.1f s (%d samples in %s)",
            elapsedMs / 1000.0,
            smp.samples.get(),
            shown(Path.of(cfg.outDir, "samples.csv"))));
    LedgerReport.add(r, b, ledger, executorLedger, shown(Path.of(cfg.outDir, "ledger.csv")));
    GuardReport.add(r, b, cfg.burst, burst, before, after, episodes, smp.peakBallast.get());
    b.append(ok ? "result: OK\n" : "result: FAIL\n");
    r.put("text", plain(b.toString())); // the file never has colour codes
    r.put("coloured", b.toString());
  }

  /** Bytes in the JVM's direct buffers ({@code java.nio}'s "direct" pool) now. */
  static long directBuffersUsed() {
    return ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
        .filter(b -> b.getName().equals("direct"))
        .mapToLong(BufferPoolMXBean::getMemoryUsed)
        .sum();
  }

  /**
   * {@code file} as the report names it: relative to the working directory when it is below it
   * ({@code build/demo/samples.csv}), so that a report copied elsewhere names no machine's path.
   */
  static String shown(Path file) {
    Path cwd = Path.of("").toAbsolutePath();
    Path f = file.toAbsolutePath().normalize();
    return f.startsWith(cwd) ? cwd.relativize(f).toString() : f.toString();
  }

  /** Reads of RSS in the quiet window before the measured run, and their period. */
  static final int QUIET_READS = 20;

  static final long QUIET_PERIOD_MS = 50;

  /**
   * {@code n} reads of RSS {@code periodMs} apart, with no job running: {lowest, highest, last}.
   * The spread is how much RSS moves by itself (the JIT, the GC's own structures, Spark's
   * heartbeats), part of the report's noise.
   */
  static long[] quietRss(int n, long periodMs) {
    long lo = Long.MAX_VALUE;
    long hi = Long.MIN_VALUE;
    long last = 0;
    for (int i = 0; i < n; i++) {
      if (i > 0) {
        try {
          Thread.sleep(periodMs);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          n = i; // stop here: the reads so far
        }
      }
      last = MemorySampler.readRss();
      lo = Math.min(lo, last);
      hi = Math.max(hi, last);
    }
    return new long[] {lo, hi, last};
  }

  /**
   * What the report measures as noise when it holds the true peak against reserved + baseline:
   * memory that moves by itself or belongs to no book, none of it native memory outside its
   * reservations. An excess within it is no finding; one beyond it is.
   *
   * @param goRuntime the Go runtime's growth over the baseline at its peak (its own heap and
   *     stacks: the library's fixed cost, not the pools')
   * @param mallocRetained how much more freed memory glibc kept at its highest sample than at the
   *     start (mallinfo2: free, but resident)
   * @param baselineVariation the spread of RSS over a quiet second before the run
   */
  record Noise(long goRuntime, long mallocRetained, long baselineVariation) {
    /** The sum, bytes. */
    long total() {
      return goRuntime + mallocRetained + baselineVariation;
    }

    /** The noise in words, e.g. "10.9 MiB: Go runtime 2.1 MiB, …". */
    String describe() {
      return String.format(
          Locale.ROOT,
          "%s: the Go runtime's growth %s, free memory glibc kept %s more, RSS's own spread %s",
          size(total()),
          size(goRuntime),
          size(mallocRetained),
          size(baselineVariation));
    }
  }

  /**
   * The true peak's verdict against reserved + baseline: within it, within the measured noise
   * above it, or, in red, EXCEEDS by more than the noise: memory nobody's books hold.
   *
   * @param over the true peak less (baseline + reserved), bytes (negative: below)
   * @param noise what the report measured as noise
   * @param untracked the JVM's memory outside Spark's and the native side's books, at least
   */
  static String truePeakVerdict(long over, Noise noise, long untracked) {
    if (over <= 0) {
      return "within reserved + baseline";
    }
    if (over <= noise.total()) {
      return String.format(
          Locale.ROOT,
          "%s over reserved + baseline, within noise (%s)",
          size(over),
          noise.describe());
    }
    return red(
        String.format(
            Locale.ROOT,
            "EXCEEDS reserved + baseline by %s, %s beyond the measured noise of %s (JVM untracked"
                + " ≥ %s)",
            size(over),
            size(over - noise.total()),
            noise.describe(),
            size(untracked)));
  }

  /**
   * {@code s} marked red: ANSI codes, which {@link #forOutput} keeps only for a terminal. The report
   * file never has them ({@link #plain}).
   */
  static String red(String s) {
    return "\u001b[31m" + s + "\u001b[0m";
  }

  /**
   * Whether the report may colour its output: stdout is a terminal ({@code System.console()}) and
   * {@code NO_COLOR} is unset (no-color.org).
   */
  static boolean colour() {
    return System.console() != null && System.getenv("NO_COLOR") == null;
  }

  /** {@code text} without ANSI colour codes. */
  static String plain(String text) {
    return text.replaceAll("\u001b\\[[0-9;]*m", "");
  }

  /** {@code text} as printed: coloured on a terminal ({@link #colour()}), plain otherwise. */
  static String forOutput(String text, boolean colour) {
    return colour ? text : plain(text);
  }

  /** Every MALLOC_* and GLIBC_TUNABLES variable of the environment, "NAME=value, ..." (or ""). */
  static String mallocEnvironment() {
    StringBuilder b = new StringBuilder();
    System.getenv().entrySet().stream()
        .filter(e -> e.getKey().startsWith("MALLOC_") || e.getKey().equals("GLIBC_TUNABLES"))
        .sorted(Map.Entry.comparingByKey())
        .forEach(
            e ->
                b.append(b.length() > 0 ? ", " : "")
                    .append(e.getKey())
                    .append('=')
                    .append(e.getValue()));
    return b.toString();
  }

  static void line(StringBuilder b, String name, String value) {
    b.append(String.format(Locale.ROOT, "  %-22s %s%n", name, value));
  }

  /** A byte count in MiB with one decimal, for figures compared across lines (1,234.5 MiB). */
  static String mib(long n) {
    return String.format(Locale.ROOT, "%,.1f MiB", n / 1048576.0);
  }

  /** A byte count in binary units, like the Go side's HumanReadableSize. */
  static String size(long n) {
    if (n < 1024) {
      return n + " B";
    }
    String[] units = {"KiB", "MiB", "GiB", "TiB"};
    double v = n;
    int u = -1;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
  }
}
