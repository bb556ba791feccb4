package org.nativepool.spark.jni;

/**
 * Where a task's native pool borrows memory from: Spark's {@code TaskMemoryManager} in production
 * ({@code org.nativepool.spark.memory.SparkTaskUpstream}). The Go side ({@code jni/}) calls these methods through JNI with
 * method IDs cached from this interface (see {@code jni/API.md}).
 *
 * <p>Implementations must be safe for concurrent use: several goroutines of one task may call at
 * once, and {@link #releaseMemory} may run on another thread while {@link #acquireMemory} blocks.
 */
public interface Upstream {

  /**
   * Called from native code through JNI. Asks for {@code n} bytes ({@code n > 0} always).
   *
   * <p>May block (Spark's 1/2N wait) and may call back into native code on the same thread
   * (Spark spilling this task's pool). A Java exception thrown here is rethrown, unchanged, by
   * the native call that caused the upcall.
   *
   * @return bytes granted, {@code 0 <= granted <= n}
   */
  long acquireMemory(long n);

  /**
   * Called from native code through JNI. Gives back {@code n} bytes ({@code n > 0} always), never
   * more than granted and not yet released. Returns nothing. An implementation throws only before
   * it has released anything: after an exception the {@code n} bytes are still held.
   */
  void releaseMemory(long n);
}
