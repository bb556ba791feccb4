package org.nativepool.spark.testing;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.memory.TaskMemoryManager;
import org.apache.spark.memory.UnifiedMemoryManager;

/**
 * Spark's real memory managers without a SparkContext, as Spark's own
 * {@code TaskMemoryManagerSuite} builds them: one {@link UnifiedMemoryManager} with an off-heap
 * pool of the given size, and one {@link TaskMemoryManager} per task attempt. {@link #cleanUp()}
 * cleans up every task and reports what Spark still held.
 */
public final class SparkMemory {
  public static final long MIB = 1L << 20;

  public final UnifiedMemoryManager umm;
  private final List<TaskMemoryManager> tasks = new ArrayList<>();

  /**
   * @param offHeapBytes spark.memory.offHeap.size
   * @param numCores the executor's cores (Spark's N for the 1/N cap counts active tasks, not this)
   */
  public SparkMemory(long offHeapBytes, int numCores) {
    SparkConf conf =
        new SparkConf(false)
            .set("spark.memory.offHeap.enabled", "true")
            .set("spark.memory.offHeap.size", Long.toString(offHeapBytes));
    long heap = 256 * MIB;
    this.umm = new UnifiedMemoryManager(conf, heap, heap / 2, numCores);
  }

  /** A task memory manager for {@code taskAttemptId}, cleaned up by {@link #cleanUp()}. */
  public synchronized TaskMemoryManager task(long taskAttemptId) {
    TaskMemoryManager tmm = new TaskMemoryManager(umm, taskAttemptId);
    tasks.add(tmm);
    return tmm;
  }

  /** Off-heap execution bytes Spark counts for all tasks. */
  public long offHeapUsed() {
    return umm.offHeapExecutionMemoryUsed();
  }

  /**
   * Runs Spark's end-of-task cleanup for every task.
   *
   * @return the bytes Spark still held for the tasks (a leak when non-zero)
   */
  public synchronized long cleanUp() {
    long leaked = 0;
    for (TaskMemoryManager tmm : tasks) {
      leaked += tmm.cleanUpAllAllocatedMemory();
    }
    tasks.clear();
    return leaked;
  }
}
