package org.apache.comet.testing;

import org.apache.spark.memory.MemoryConsumer;
import org.apache.spark.memory.MemoryMode;
import org.apache.spark.memory.TaskMemoryManager;

/**
 * An OFF_HEAP consumer on a real {@link TaskMemoryManager} whose class is in Comet's package, as
 * Comet's own ({@code org.apache.spark.CometTaskMemoryManager$NativeMemoryConsumer}) is, so that
 * nativepool's engine split counts it as Comet's. Like Comet's, it cannot spill from the JVM: its
 * {@code spill} gives nothing back, and what it is granted short is the native side's to refuse.
 */
public final class CometTestConsumer extends MemoryConsumer {
  public CometTestConsumer(TaskMemoryManager tmm) {
    super(tmm, 0L, MemoryMode.OFF_HEAP);
  }

  /** Asks Spark for {@code n} bytes; returns what Spark granted (kept). */
  public long take(long n) {
    return acquireMemory(n);
  }

  /** Gives everything held back to Spark. */
  public void giveAll() {
    long held = getUsed(); // the field's type changed in Spark 4.3 (long to AtomicLong)
    if (held > 0) {
      freeMemory(held);
    }
  }

  @Override
  public long spill(long size, MemoryConsumer trigger) {
    return 0;
  }
}
