package org.nativepool.spark.example;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.pmod;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.util.CollectionAccumulator;

/**
 * The soak's {@code foreachBatch} sink, on the driver, once per micro-batch: it runs the native
 * aggregation over the micro-batch (the rate source's rows as {@code (value mod keys, value)},
 * shuffled by key into the aggregation's partitions, {@link SoakTask}), collects the groups it
 * hands back and checks them and the tasks' figures ({@link SoakCheck}), and keeps the run's
 * totals. A wrong micro-batch is counted, its first problems printed; the run then fails.
 *
 * <p>Called on the query's thread, one micro-batch at a time; the totals may be read from any
 * thread.
 */
final class SoakSink implements VoidFunction2<Dataset<Row>, Long> {
  private static final long serialVersionUID = 1L;

  private final transient SoakConfig cfg;
  private final transient String stateRoot;
  private final transient String tempDir;
  private final transient long retainBytes;
  private final transient CollectionAccumulator<AggOutcome> outcomes;
  private final transient SoakCheck check;
  private final transient PrintStream out;

  private final AtomicLong started = new AtomicLong();
  private final AtomicLong done = new AtomicLong();
  private final AtomicLong errors = new AtomicLong();
  private final AtomicLong rows = new AtomicLong();
  private final AtomicLong selfSpills = new AtomicLong();
  private final AtomicLong requestedSpills = new AtomicLong();
  private final AtomicLong spillRequests = new AtomicLong();
  private final AtomicLong runs = new AtomicLong();
  private final AtomicLong spilledBytes = new AtomicLong();
  private final AtomicLong peakReserved = new AtomicLong();
  private final AtomicLong stateBytes = new AtomicLong();
  private final AtomicLong batchMillis = new AtomicLong();
  private final AtomicLong batchMillisMax = new AtomicLong();
  private volatile String firstProblem;

  SoakSink(
      SoakConfig cfg,
      String stateRoot,
      String tempDir,
      CollectionAccumulator<AggOutcome> outcomes,
      PrintStream out) {
    this.cfg = cfg;
    this.stateRoot = stateRoot;
    this.tempDir = tempDir;
    this.retainBytes = cfg.leak ? cfg.leakBytes : 0;
    this.outcomes = outcomes;
    this.check = new SoakCheck(cfg.keys, cfg.partitions);
    this.out = out;
  }

  @Override
  public void call(Dataset<Row> batch, Long batchId) {
    started.incrementAndGet();
    long t0 = System.nanoTime();
    outcomes.reset();
    Dataset<Row> in =
        batch
            .select(pmod(col("value"), lit(cfg.keys)).as("key"), col("value"))
            .repartition(cfg.partitions, col("key"));
    SoakTask task =
        new SoakTask(batchId, stateRoot, tempDir, cfg.batchRows, true, retainBytes, outcomes);
    List<Row> result = in.mapPartitions(task, Encoders.row(SoakTask.OUT_SCHEMA)).collectAsList();
    List<SoakCheck.Group> groups = new ArrayList<>(result.size());
    for (Row r : result) {
      groups.add(new SoakCheck.Group(r.getLong(0), r.getLong(1), r.getLong(2)));
    }
    List<AggOutcome> tasks = new ArrayList<>(outcomes.value());
    List<String> problems = check.check(batchId, groups, tasks);
    for (AggOutcome o : tasks) {
      selfSpills.addAndGet(o.get(AggStat.SELF_SPILLS));
      requestedSpills.addAndGet(o.get(AggStat.REQUESTED_SPILLS));
      spillRequests.addAndGet(o.get(AggStat.SPILL_REQUESTS));
      runs.addAndGet(o.get(AggStat.RUNS));
      spilledBytes.addAndGet(o.get(AggStat.SPILLED_BYTES));
      peakReserved.accumulateAndGet(o.get(AggStat.PEAK_RESERVED), Math::max);
      stateBytes.set(o.get(AggStat.STATE_BYTES));
    }
    rows.set(check.rows());
    if (!problems.isEmpty()) {
      errors.incrementAndGet();
      if (firstProblem == null) {
        firstProblem = problems.get(0);
      }
      for (String p : problems) {
        out.println("soak: WRONG " + p);
      }
    }
    long ms = (System.nanoTime() - t0) / 1_000_000;
    batchMillis.addAndGet(ms);
    batchMillisMax.accumulateAndGet(ms, Math::max);
    done.incrementAndGet();
  }

  /** Micro-batches the sink has started. */
  long started() {
    return started.get();
  }

  /** Micro-batches checked. */
  long done() {
    return done.get();
  }

  /** Micro-batches with a wrong result. */
  long errors() {
    return errors.get();
  }

  /** The first problem found, or null. */
  String firstProblem() {
    return firstProblem;
  }

  /** Rows the source produced so far, all checked. */
  long rows() {
    return rows.get();
  }

  long selfSpills() {
    return selfSpills.get();
  }

  long requestedSpills() {
    return requestedSpills.get();
  }

  long spillRequests() {
    return spillRequests.get();
  }

  long runs() {
    return runs.get();
  }

  long spilledBytes() {
    return spilledBytes.get();
  }

  /** The highest reservation of one task's aggregation. */
  long peakReserved() {
    return peakReserved.get();
  }

  /** The last state version's size of a partition. */
  long stateBytes() {
    return stateBytes.get();
  }

  /** A line of the run's totals so far. */
  String progress() {
    long d = done.get();
    return String.format(
        Locale.ROOT,
        "%,d micro-batches (%,d rows; %.0f ms each on average, %,d ms at most), %d wrong;"
            + " spills %,d self-initiated + %,d Spark-requested (%,d requests), %,d runs, %s written",
        d,
        rows.get(),
        d == 0 ? 0.0 : (double) batchMillis.get() / d,
        batchMillisMax.get(),
        errors.get(),
        selfSpills.get(),
        requestedSpills.get(),
        spillRequests.get(),
        runs.get(),
        SortDemo.size(spilledBytes.get()));
  }
}
