package org.nativepool.spark.example;

import java.util.Locale;
import org.apache.spark.network.util.JavaUtils;
import org.nativepool.spark.config.PoolKind;

/**
 * The options of {@link StreamingSoak}, immutable, parsed from the command line ({@link #parse}).
 * The defaults are sized for a 2-core machine shared with other work: a rate source of 25,000 rows
 * a second in micro-batches of one second over 2 partitions, and an off-heap budget of 2 MiB, so
 * that a task's share (1 MiB while both run) is less than the table of a micro-batch's 12,500
 * groups grows to: Spark asks the aggregation to spill in about every micro-batch.
 */
final class SoakConfig {
  /**
   * How long the clean run streams, ms, its JVM warm-up included (the leak run stops at its report
   * or its batch limit).
   */
  final long durationMs;
  /**
   * The clean run's JVM warm-up, ms: the first part of {@link #durationMs}, streamed in a first
   * SparkSession whose ledger and detector are discarded; 0 for none.
   */
  final long jvmWarmupMs;
  /** The planted-leak run instead of the clean one. */
  final boolean leak;
  /** Bytes the planted leak keeps per task (one batch per partition and micro-batch). */
  final long leakBytes;
  /** Micro-batches after which the leak run fails if no growth report named the leak. */
  final int leakBatches;
  /** The rate source's rows per second. */
  final long rate;
  /** The trigger interval, ms. */
  final long triggerMs;
  /** Groups: the key is {@code value mod keys}. */
  final long keys;
  /** Partitions of the rate source and of the aggregation (its shuffle by key). */
  final int partitions;
  /** {@code local[threads]}. */
  final int threads;
  /** Rows per Arrow batch pushed to Go, and per batch of updated groups back. */
  final int batchRows;
  /** {@code spark.memory.offHeap.size}, bytes. */
  final long budget;
  /** {@code spark.nativepool.poolSize}: the fair_unified pool's own size per task, bytes. */
  final long poolSize;
  /** {@code spark.nativepool.chunkSize}, bytes. */
  final long chunk;
  /** {@code spark.nativepool.pool}. */
  final PoolKind pool;
  /** Milliseconds between ledger readings written to the CSV. */
  final long sampleMs;
  /** The verdict's warm-up, ms: readings of the measured session before it are not judged. */
  final long warmupMs;
  /** The verdict's window, ms. */
  final long windowMs;
  /** A window minimum above the one before by more than this many bytes counts as a rise. */
  final long toleranceBytes;
  /** {@code libnativesort.so}. */
  final String library;
  /** Output directory. */
  final String outDir;
  /** Only analyse this ledger CSV (no Spark); null for a run. */
  final String analyze;

  SoakConfig(
      long durationMs,
      long jvmWarmupMs,
      boolean leak,
      long leakBytes,
      int leakBatches,
      long rate,
      long triggerMs,
      long keys,
      int partitions,
      int threads,
      int batchRows,
      long budget,
      long poolSize,
      long chunk,
      PoolKind pool,
      long sampleMs,
      long warmupMs,
      long windowMs,
      long toleranceBytes,
      String library,
      String outDir,
      String analyze) {
    if (durationMs <= 0
        || jvmWarmupMs < 0
        || jvmWarmupMs >= durationMs
        || leakBytes <= 0
        || leakBatches <= 0
        || rate <= 0
        || triggerMs <= 0
        || keys <= 0
        || partitions <= 0
        || threads <= 0
        || batchRows <= 0
        || budget <= 0
        || poolSize < 0
        || chunk < 0
        || sampleMs <= 0
        || warmupMs < 0
        || windowMs <= 0
        || toleranceBytes < 0) {
      throw new IllegalArgumentException(
          "soak: every duration, rate, size and count must be > 0 (pool-size, chunk, warm-ups and"
              + " tolerance >= 0, the JVM warm-up shorter than the duration)\n"
              + USAGE);
    }
    this.durationMs = durationMs;
    this.jvmWarmupMs = jvmWarmupMs;
    this.leak = leak;
    this.leakBytes = leakBytes;
    this.leakBatches = leakBatches;
    this.rate = rate;
    this.triggerMs = triggerMs;
    this.keys = keys;
    this.partitions = partitions;
    this.threads = threads;
    this.batchRows = batchRows;
    this.budget = budget;
    this.poolSize = poolSize;
    this.chunk = chunk;
    this.pool = pool;
    this.sampleMs = sampleMs;
    this.warmupMs = warmupMs;
    this.windowMs = windowMs;
    this.toleranceBytes = toleranceBytes;
    this.library = library;
    this.outDir = outDir;
    this.analyze = analyze;
  }

  static final String USAGE =
      String.join(
          "\n",
          "usage: StreamingSoak [--duration T] [--jvm-warmup T] [--leak] [--leak-bytes SIZE] [--leak-batches N]",
          "                     [--rate R] [--trigger T] [--keys K] [--partitions P] [--threads T]",
          "                     [--batch ROWS] [--budget SIZE] [--pool-size SIZE] [--chunk SIZE]",
          "                     [--pool fair_unified|greedy_unified] [--sample T] [--warmup T]",
          "                     [--window T] [--tolerance SIZE] [--library PATH] [--out DIR]",
          "       StreamingSoak --analyze LEDGER.csv [--warmup T] [--window T] [--tolerance SIZE]",
          "  --duration   how long the clean run streams, its JVM warm-up included (default 60m)",
          "  --jvm-warmup the clean run's first part, streamed in a first SparkSession whose ledger",
          "               and growth detector are discarded, so that the measured session starts",
          "               with the JIT's and the JVM's warm-up behind it (default max(60s, duration/12))",
          "  --leak       the planted-leak run: each task keeps one batch forever; passes when the",
          "               growth detector names it within --leak-batches micro-batches",
          "  --leak-bytes bytes each task keeps in the leak run (default 512k)",
          "  --leak-batches micro-batches the leak run waits for the report (default 200)",
          "  --rate       rate source rows per second (default 25000)",
          "  --trigger    micro-batch trigger interval (default 1s)",
          "  --keys       groups, key = value mod K (default 65536)",
          "  --partitions partitions of the source and the aggregation (default 2)",
          "  --threads    local[T] (default 2)",
          "  --batch      rows per Arrow batch, both directions (default 4096)",
          "  --budget     spark.memory.offHeap.size (default 2m: a task's share, 1m, is less than a",
          "               micro-batch's groups need, so Spark makes the aggregation spill)",
          "  --pool-size  spark.nativepool.poolSize, the pool's own size per task (default 0: the budget)",
          "  --chunk      spark.nativepool.chunkSize (default 256k)",
          "  --pool       spark.nativepool.pool (default fair_unified)",
          "  --sample     ledger reading period for ledger.csv (default 1s)",
          "  --warmup     readings of the measured session before this are not judged",
          "               (default max(30s, duration/60))",
          "  --window     the verdict's window (default max(30s, duration/12))",
          "  --tolerance  a window minimum rises when it is above the previous by more than this",
          "               (default 1m)",
          "  --library    libnativesort.so (default build/lib/libnativesort.so, or -Dnativepool.library)",
          "  --out        output directory (default build/soak)",
          "  --analyze    only judge an existing ledger CSV (its verdict and trend table)");

  /** The default JVM warm-up of a clean run of {@code durationMs}: max(60 s, duration / 12). */
  static long defaultJvmWarmupMs(long durationMs) {
    return Math.max(60_000, durationMs / 12);
  }

  /**
   * The verdict's default warm-up for a run of {@code durationMs}, counted from the start of the
   * measured session: max(30 s, duration / 60).
   */
  static long defaultWarmupMs(long durationMs) {
    return Math.max(30_000, durationMs / 60);
  }

  /** How long the measured session of the clean run streams, ms. */
  long measuredMs() {
    return durationMs - jvmWarmupMs;
  }

  /** The verdict's default window for a run of {@code durationMs}: max(30 s, duration / 12). */
  static long defaultWindowMs(long durationMs) {
    return Math.max(30_000, durationMs / 12);
  }

  /**
   * Parses {@code --name value} options; sizes accept Spark's suffixes (64m), times Spark's (30s,
   * 5m, 1h).
   *
   * @throws IllegalArgumentException naming the bad option, with the usage text
   */
  static SoakConfig parse(String[] args) {
    long duration = 60 * 60_000L;
    Long jvmWarmup = null;
    boolean leak = false;
    long leakBytes = 512 << 10;
    int leakBatches = 200;
    long rate = 25_000;
    long trigger = 1000;
    long keys = 65_536;
    int partitions = 2;
    int threads = 2;
    int batch = 4096;
    long budget = 2L << 20;
    long poolSize = 0;
    long chunk = 256 << 10;
    PoolKind pool = PoolKind.FAIR_UNIFIED;
    long sample = 1000;
    Long warmup = null;
    Long window = null;
    long tolerance = 1 << 20;
    String library = System.getProperty("nativepool.library", "build/lib/libnativesort.so");
    String out = "build/soak";
    String analyze = null;
    for (int i = 0; i < args.length; i++) {
      String opt = args[i];
      if (opt.equals("-h") || opt.equals("--help")) {
        throw new IllegalArgumentException(USAGE);
      }
      if (opt.equals("--leak")) {
        leak = true;
        continue;
      }
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException("soak: " + opt + " needs a value\n" + USAGE);
      }
      String v = args[++i];
      try {
        switch (opt) {
          case "--duration" -> duration = time(v);
          case "--jvm-warmup" -> jvmWarmup = time(v);
          case "--leak-bytes" -> leakBytes = JavaUtils.byteStringAsBytes(v);
          case "--leak-batches" -> leakBatches = Integer.parseInt(v);
          case "--rate" -> rate = Long.parseLong(v);
          case "--trigger" -> trigger = time(v);
          case "--keys" -> keys = Long.parseLong(v);
          case "--partitions" -> partitions = Integer.parseInt(v);
          case "--threads" -> threads = Integer.parseInt(v);
          case "--batch" -> batch = Integer.parseInt(v);
          case "--budget" -> budget = JavaUtils.byteStringAsBytes(v);
          case "--pool-size" -> poolSize = JavaUtils.byteStringAsBytes(v);
          case "--chunk" -> chunk = JavaUtils.byteStringAsBytes(v);
          case "--pool" -> pool = PoolKind.parse(v);
          case "--sample" -> sample = time(v);
          case "--warmup" -> warmup = time(v);
          case "--window" -> window = time(v);
          case "--tolerance" -> tolerance = JavaUtils.byteStringAsBytes(v);
          case "--library" -> library = v;
          case "--out" -> out = v;
          case "--analyze" -> analyze = v;
          default -> throw new IllegalArgumentException("soak: unknown option " + opt + "\n" + USAGE);
        }
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("soak: " + opt + " " + v + ": not a number\n" + USAGE, e);
      }
    }
    return new SoakConfig(
        duration,
        jvmWarmup != null ? jvmWarmup : defaultJvmWarmupMs(duration),
        leak,
        leakBytes,
        leakBatches,
        rate,
        trigger,
        keys,
        partitions,
        threads,
        batch,
        budget,
        poolSize,
        chunk,
        pool,
        sample,
        warmup != null ? warmup : defaultWarmupMs(duration),
        window != null ? window : defaultWindowMs(duration),
        tolerance,
        library,
        out,
        analyze);
  }

  /** A Spark time string (30s, 5m, 1h, 500ms) in ms. */
  private static long time(String v) {
    return JavaUtils.timeStringAsMs(v.trim().toLowerCase(Locale.ROOT));
  }
}
