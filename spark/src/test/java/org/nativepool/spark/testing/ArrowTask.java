package org.nativepool.spark.testing;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.SparkConf;
import org.apache.spark.memory.TaskMemoryManager;
import org.apache.spark.memory.UnifiedMemoryManager;
import org.nativepool.spark.arrow.TaskArrowAllocators;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.memory.SparkTaskUpstream;
import org.nativepool.spark.memory.TaskPool;

/**
 * One Spark task with real memory managers and no SparkContext (as Spark's {@code
 * TaskMemoryManagerSuite} builds them): a {@link UnifiedMemoryManager} with an off-heap pool, the
 * task's {@link TaskMemoryManager}, its {@link SparkTaskUpstream}, an exact (chunk 0)
 * greedy_unified {@link TaskPool} and the task's {@link TaskArrowAllocators}. {@link #finish()}
 * closes them in task-completion order and returns what Spark still held.
 */
public final class ArrowTask {
  public static final long MIB = 1L << 20;

  public final UnifiedMemoryManager umm;
  public final TaskMemoryManager tmm;
  public final SparkTaskUpstream up;
  public final TaskPool pool;
  public final TaskArrowAllocators arrows;

  public ArrowTask(long taskAttemptId, long offHeapBytes) {
    this(taskAttemptId, offHeapBytes, 0);
  }

  /** A task whose pool takes {@code chunk}-byte chunks from Spark (0: exact mode). */
  public ArrowTask(long taskAttemptId, long offHeapBytes, long chunk) {
    SparkConf conf =
        new SparkConf(false)
            .set("spark.memory.offHeap.enabled", "true")
            .set("spark.memory.offHeap.size", Long.toString(offHeapBytes));
    long heap = 256 * MIB;
    umm = new UnifiedMemoryManager(conf, heap, heap / 2, 1);
    tmm = new TaskMemoryManager(umm, taskAttemptId);
    up = new SparkTaskUpstream(tmm, taskAttemptId);
    pool = TaskPool.open(up, taskAttemptId, PoolKind.GREEDY_UNIFIED, 0, chunk);
    arrows = TaskArrowAllocators.open(pool);
  }

  /** What Spark counts for the task. */
  public long sparkFigure() {
    return tmm.getMemoryConsumptionForThisTask();
  }

  /** Task completion: the Arrow allocators, then the pool, then the upstream; Spark's leftovers. */
  public long finish() {
    arrows.close();
    pool.close();
    up.close();
    return tmm.cleanUpAllAllocatedMemory();
  }

  /** A one-column batch v = first, first+1, … made by {@code alloc}. */
  public static VectorSchemaRoot longs(BufferAllocator alloc, long first, int rows) {
    BigIntVector v = new BigIntVector("v", alloc);
    v.allocateNew(rows);
    for (int i = 0; i < rows; i++) {
      v.set(i, first + i);
    }
    v.setValueCount(rows);
    VectorSchemaRoot root = VectorSchemaRoot.of(v);
    root.setRowCount(rows);
    return root;
  }

  /** The sum of column 0 of a batch made by {@link #longs}. */
  public static long sum(VectorSchemaRoot root) {
    BigIntVector v = (BigIntVector) root.getVector(0);
    long s = 0;
    for (int i = 0; i < root.getRowCount(); i++) {
      s += v.get(i);
    }
    return s;
  }

  public static long sumOf(long first, long n) {
    return n * first + n * (n - 1) / 2;
  }
}
