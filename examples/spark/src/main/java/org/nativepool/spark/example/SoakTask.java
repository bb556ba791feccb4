package org.nativepool.spark.example;

import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
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
 * One task of the soak: one partition of one micro-batch, its rows {@code (key, value)} already
 * shuffled by key. It opens the task's Arrow allocators (and so its native pool), an aggregation
 * of micro-batch {@link #batchId} over the partition's state directory, pushes the rows to Go in
 * Arrow batches from the task's producer allocator (charged to the pool), imports the groups Go
 * hands back with the importer (which charges nothing: Go pays until the root is closed), closes
 * the aggregation and reports its figures. It returns the updated groups {@code (key, count,
 * sum)}, their totals over every micro-batch so far.
 */
final class SoakTask implements MapPartitionsFunction<Row, Row> {
  private static final long serialVersionUID = 1L;

  /** The consumer name of partition {@code p}'s aggregation. */
  static String consumer(int p) {
    return "StreamingAgg[" + p + "]";
  }

  /** The rows the task returns. */
  static final StructType OUT_SCHEMA =
      new StructType()
          .add("key", DataTypes.LongType, false)
          .add("count", DataTypes.LongType, false)
          .add("sum", DataTypes.LongType, false);

  static final Schema IN_SCHEMA =
      new Schema(
          Arrays.asList(
              new Field("key", FieldType.notNullable(new ArrowType.Int(64, true)), null),
              new Field("value", FieldType.notNullable(new ArrowType.Int(64, true)), null)));

  private final long batchId;
  private final String stateRoot;
  private final String tempDir;
  private final int batchRows;
  private final boolean allocationSites;
  private final long retainBytes;
  private final CollectionAccumulator<AggOutcome> outcomes;

  SoakTask(
      long batchId,
      String stateRoot,
      String tempDir,
      int batchRows,
      boolean allocationSites,
      long retainBytes,
      CollectionAccumulator<AggOutcome> outcomes) {
    this.batchId = batchId;
    this.stateRoot = stateRoot;
    this.tempDir = tempDir;
    this.batchRows = batchRows;
    this.allocationSites = allocationSites;
    this.retainBytes = retainBytes;
    this.outcomes = outcomes;
  }

  @Override
  public Iterator<Row> call(Iterator<Row> rows) {
    TaskContext ctx = TaskContext.get();
    int p = ctx.partitionId();
    TaskArrowAllocators arrow = TaskArrowAllocators.forCurrentTask(); // opens the task's pool
    NativeAgg agg =
        NativeAgg.open(
            consumer(p),
            batchId,
            new File(stateRoot, "p" + p).getPath(),
            tempDir,
            batchRows,
            allocationSites,
            retainBytes);
    try (VectorSchemaRoot in = VectorSchemaRoot.create(IN_SCHEMA, arrow.producer())) {
      in.allocateNew();
      BigIntVector key = (BigIntVector) in.getVector(0);
      BigIntVector value = (BigIntVector) in.getVector(1);
      int n = 0;
      while (rows.hasNext()) {
        Row r = rows.next();
        key.setSafe(n, r.getLong(0));
        value.setSafe(n, r.getLong(1));
        if (++n == batchRows) {
          in.setRowCount(n);
          agg.push(in, arrow.producer());
          n = 0;
        }
      }
      if (n > 0) {
        in.setRowCount(n);
        agg.push(in, arrow.producer());
      }
    }
    agg.finish();
    List<Row> out = new ArrayList<>();
    for (; ; ) {
      VectorSchemaRoot next = agg.next(arrow.importer());
      if (next == null) {
        break;
      }
      try (VectorSchemaRoot r = next) {
        BigIntVector key = (BigIntVector) r.getVector(0);
        BigIntVector count = (BigIntVector) r.getVector(1);
        BigIntVector sum = (BigIntVector) r.getVector(2);
        for (int i = 0; i < r.getRowCount(); i++) {
          out.add(RowFactory.create(key.get(i), count.get(i), sum.get(i)));
        }
      }
    }
    long[] stats = agg.stats().toArray();
    agg.close(); // its listener would, later
    outcomes.add(new AggOutcome(batchId, p, ctx.taskAttemptId(), stats));
    return out.iterator();
  }
}
