package org.nativepool.spark.jni;

/**
 * Spark's off-heap memory as a whole, as the pod guard holds it: the memory manager every consumer
 * of the executor borrows from (Spark's own sorters, aggregations and joins in off-heap mode,
 * another engine's pools, nativepool's). While the headroom under the executor's memory limit is
 * short, the guard (on its own thread, in Go) holds every free byte of it above a floor as
 * ballast, so that each consumer meets no room at its next borrow and spills then, on its own
 * thread; it hands the ballast back once the pod could take the consumers growing into it. In
 * production this is {@code org.nativepool.spark.memory.SparkOffHeap}. The Go side ({@code jni/})
 * calls these methods through JNI with method IDs cached from this interface (see {@code
 * jni/API.md}).
 *
 * <p>Implementations must be safe for concurrent use, must never block (beyond a short lock of
 * Spark's memory manager), must never make a consumer spill, and must never call back into native
 * code.
 */
public interface OffHeap {

  /**
   * Called from native code through JNI. Takes up to {@code n} bytes ({@code n > 0}) of free
   * off-heap memory as ballast, never so much that the executor's other consumers are left less
   * than the floor beyond the {@code nativeHeld} bytes of execution memory nativepool's own pools
   * hold (their claim and their ballast, which serve no other consumer).
   *
   * @param nativeHeld what nativepool's pools hold of Spark's execution memory, as the guard last
   *     read it ({@code >= 0})
   * @return bytes taken, {@code 0 <= taken <= n}
   */
  long take(long n, long nativeHeld);

  /**
   * Called from native code through JNI, from the guard's thread or a task's. Takes up to {@code n}
   * bytes ({@code n > 0}) of free off-heap memory as ballast with no floor: bytes nativepool's
   * pools held as ballast a moment ago and handed back, which move into the guard's hold so that
   * the guard can lend them to a task whose borrow Spark granted short. They served no other
   * consumer, so taking them leaves the others what they had.
   *
   * @return bytes taken, {@code 0 <= taken <= n}
   */
  long keep(long n);

  /**
   * Called from native code through JNI. Hands {@code n} bytes ({@code n > 0}, never more than
   * taken and not yet handed back) of the ballast back to Spark and wakes the tasks waiting for
   * memory. An implementation throws only before it has handed anything back.
   */
  void giveBack(long n);

  /**
   * Called from native code through JNI.
   *
   * @return bytes of off-heap memory free now, held by no consumer and not by the ballast
   */
  long free();
}
