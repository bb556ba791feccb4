package org.nativepool.spark.jni;





/**
 * A native consumer's spill hook, written in Java: registered with
 * {@code TaskPool.newReservation(name, canSpill, spiller)} and called when Spark asks the
 * task's pool to give memory back (the pool's reclaim, largest spillable consumer first).
 *
 * <p>The call runs on the thread that asked Spark for memory, while that thread holds the task's
 * {@code TaskMemoryManager} monitor: free memory synchronously, and never acquire memory or wait
 * for another thread that may be acquiring.
 */
@FunctionalInterface
public interface Spiller {

  /**
   * Called from native code through JNI (from reclaim). Frees up to {@code target} bytes of this
   * consumer's reservation, by shrinking it, before returning.
   *
   * @return the bytes freed; 0 means this consumer cannot spill (any more)
   */
  long spill(long target);
}
