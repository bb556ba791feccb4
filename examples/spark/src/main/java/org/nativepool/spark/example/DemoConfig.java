package org.nativepool.spark.example;

import java.io.File;
import java.io.Serializable;
import java.util.Locale;
import org.apache.spark.network.util.JavaUtils;
import org.nativepool.spark.config.PoolKind;

/**
 * The options of {@link SortDemo}, immutable. Parsed from the command line ({@link #parse}); every
 * option has a default sized for the demo's one-minute run on two cores.
 */
public final class DemoConfig implements Serializable {
  private static final long serialVersionUID = 1L;

  /**
   * The job: {@code "demo"}, the native sort next to a Spark aggregation of its input and output
   * (the default), or {@code "sort"}, the native sort alone, its sorted rows checked and dropped by
   * the task: the same workload as Comet's sort benchmark ({@code bench/comet}), for {@code make
   * bench-container}.
   */
  public final String job;

  /**
   * Rows generated and sorted (and, in the demo job, aggregated twice: as generated and as sorted).
   */
  public final long rows;

  /** Spark's off-heap budget ({@code spark.memory.offHeap.size}), bytes. */
  public final long budget;

  /** Bytes the native pool borrows from Spark at a time ({@code spark.nativepool.chunkSize}). */
  public final long chunk;

  /** The native pool kind ({@code spark.nativepool.pool}). */
  public final PoolKind pool;

  /**
   * The fair_unified pool's own size per task ({@code spark.nativepool.poolSize}), bytes; 0 = the
   * off-heap budget (the setting's default).
   */
  public final long poolSize;

  /** Rows per Arrow batch handed to the sorter, and per sorted batch handed back. */
  public final int batchRows;

  /** Groups of the Spark aggregation ({@code pmod(key, groups)}), per source. */
  public final long groups;

  /** Partitions (tasks) of the sort stage. */
  public final int partitions;

  /** Whether {@link #partitions} was derived from the rows ({@link #partitionsFor}), not given. */
  public final boolean autoPartitions;

  /** Local threads ({@code local[threads]}). */
  public final int threads;

  /** Rows of the warm-up run before the measured one (JIT, class loading, arenas); 0 = none. */
  public final long warmupRows;

  /** Generator seed. */
  public final long seed;

  /** The library carrying Natives's and SortBridge's natives ({@code libnativesort.so}). */
  public final String library;

  /** Output directory: samples.csv, report.properties; run files go under its tmp/. */
  public final String outDir;

  /** Memory the JVM takes outside any accounting during the measured run ({@link Burst}). */
  public final Burst.Plan burst;

  /** {@code spark.nativepool.guard.enabled}: {@code auto}, {@code true} or {@code false}. */
  public final String guard;

  /**
   * Whether the demo's own samplers read the process every {@link MemorySampler#PERIOD_MS} ms and
   * the ledger every {@link LedgerSampler#PERIOD_MS} ms during the measured run; off, each takes
   * only its first and last reading, so that the job runs with the plugin's monitoring alone
   * ({@code bench/watch-cost.sh}). The report's sampled figures then come from those two.
   */
  public final boolean sampling;

  /**
   * Seconds the SparkSession stays up and idle after the measured run, before it stops: a window in
   * which to measure what an idle executor costs ({@code bench/watch-cost.sh}); 0 = none.
   */
  public final long idleSeconds;

  DemoConfig(
      String job,
      long rows,
      long budget,
      long chunk,
      PoolKind pool,
      long poolSize,
      int batchRows,
      long groups,
      int partitions,
      boolean autoPartitions,
      int threads,
      long warmupRows,
      long seed,
      String library,
      String outDir,
      Burst.Plan burst,
      String guard,
      boolean sampling,
      long idleSeconds) {
    if (!guard.equals("auto") && !guard.equals("true") && !guard.equals("false")) {
      throw new IllegalArgumentException(
          "sortdemo: --guard " + guard + ": expected auto, true or false");
    }
    if (rows < 0 || budget <= 0 || chunk < 0 || poolSize < 0 || batchRows <= 0 || groups <= 0) {
      throw new IllegalArgumentException(
          "sortdemo: need rows >= 0, budget > 0, chunk >= 0, pool-size >= 0, batch > 0, groups >"
              + " 0");
    }
    if (!job.equals(JOB_DEMO) && !job.equals(JOB_SORT)) {
      throw new IllegalArgumentException(
          "sortdemo: --job " + job + ": expected " + JOB_DEMO + " or " + JOB_SORT);
    }
    if (partitions <= 0 || threads <= 0 || warmupRows < 0) {
      throw new IllegalArgumentException("sortdemo: need partitions > 0, threads > 0, warmup >= 0");
    }
    this.job = job;
    this.rows = rows;
    this.budget = budget;
    this.chunk = chunk;
    this.pool = pool;
    this.poolSize = poolSize;
    this.batchRows = batchRows;
    this.groups = groups;
    this.partitions = partitions;
    this.autoPartitions = autoPartitions;
    this.threads = threads;
    this.warmupRows = warmupRows;
    this.seed = seed;
    this.library = library;
    this.outDir = outDir;
    this.burst = burst;
    this.guard = guard;
    this.sampling = sampling;
    this.idleSeconds = idleSeconds;
  }

  /** {@link #job}: the native sort next to a Spark aggregation. */
  public static final String JOB_DEMO = "demo";

  /** {@link #job}: the native sort alone. */
  public static final String JOB_SORT = "sort";

  /** Whether this is the sort-only job: the task emits no generated rows and nothing aggregates. */
  public boolean sortOnly() {
    return job.equals(JOB_SORT);
  }

  /**
   * Rows a sort task takes when {@code --partitions} is not given: the size the demo is known to
   * complete at on a 1 GiB heap. A task's Spark aggregation spills more files the more rows it
   * sees, and Spark merges all of a task's spill files at once, with two 1 MiB buffers per file (a
   * heap array, and a direct buffer nothing accounts for: {@code examples/spark/README.md},
   * "Scale"), so the rows per task, not the tasks, must stay bounded as the data grows.
   */
  public static final long ROWS_PER_TASK = 16_000_000L;

  /**
   * Sort tasks for {@code rows} rows when {@code --partitions} is not given: {@code ceil(rows /
   * ROWS_PER_TASK)}, at least {@code threads}.
   */
  public static int partitionsFor(long rows, int threads) {
    long p = (rows + ROWS_PER_TASK - 1) / ROWS_PER_TASK;
    return (int) Math.max(threads, Math.min(p, Integer.MAX_VALUE));
  }

  /**
   * Sort tasks of {@code job} for {@code rows} rows when {@code --partitions} is not given: the
   * demo's {@link #partitionsFor}; the sort-only job, which has no Spark spill files to merge, one
   * task per thread, as Comet's sort bench runs it.
   */
  static int partitionsFor(String job, long rows, int threads) {
    return job.equals(JOB_SORT) ? threads : partitionsFor(rows, threads);
  }

  /** The same options with another row count (the warm-up run). */
  DemoConfig withRows(long n) {
    int p = autoPartitions ? partitionsFor(job, n, threads) : partitions;
    return new DemoConfig(
        job,
        n,
        budget,
        chunk,
        pool,
        poolSize,
        batchRows,
        groups,
        p,
        autoPartitions,
        threads,
        0,
        seed,
        library,
        outDir,
        Burst.Plan.NONE,
        guard,
        sampling,
        0);
  }

  /** Where the sorters put their run files. */
  String tempDir() {
    return new File(outDir, "tmp").getAbsolutePath();
  }

  /**
   * The options in words: {@code usage.txt} beside this class, the one copy, which {@code run.sh
   * --help} prints too without building anything.
   */
  static final String USAGE = usage();

  private static String usage() {
    try (java.io.InputStream in = DemoConfig.class.getResourceAsStream("usage.txt")) {
      if (in == null) {
        return "usage: SortDemo [options] (usage.txt missing from the classpath)";
      }
      return new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).stripTrailing();
    } catch (java.io.IOException e) {
      return "usage: SortDemo [options] (usage.txt unreadable: " + e + ")";
    }
  }

  /**
   * Parses {@code --name value} options; sizes accept Spark's suffixes (64m, 1g).
   *
   * @throws IllegalArgumentException naming the bad option, with the usage text
   */
  public static DemoConfig parse(String[] args) {
    String job = JOB_DEMO;
    long rows = 32_000_000L;
    long budget = JavaUtils.byteStringAsBytes("64m");
    long chunk = JavaUtils.byteStringAsBytes("2m");
    PoolKind pool = PoolKind.FAIR_UNIFIED;
    Long poolSize = null; // unset: 16m in the demo job, 0 (the budget) in the sort job
    int batch = 8192;
    long groups = 175_000L;
    int partitions = 0;
    int threads = 2;
    long warmup = -1;
    long seed = 1;
    String library = System.getProperty("nativepool.library", "build/lib/libnativesort.so");
    String out = "build/demo";
    long burst = 0;
    double burstAt = 2, burstRamp = 2, burstHold = 10;
    String guard = "auto";
    String sampling = "on";
    long idle = 0;
    for (int i = 0; i < args.length; i++) {
      String opt = args[i];
      if (opt.equals("-h") || opt.equals("--help")) {
        throw new IllegalArgumentException(USAGE);
      }
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException("sortdemo: " + opt + " needs a value\n" + USAGE);
      }
      String v = args[++i];
      try {
        switch (opt.toLowerCase(Locale.ROOT)) {
          case "--job" -> job = v.toLowerCase(Locale.ROOT);
          case "--rows" -> rows = Long.parseLong(v.replace("_", ""));
          case "--budget" -> budget = JavaUtils.byteStringAsBytes(v);
          case "--chunk" -> chunk = JavaUtils.byteStringAsBytes(v);
          case "--pool" -> pool = PoolKind.parse(v);
          case "--pool-size" -> poolSize = JavaUtils.byteStringAsBytes(v);
          case "--batch" -> batch = Integer.parseInt(v);
          case "--groups" -> groups = Long.parseLong(v.replace("_", ""));
          case "--partitions" -> partitions = Integer.parseInt(v);
          case "--threads" -> threads = Integer.parseInt(v);
          case "--warmup" -> warmup = Long.parseLong(v.replace("_", ""));
          case "--seed" -> seed = Long.parseLong(v);
          case "--library" -> library = v;
          case "--out" -> out = v;
          case "--guard" -> guard = v.toLowerCase(Locale.ROOT);
          case "--sampling" -> sampling = v.toLowerCase(Locale.ROOT);
          case "--idle" -> idle = Long.parseLong(v);
          case "--burst" -> burst = JavaUtils.byteStringAsBytes(v);
          case "--burst-at" -> burstAt = Double.parseDouble(v);
          case "--burst-ramp" -> burstRamp = Double.parseDouble(v);
          case "--burst-hold" -> burstHold = Double.parseDouble(v);
          default ->
              throw new IllegalArgumentException("sortdemo: unknown option " + opt + "\n" + USAGE);
        }
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            "sortdemo: " + opt + " " + v + ": not a number\n" + USAGE, e);
      }
    }
    if (!sampling.equals("on") && !sampling.equals("off")) {
      throw new IllegalArgumentException(
          "sortdemo: --sampling " + sampling + ": expected on or off");
    }
    if (idle < 0) {
      throw new IllegalArgumentException("sortdemo: --idle " + idle + ": must be >= 0");
    }
    if (poolSize == null) {
      poolSize = job.equals(JOB_SORT) ? 0 : JavaUtils.byteStringAsBytes("16m");
    }
    boolean autoPartitions = partitions == 0;
    if (autoPartitions && threads > 0) {
      partitions = partitionsFor(job, rows, threads);
    }
    if (warmup < 0) {
      warmup = Math.min(rows / 8, 1_000_000L);
    }
    return new DemoConfig(
        job,
        rows,
        budget,
        chunk,
        pool,
        poolSize,
        batch,
        groups,
        partitions,
        autoPartitions,
        threads,
        warmup,
        seed,
        new File(library).getAbsolutePath(),
        new File(out).getAbsolutePath(),
        new Burst.Plan(burst, seconds(burstAt), seconds(burstRamp), seconds(burstHold)),
        guard,
        sampling.equals("on"),
        idle);
  }

  /** Seconds as whole milliseconds. */
  private static long seconds(double s) {
    return Math.round(s * 1000);
  }
}
