package org.nativepool.spark.example;

import java.util.Objects;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;
import org.nativepool.spark.memory.TaskPool;

/**
 * One Go external sort ({@code examples/sort}) inside a Spark task: its consumer is registered in
 * the task's native pool, so it borrows from the task's {@code TaskMemoryManager}, spills on its
 * own when the pool refuses a buffer, and spills when Spark asks the task's native consumer for
 * memory.
 *
 * <p>The C Data Interface's crossings, ownership and closing: {@link NativeOperator}.
 */
public final class NativeSort extends NativeOperator {
  private NativeSort(long handle, String name) {
    super(handle, name, "nativesort", "sorter");
  }

  /**
   * Opens a sorter on the native pool of the task running on this thread, which must be open
   * ({@link TaskPool#openForCurrentTask()}, or the task's {@code TaskArrowAllocators}), and
   * registers a completion listener that closes it (before the pool's own listener: listeners run
   * in reverse order).
   *
   * @param name the consumer name in the pool's refusal and leak reports
   * @param batchRows rows per output (and spill) batch; 0 for the Go default (8192)
   * @param tempDir where the sorter makes its private run directory; null for the system default
   * @throws IllegalStateException if this is not a task thread or the task has no open pool
   */
  public static NativeSort open(String name, int batchRows, String tempDir) {
    Objects.requireNonNull(name, "name");
    if (batchRows < 0) {
      throw new IllegalArgumentException("nativesort: batchRows " + batchRows + " < 0");
    }
    TaskContext ctx = TaskContext.get();
    if (ctx == null) {
      throw new IllegalStateException(
          "nativesort: no TaskContext on thread '" + Thread.currentThread().getName() + "'");
    }
    SortBridge.ensureLoaded();
    long h =
        SortBridge.create0(ctx.taskAttemptId(), name, batchRows, tempDir == null ? "" : tempDir);
    NativeSort s = new NativeSort(h, name);
    ctx.addTaskCompletionListener((TaskCompletionListener) c -> s.close());
    return s;
  }

  /**
   * The sorter's figures now.
   *
   * @throws IllegalStateException if closed
   */
  public SortStats stats() {
    enter();
    try {
      return new SortStats(SortBridge.stats0(handle));
    } finally {
      exit();
    }
  }

  @Override
  void push0(long handle, long array, long schema) {
    SortBridge.push0(handle, array, schema);
  }

  @Override
  void finish0(long handle) {
    SortBridge.finish0(handle);
  }

  @Override
  boolean next0(long handle, long array, long schema) {
    return SortBridge.next0(handle, array, schema);
  }

  @Override
  void close0(long handle) {
    SortBridge.close0(handle);
  }
}
