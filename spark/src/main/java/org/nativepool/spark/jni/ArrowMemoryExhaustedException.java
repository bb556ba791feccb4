package org.nativepool.spark.jni;




import org.apache.arrow.memory.OutOfMemoryException;

/**
 * The task's native pool refused memory for Arrow buffers: on the Java side, the {@code
 * TaskArrowAllocators.producer()} allocator's listener was refused by the pool; on the Go
 * side, {@code GoBatch.copy} could not charge the copy to its reservation. The message is the
 * pool's refusal text (DataFusion's wording, naming the pool and the top consumers).
 *
 * <p>It is an Arrow {@link OutOfMemoryException}, so code written against Arrow Java's allocators
 * (spill, then retry) handles it unchanged. Nothing was charged and no buffer was handed out.
 */
public class ArrowMemoryExhaustedException extends OutOfMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message the pool's refusal text. The Go side constructs this class through JNI with this
   *     constructor; keep its signature.
   */
  public ArrowMemoryExhaustedException(String message) {
    super(message);
  }
}
