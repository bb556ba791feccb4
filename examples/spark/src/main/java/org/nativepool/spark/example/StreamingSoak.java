package org.nativepool.spark.example;

import com.codahale.metrics.Counter;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import org.apache.spark.SparkEnv;
import org.apache.spark.metrics.source.Source;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryException;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.util.CollectionAccumulator;
import org.nativepool.spark.ledger.ExecutorLedger;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.ledger.LedgerSnapshot;
import org.nativepool.spark.ledger.LedgerReader;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.LibraryLoader;
import org.nativepool.spark.NativePoolPlugin;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.jni.ProcessStats;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The streaming soak: a Spark Structured Streaming query whose every micro-batch runs a native Go
 * aggregation (examples/spark/README.md, "The streaming soak"). The {@code rate} source's rows go,
 * shuffled by key, to {@link SoakTask}s that push them to Go over the Arrow C Data Interface; Go
 * counts and sums them by key on top of the partition's state on disk, spilling when its pool
 * refuses memory or Spark asks, and hands the updated groups back over C Data; the {@code
 * foreachBatch} sink ({@link SoakSink}) checks them against what the source produced.
 *
 * <p>Two runs:
 *
 * <ul>
 *   <li><b>clean</b> (the default): streams for {@code --duration}: first {@code --jvm-warmup} in
 *       a SparkSession of its own (the JVM's warm-up, not judged), then in the measured session,
 *       sampling the executor memory ledger into {@code ledger.csv}; passes when every micro-batch
 *       was right, the aggregation spilled, the plugin's growth detector reported nothing, no task
 *       leaked, and no ledger part (nor the RSS) keeps rising after the warm-up ({@link
 *       TrendAnalysis}, written to {@code trend.md});
 *   <li><b>leak</b> ({@code --leak}): every task keeps one Go batch forever; passes when the
 *       growth detector names {@code native.allocated}, the aggregation's consumer and the
 *       allocating function within {@code --leak-batches} micro-batches, and the clean verdict,
 *       applied to its {@code leak-ledger.csv}, fails on {@code native.allocated}.
 * </ul>
 *
 * Exit status: 0 pass, 1 fail, 2 usage. {@code --analyze CSV} only judges a ledger CSV.
 */
public final class StreamingSoak {
  private static final String SOURCE = "plugin." + NativePoolPlugin.class.getName();

  private StreamingSoak() {}

  /** Runs the soak (or the analysis) and exits with its status. */
  public static void main(String[] args) {
    SoakConfig cfg;
    try {
      cfg = SoakConfig.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println(e.getMessage());
      System.exit(2);
      return;
    }
    int rc;
    try {
      rc = cfg.analyze != null ? analyzeOnly(cfg, System.out) : run(cfg, System.out);
    } catch (Throwable t) {
      t.printStackTrace();
      rc = 1;
    }
    System.out.flush();
    System.exit(rc); // Spark may leave non-daemon threads behind
  }

  /** {@code --analyze}: the verdict and trend table of an existing ledger CSV. */
  static int analyzeOnly(SoakConfig cfg, PrintStream out) throws IOException {
    TrendAnalysis.Result r =
        TrendAnalysis.analyzeCsv(Path.of(cfg.analyze), cfg.warmupMs, cfg.windowMs, cfg.toleranceBytes);
    out.println("soak: trend of " + cfg.analyze);
    out.print(r.table());
    out.println(
        r.passed() ? "result: PASS (flat)" : "result: FAIL " + (r.problem() != null ? r.problem() : "rising: " + r.failed()));
    return r.passed() ? 0 : 1;
  }

  /** One run, clean or leak; returns the exit status. */
  static int run(SoakConfig cfg, PrintStream out) throws Exception {
    Path dir = Path.of(cfg.outDir).toAbsolutePath();
    Files.createDirectories(dir);
    String mode = cfg.leak ? "leak" : "clean";
    Path csv = dir.resolve(cfg.leak ? "leak-ledger.csv" : "ledger.csv");
    LibraryLoader.ensureLoaded(cfg.library);
    AggBridge.ensureLoaded();
    String warmupFailure = null;
    if (!cfg.leak && cfg.jvmWarmupMs > 0) {
      warmupFailure = warmUp(cfg, dir, out);
    }

    Path tmp = dir.resolve("tmp-" + mode);
    deleteTree(tmp);
    Files.createDirectories(tmp.resolve("spill"));
    SparkSession spark = session(cfg, mode, tmp);
    try {
      ExecutorLedger ledger = ledger();
      SoakSink sink = sink(spark, cfg, tmp, out);
      GrowthWatcher watcher = new GrowthWatcher(sink::started);
      ledger.addListener(watcher);
      out.printf(
          Locale.ROOT,
          "soak: %s run%s: rate %,d rows/s, trigger %s, %d partitions, %,d keys, pool %s (%s per task),"
              + " off-heap %s, chunk %s%s; ledger every %s into %s%n",
          mode,
          cfg.leak ? "" : ", measured for " + TrendAnalysis.duration(cfg.measuredMs()),
          cfg.rate,
          TrendAnalysis.duration(cfg.triggerMs),
          cfg.partitions,
          cfg.keys,
          cfg.pool.configName(),
          SortDemo.size(cfg.poolSize > 0 ? cfg.poolSize : cfg.budget),
          SortDemo.size(cfg.budget),
          SortDemo.size(cfg.chunk),
          cfg.leak ? ", each task keeps " + SortDemo.size(cfg.leakBytes) : "",
          TrendAnalysis.duration(cfg.sampleMs),
          csv);

      long t0 = System.nanoTime();
      String failure = warmupFailure;
      LedgerSampler sampler = LedgerSampler.start(ledger, t0, csv, cfg.sampleMs);
      try {
        StreamingQuery q = start(spark, cfg, sink, tmp.resolve("checkpoint"));
        try {
          String f = stream(cfg.leak, cfg.leak ? 0 : cfg.measuredMs(), cfg, q, sink, watcher, ledger, t0, out);
          failure = failure != null ? failure : f;
        } finally {
          q.stop();
        }
      } finally {
        sampler.close();
      }
      long elapsedMs = (System.nanoTime() - t0) / 1_000_000;
      long counter = growthCounter();
      long[] agg = AggBridge.sample();
      ProcessStats ps = Natives.processStats();
      out.println("soak: " + sink.progress());
      return cfg.leak
          ? leakVerdict(cfg, dir, csv, sink, watcher, counter, agg, elapsedMs, failure, out)
          : cleanVerdict(cfg, dir, csv, sink, watcher, counter, ps, elapsedMs, failure, out);
    } finally {
      stop(spark);
      deleteTree(tmp);
    }
  }

  /**
   * The clean run's JVM warm-up: the same query for {@code --jvm-warmup} in a first SparkSession,
   * stopped before the measured one starts. The JVM keeps what it compiled and loaded; the plugin's
   * ledger and growth detector go with the session (a new session's executor plugin makes new
   * ones), so the measured session's detector starts on a warm JVM. Its results are checked like
   * any others; its growth reports are printed, not judged. Returns why it failed, or null.
   */
  private static String warmUp(SoakConfig cfg, Path dir, PrintStream out) throws Exception {
    Path tmp = dir.resolve("tmp-warmup");
    deleteTree(tmp);
    Files.createDirectories(tmp.resolve("spill"));
    out.printf(
        Locale.ROOT,
        "soak: JVM warm-up: %s of the same query in a first SparkSession (not judged)%n",
        TrendAnalysis.duration(cfg.jvmWarmupMs));
    SparkSession spark = session(cfg, "warmup", tmp);
    try {
      ExecutorLedger ledger = ledger();
      SoakSink sink = sink(spark, cfg, tmp, out);
      GrowthWatcher watcher = new GrowthWatcher(sink::started);
      ledger.addListener(watcher);
      long t0 = System.nanoTime();
      String failure;
      StreamingQuery q = start(spark, cfg, sink, tmp.resolve("checkpoint"));
      try {
        failure = stream(false, cfg.jvmWarmupMs, cfg, q, sink, watcher, ledger, t0, out);
      } finally {
        q.stop();
      }
      out.println("soak: JVM warm-up: " + sink.progress());
      for (GrowthWatcher.Seen r : watcher.reports()) {
        out.println("soak: JVM warm-up, not judged: " + r.report().describe());
      }
      if (sink.errors() > 0) {
        return "wrong results in the JVM warm-up: " + sink.firstProblem();
      }
      return failure == null ? null : "the JVM warm-up: " + failure;
    } finally {
      stop(spark);
      deleteTree(tmp);
    }
  }

  /** A local SparkSession with the plugin, configured for the soak. */
  private static SparkSession session(SoakConfig cfg, String name, Path tmp) {
    return SparkSession.builder()
        .appName("nativepool-soak-" + name)
        .master("local[" + cfg.threads + "]")
        .config("spark.plugins", NativePoolPlugin.class.getName())
        .config(NativePoolConf.LIBRARY.key(), cfg.library)
        .config(NativePoolConf.POOL.key(), cfg.pool.configName())
        .config(NativePoolConf.CHUNK_SIZE.key(), Long.toString(cfg.chunk))
        .config(NativePoolConf.POOL_SIZE.key(), Long.toString(cfg.poolSize > 0 ? cfg.poolSize : cfg.budget))
        // Growth reports and leak lines name the Go function (and Java method) that allocated.
        .config(NativePoolConf.ALLOCATION_SITES.key(), "true")
        .config("spark.memory.offHeap.enabled", "true")
        .config("spark.memory.offHeap.size", Long.toString(cfg.budget))
        .config("spark.unsafe.exceptionOnMemoryLeak", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", Integer.toString(cfg.partitions))
        .config("spark.sql.adaptive.enabled", "false")
        // An hour of micro-batches: keep the driver's job, stage and SQL history short, and let
        // the context cleaner remove each micro-batch's shuffle files within minutes (it acts on
        // garbage-collected shuffles; the default periodic GC is every 30 min).
        .config("spark.ui.retainedJobs", "50")
        .config("spark.ui.retainedStages", "50")
        .config("spark.sql.ui.retainedExecutions", "20")
        .config("spark.sql.streaming.numRecentProgressUpdates", "20")
        .config("spark.cleaner.periodicGC.interval", "2min")
        .config("spark.driver.host", "localhost")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.local.dir", tmp.resolve("spark").toString())
        .getOrCreate();
  }

  private static void stop(SparkSession spark) {
    spark.stop();
    SparkSession.clearActiveSession();
    SparkSession.clearDefaultSession();
  }

  /** The executor plugin's ledger of the session just started. */
  private static ExecutorLedger ledger() {
    ExecutorLedger ledger = ExecutorLedger.current();
    if (ledger == null) {
      throw new IllegalStateException("soak: the nativepool executor plugin installed no ledger");
    }
    return ledger;
  }

  private static SoakSink sink(SparkSession spark, SoakConfig cfg, Path tmp, PrintStream out) {
    CollectionAccumulator<AggOutcome> outcomes =
        spark.sparkContext().collectionAccumulator("nativeagg outcomes");
    return new SoakSink(cfg, tmp.resolve("state").toString(), tmp.resolve("spill").toString(), outcomes, out);
  }

  private static StreamingQuery start(SparkSession spark, SoakConfig cfg, SoakSink sink, Path checkpoint)
      throws TimeoutException {
    return spark
        .readStream()
        .format("rate")
        .option("rowsPerSecond", Long.toString(cfg.rate))
        .option("numPartitions", Integer.toString(cfg.partitions))
        .load()
        .writeStream()
        .queryName("nativepool_soak")
        .trigger(Trigger.ProcessingTime(cfg.triggerMs, TimeUnit.MILLISECONDS))
        .option("checkpointLocation", checkpoint.toString())
        .foreachBatch(sink)
        .start();
  }

  /**
   * Streams until the run is over: {@code durationMs} (clean), the growth report or the batch
   * limit (leak), a wrong micro-batch or a failed query. Prints progress every 30 s. Returns why
   * the run failed early, or null.
   */
  private static String stream(
      boolean leak,
      long durationMs,
      SoakConfig cfg,
      StreamingQuery q,
      SoakSink sink,
      GrowthWatcher watcher,
      ExecutorLedger ledger,
      long t0,
      PrintStream out)
      throws InterruptedException {
    long nextProgress = t0 + TimeUnit.SECONDS.toNanos(30);
    for (; ; ) {
      try {
        if (q.awaitTermination(leak ? 200 : 1000)) {
          return "the query stopped on its own";
        }
      } catch (StreamingQueryException e) {
        return "the query failed: " + e.getMessage();
      }
      long now = System.nanoTime();
      if (sink.errors() > 0) {
        return "wrong result: " + sink.firstProblem();
      }
      if (leak) {
        if (watcher.first(LedgerReader.NATIVE_ALLOCATED) != null) {
          return null;
        }
        if (sink.done() >= cfg.leakBatches) {
          return "no growth report of " + LedgerReader.NATIVE_ALLOCATED + " after " + sink.done() + " micro-batches";
        }
      } else if (now - t0 >= TimeUnit.MILLISECONDS.toNanos(durationMs)) {
        return null;
      }
      if (now >= nextProgress) {
        nextProgress += TimeUnit.SECONDS.toNanos(30);
        LedgerSnapshot s = ledger.latest();
        out.printf(
            Locale.ROOT,
            "soak: %s: %s; RSS %s, native.allocated %s%n",
            TrendAnalysis.duration(TimeUnit.NANOSECONDS.toMillis(now - t0) / 1000 * 1000),
            sink.progress(),
            s == null ? "?" : SortDemo.size(s.rss()),
            s == null ? "?" : SortDemo.size(s.get(LedgerReader.NATIVE_ALLOCATED)));
      }
    }
  }

  /** The verdict of the clean run; writes {@code trend.md}. */
  private static int cleanVerdict(
      SoakConfig cfg,
      Path dir,
      Path csv,
      SoakSink sink,
      GrowthWatcher watcher,
      long counter,
      ProcessStats ps,
      long elapsedMs,
      String failure,
      PrintStream out)
      throws IOException {
    List<String> problems = new ArrayList<>();
    if (failure != null) {
      problems.add(failure);
    }
    if (sink.done() == 0) {
      problems.add("no micro-batch completed");
    }
    List<GrowthWatcher.Seen> reports = watcher.reports();
    if (!reports.isEmpty() || counter != 0) {
      problems.add("the growth detector reported (ledger.growthReports " + counter + "): " + describe(reports));
    }
    if (sink.selfSpills() + sink.requestedSpills() == 0) {
      problems.add("the aggregation never spilled: lower --pool-size or raise --rate");
    }
    long leaks = ps.get(ProcessStat.LEAKS);
    if (leaks != 0) {
      problems.add(leaks + " leaks at task end (" + SortDemo.size(ps.get(ProcessStat.LEAKED_BYTES)) + ")");
    }
    TrendAnalysis.Result trend =
        TrendAnalysis.analyzeCsv(csv, cfg.warmupMs, cfg.windowMs, cfg.toleranceBytes);
    if (!trend.passed()) {
      problems.add(
          trend.problem() != null ? trend.problem() : "rising after the warm-up: " + String.join(", ", trend.failed()));
    }
    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "Streaming soak, clean run: %s of streaming (a JVM warm-up of %s, then %s measured),"
                + " rate %,d rows/s, trigger %s, %d partitions, %,d keys, pool %s of %s per task,"
                + " off-heap %s%n%n",
            TrendAnalysis.duration(cfg.durationMs),
            TrendAnalysis.duration(cfg.jvmWarmupMs),
            TrendAnalysis.duration(elapsedMs / 1000 * 1000),
            cfg.rate,
            TrendAnalysis.duration(cfg.triggerMs),
            cfg.partitions,
            cfg.keys,
            cfg.pool.configName(),
            SortDemo.size(cfg.poolSize > 0 ? cfg.poolSize : cfg.budget),
            SortDemo.size(cfg.budget)));
    b.append("- micro-batches: ").append(sink.progress()).append('\n');
    b.append(
        String.format(
            Locale.ROOT,
            "- aggregation: peak reservation of a task %s, state %s per partition%n",
            SortDemo.size(sink.peakReserved()),
            SortDemo.size(sink.stateBytes())));
    b.append(
        String.format(
            Locale.ROOT,
            "- growth reports: %d to the listener, ledger.growthReports %d; leaks at task end %d%n%n",
            reports.size(),
            counter,
            leaks));
    b.append(trend.table());
    b.append('\n');
    b.append(problems.isEmpty() ? "result: PASS\n" : "result: FAIL\n");
    for (String p : problems) {
      b.append("- ").append(p).append('\n');
    }
    Files.writeString(dir.resolve("trend.md"), b.toString(), StandardCharsets.UTF_8);
    out.print(b);
    out.println("soak: trend table in " + dir.resolve("trend.md") + ", readings in " + csv);
    return problems.isEmpty() ? 0 : 1;
  }

  /** The verdict of the leak run; writes {@code leak.md}. */
  private static int leakVerdict(
      SoakConfig cfg,
      Path dir,
      Path csv,
      SoakSink sink,
      GrowthWatcher watcher,
      long counter,
      long[] agg,
      long elapsedMs,
      String failure,
      PrintStream out)
      throws IOException {
    List<String> problems = new ArrayList<>();
    if (failure != null) {
      problems.add(failure);
    }
    GrowthWatcher.Seen seen = watcher.first(LedgerReader.NATIVE_ALLOCATED);
    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "Streaming soak, leak run: each task keeps %s (one batch per partition and micro-batch),"
                + " rate %,d rows/s, trigger %s, %d partitions%n%n",
            SortDemo.size(cfg.leakBytes),
            cfg.rate,
            TrendAnalysis.duration(cfg.triggerMs),
            cfg.partitions));
    b.append("- micro-batches: ").append(sink.progress()).append('\n');
    b.append(
        String.format(
            Locale.ROOT,
            "- kept: %,d batches, %s; growth reports %d to the listener, ledger.growthReports %d%n",
            agg[AggBridge.SAMPLE_RETAINED_BATCHES],
            SortDemo.size(agg[AggBridge.SAMPLE_RETAINED_BYTES]),
            watcher.reports().size(),
            counter));
    if (seen != null) {
      GrowthReportEvent r = seen.report();
      String owner = r.getOwners().isEmpty() ? "" : r.getOwners().get(0);
      b.append(
          String.format(
              Locale.ROOT,
              "- reported after %d micro-batches (%d task ends seen by the detector):%n%n  > `%s`%n%n",
              seen.batches(),
              r.getTaskCount(),
              r.describe()));
      if (seen.batches() > cfg.leakBatches) {
        problems.add("reported after " + seen.batches() + " micro-batches, more than " + cfg.leakBatches);
      }
      if (!owner.startsWith("StreamingAgg[") || !owner.contains("retainReplayBatch")) {
        problems.add("the report does not name the aggregation and the allocating function first: " + r.getOwners());
      }
    } else if (failure == null) {
      problems.add("no growth report of " + LedgerReader.NATIVE_ALLOCATED);
    }
    if (sink.errors() > 0) {
      problems.add("wrong results in " + sink.errors() + " micro-batches: " + sink.firstProblem());
    }
    // The negative control: the clean run's verdict, on this run's readings cut to its length,
    // must catch the leak.
    long window = Math.max(2000, elapsedMs / 8);
    TrendAnalysis.Result trend = TrendAnalysis.analyzeCsv(csv, 0, window, cfg.toleranceBytes);
    TrendAnalysis.Part na = trend.part(LedgerReader.NATIVE_ALLOCATED);
    b.append("The clean run's verdict on this run's readings (").append(csv.getFileName()).append("):\n\n");
    b.append(trend.table()).append('\n');
    if (na == null || !na.failed()) {
      problems.add("the clean verdict does not fail " + LedgerReader.NATIVE_ALLOCATED + " on the leak run's readings");
    }
    b.append(problems.isEmpty() ? "result: PASS (the leak was named)\n" : "result: FAIL\n");
    for (String p : problems) {
      b.append("- ").append(p).append('\n');
    }
    Files.writeString(dir.resolve("leak.md"), b.toString(), StandardCharsets.UTF_8);
    out.print(b);
    out.println("soak: leak report in " + dir.resolve("leak.md") + ", readings in " + csv);
    return problems.isEmpty() ? 0 : 1;
  }

  private static String describe(List<GrowthWatcher.Seen> reports) {
    List<String> d = new ArrayList<>();
    for (GrowthWatcher.Seen s : reports) {
      d.add(s.report().describe() + " (micro-batch " + s.batches() + ")");
    }
    return d.isEmpty() ? "(none to the listener)" : String.join("; ", d);
  }

  /** The executor's {@code ledger.growthReports} counter (summed over the plugin's sources). */
  static long growthCounter() {
    long n = 0;
    for (Source s :
        CollectionConverters.asJava(SparkEnv.get().metricsSystem().getSourcesByName(SOURCE))) {
      Counter c = s.metricRegistry().getCounters().get(ExecutorLedger.GROWTH_COUNTER);
      if (c != null) {
        n += c.getCount();
      }
    }
    return n;
  }

  private static void deleteTree(Path p) throws IOException {
    if (!Files.exists(p)) {
      return;
    }
    try (Stream<Path> s = Files.walk(p)) {
      for (Path f : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(f);
      }
    }
  }
}
