package org.nativepool.spark.example;


import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.CollectionAccumulator;
import org.nativepool.spark.arrow.TaskArrowAllocators;

/**
 * The demo's task: for each partition of ids, generate {@code (key, payload)} rows, hand them to
 * the native sort in Arrow batches and emit them as they are ({@code src = 0}), then emit the
 * sorted rows the sort hands back ({@code src = 1}), checking their order and fingerprint on the
 * way. Whatever consumes the rows downstream in the same task (the demo's partial hash
 * aggregation) runs while the native sort holds memory, so Spark and the native pool compete for
 * the task's off-heap budget in both phases: Spark spills the aggregation when the sort holds the
 * memory, and asks the sort to spill (through the pool's reclaim) when the aggregation needs it.
 *
 * <p>In the sort-only job ({@link DemoConfig#sortOnly}) the generated rows are not emitted: the
 * task emits the sorted rows only, and the job drops them after this iterator has checked them.
 *
 * <p>Arrow memory follows {@code ffi/doc.go}: input batches come from the task's producer
 * allocator, charged to the task's pool; sorted batches are imported with the task's importer,
 * which charges nothing (the sorter pays until they are closed).
 */
final class SortTask implements MapPartitionsFunction<Long, Row> {
  private static final long serialVersionUID = 1L;

  /** The rows the task emits: source (0 generated, 1 sorted), key, payload. */
  static final StructType ROW_SCHEMA =
      new StructType()
          .add("src", DataTypes.IntegerType, false)
          .add("key", DataTypes.LongType, false)
          .add("payload", DataTypes.LongType, false);

  static final Schema ARROW_SCHEMA =
      new Schema(
          Arrays.asList(
              new Field("key", FieldType.notNullable(new ArrowType.Int(64, true)), null),
              new Field("payload", FieldType.notNullable(new ArrowType.Int(64, true)), null)));

  private final DemoConfig cfg;
  private final CollectionAccumulator<TaskOutcome> outcomes;

  SortTask(DemoConfig cfg, CollectionAccumulator<TaskOutcome> outcomes) {
    this.cfg = cfg;
    this.outcomes = outcomes;
  }

  /** The generated key of row {@code id}: uniform over all longs, deterministic. */
  static long keyOf(long id, long seed) {
    return Fingerprint.splitmix(id ^ (seed * 0x9e3779b97f4a7c15L));
  }

  @Override
  public Iterator<Row> call(Iterator<Long> ids) {
    TaskContext ctx = TaskContext.get();
    TaskArrowAllocators arrow = TaskArrowAllocators.forCurrentTask(); // opens the task's pool
    NativeSort sort =
        NativeSort.open("ExternalSorter[" + ctx.partitionId() + "]", cfg.batchRows, cfg.tempDir());
    return new Rows(ctx, arrow, sort, ids);
  }

  /** The task's output iterator; see the class comment. Used by the task thread only. */
  private final class Rows implements Iterator<Row> {
    private final TaskContext ctx;
    private final TaskArrowAllocators arrow;
    private final NativeSort sort;
    private final Iterator<Long> ids;
    private final Fingerprint in = new Fingerprint();
    private final Fingerprint out = new Fingerprint();

    // Input phase: the batch just pushed, emitted row by row.
    private final long[] keys = new long[cfg.batchRows];
    private final long[] payloads = new long[cfg.batchRows];
    private int n;
    private int pos;
    private VectorSchemaRoot inRoot;
    private boolean finished;

    // Output phase: the sorted batch being emitted.
    private VectorSchemaRoot outRoot;
    private BigIntVector outKey;
    private BigIntVector outPayload;
    private int outPos;
    private int outN;
    private boolean done;

    Rows(TaskContext ctx, TaskArrowAllocators arrow, NativeSort sort, Iterator<Long> ids) {
      this.ctx = ctx;
      this.arrow = arrow;
      this.sort = sort;
      this.ids = ids;
    }

    @Override
    public boolean hasNext() {
      for (; ; ) {
        if (pos < n) {
          return true;
        }
        if (!finished) {
          if (ids.hasNext()) {
            pushBatch();
            continue;
          }
          finishInput();
        }
        if (outRoot != null) {
          if (outPos < outN) {
            return true;
          }
          outRoot.close(); // releases the Go export: the sorter's charge goes down
          outRoot = null;
        }
        if (done) {
          return false;
        }
        outRoot = sort.next(arrow.importer());
        if (outRoot == null) {
          complete();
          return false;
        }
        outKey = (BigIntVector) outRoot.getVector(0);
        outPayload = (BigIntVector) outRoot.getVector(1);
        outPos = 0;
        outN = outRoot.getRowCount();
      }
    }

    @Override
    public Row next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      if (pos < n) {
        int i = pos++;
        return RowFactory.create(0, keys[i], payloads[i]);
      }
      int i = outPos++;
      long k = outKey.get(i);
      long p = outPayload.get(i);
      out.add(k, p);
      return RowFactory.create(1, k, p);
    }

    /** Generates the next batch from the ids, pushes it to the sorter, and queues its rows. */
    private void pushBatch() {
      if (inRoot == null) {
        inRoot = VectorSchemaRoot.create(ARROW_SCHEMA, arrow.producer());
        inRoot.allocateNew();
      }
      BigIntVector k = (BigIntVector) inRoot.getVector(0);
      BigIntVector p = (BigIntVector) inRoot.getVector(1);
      int rows = 0;
      while (rows < keys.length && ids.hasNext()) {
        long id = ids.next();
        long key = keyOf(id, cfg.seed);
        keys[rows] = key;
        payloads[rows] = id;
        k.setSafe(rows, key);
        p.setSafe(rows, id);
        in.add(key, id);
        rows++;
      }
      inRoot.setRowCount(rows);
      sort.push(inRoot, arrow.producer());
      n = cfg.sortOnly() ? 0 : rows;
      pos = 0;
    }

    private void finishInput() {
      finished = true;
      n = 0;
      pos = 0;
      if (inRoot != null) {
        inRoot.close();
        inRoot = null;
      }
      sort.finish();
    }

    /** Records the task's outcome and closes the sorter (its listener would, later). */
    private void complete() {
      done = true;
      long[] sortStats = sort.stats().toArray();
      long[] poolStats = arrow.pool().stats().toArray();
      sort.close();
      outcomes.add(
          new TaskOutcome(ctx.taskAttemptId(), ctx.partitionId(), in, out, sortStats, poolStats));
    }
  }
}
