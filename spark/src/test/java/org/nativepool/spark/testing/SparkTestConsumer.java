package org.nativepool.spark.testing;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.memory.MemoryConsumer;
import org.apache.spark.memory.MemoryMode;
import org.apache.spark.memory.TaskMemoryManager;

/**
 * A real Spark OFF_HEAP {@link MemoryConsumer} on a real {@link TaskMemoryManager}: it acquires
 * through Spark's public consumer API and, if spillable, spills everything it holds when asked
 * (what a Tungsten sorter does), returning exactly what it gave back to Spark.
 */
public final class SparkTestConsumer extends MemoryConsumer {
  private final String name;
  private final boolean spillable;
  public final AtomicInteger spillCalls = new AtomicInteger();
  public final AtomicLong spilledBytes = new AtomicLong();

  /** The threads {@link #spill} ran on. */
  public final Set<Thread> spillThreads = ConcurrentHashMap.newKeySet();

  public SparkTestConsumer(TaskMemoryManager tmm, String name, boolean spillable) {
    super(tmm, 0L, MemoryMode.OFF_HEAP);
    this.name = name;
    this.spillable = spillable;
  }

  /** Asks Spark for {@code n} bytes; returns what Spark granted (kept). */
  public long take(long n) {
    return acquireMemory(n);
  }

  /** Gives {@code n} bytes back to Spark. */
  public void give(long n) {
    freeMemory(n);
  }

  /** Gives everything back. */
  public void giveAll() {
    long held = getUsed();
    if (held > 0) {
      freeMemory(held);
    }
  }

  @Override
  public long spill(long size, MemoryConsumer trigger) {
    spillCalls.incrementAndGet();
    spillThreads.add(Thread.currentThread());
    long freed = getUsed();
    if (!spillable || freed == 0) {
      return 0;
    }
    freeMemory(freed);
    spilledBytes.addAndGet(freed);
    return freed;
  }

  @Override
  public String toString() {
    return "SparkTestConsumer(" + name + ", used=" + getUsed() + ")";
  }
}
