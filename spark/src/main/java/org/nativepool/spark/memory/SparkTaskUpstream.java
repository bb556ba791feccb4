package org.nativepool.spark.memory;

import org.nativepool.spark.config.Bytes;



import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.TaskContext;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.memory.MemoryConsumer;
import org.apache.spark.memory.MemoryMode;
import org.apache.spark.memory.TaskMemoryManager;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.TaskOwner;
import org.nativepool.spark.jni.Upstream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Spark task's {@link Upstream}: the task's native pool borrows from the task's
 * {@link TaskMemoryManager} through a private OFF_HEAP {@link MemoryConsumer}, and Spark's
 * {@code spill()} on that consumer reaches the pool's reclaim.
 *
 * <p>Accounting: an {@link AtomicLong} mirrors the bytes Spark granted and the pool has not yet
 * released; the consumer's {@code getUsed()} returns it, so Spark sees the native bytes and can
 * pick them as a spill victim. The mirror never goes negative: a release of more than it holds is
 * rejected before Spark hears of it. Spark is never asked for 0 bytes.
 *
 * <p>Ownership: the object an open gives {@code openPool0} is only a candidate; the open that
 * creates the task's pool registers it (its one JNI global ref, and the Go task handle stored in
 * it), and every later open of the task (a join) learns that owner from Go. So one object per task
 * pool owns the task's Spark consumer and the one Go task handle; {@code spill()} is one native
 * call through that handle. The Go registry is the only record of which pool a task has: no Java
 * map or list of pools is kept.
 *
 * <p>Lifetime: one per task pool. After {@link #close()} (from the task completion listener
 * registered by the creating open, which runs after the listeners of the pool's handles and before
 * Spark's leak check) every acquire is refused and a late release is counted and dropped, never
 * forwarded to Spark: Spark has already cleaned up the task.
 *
 * <p>Spill metrics, so that Spark's UI and event log count native spills: the bytes each
 * Spark-requested spill of the consumer releases count as the task's {@code memoryBytesSpilled};
 * what the task's Go engines report with {@code jni.ReportSpill} (bytes their spills wrote, memory
 * their own spills freed) is taken after each such spill and at {@link #close()}, and what Java
 * spillers report through {@link TaskPool#reportSpill} is added at once ({@link #recordSpill}).
 *
 * <p>Safe for concurrent use by the task's threads and the Go side's threads.
 */
public final class SparkTaskUpstream extends TaskOwner implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SparkTaskUpstream.class);

  private final TaskMemoryManager tmm;
  private final long taskAttemptId;
  private final NativeMemoryConsumer consumer;

  /** The task's metrics, or null for an upstream built over a bare TaskMemoryManager. */
  private final TaskMetrics metrics;

  /** Spill bytes recorded in {@link #metrics}, or that would have been (no metrics). */
  private final AtomicLong memorySpilled = new AtomicLong();

  private final AtomicLong diskSpilled = new AtomicLong();

  /** Bytes granted by Spark and not yet released; what {@code getUsed()} reports. */
  private final AtomicLong mirror = new AtomicLong();

  /** Releases that arrived after close: counted, never forwarded. */
  private final AtomicLong lateReleases = new AtomicLong();

  private final AtomicLong lateReleasedBytes = new AtomicLong();

  /** Spills of this consumer in flight ({@link #spillsInFlight()}). */
  private final AtomicInteger spillsInFlight = new AtomicInteger();

  /** Set once by {@link #close()}; read before and after each acquire. */
  private volatile boolean closed;

  /**
   * An upstream for the task running on this thread.
   *
   * @param ctx the task's context; must be called on the task thread, where
   *     {@code TaskContext.get()} is this context
   */
  public SparkTaskUpstream(TaskContext ctx) {
    this(
        Objects.requireNonNull(ctx, "ctx").taskMemoryManager(),
        ctx.taskAttemptId(),
        ctx.taskMetrics());
  }

  /**
   * An upstream over an explicit {@code TaskMemoryManager}, for tests that construct Spark's memory
   * managers directly.
   *
   * @param tmm the task's memory manager
   * @param taskAttemptId the id {@code tmm} was built with
   */
  public SparkTaskUpstream(TaskMemoryManager tmm, long taskAttemptId) {
    this(tmm, taskAttemptId, null);
  }

  private SparkTaskUpstream(TaskMemoryManager tmm, long taskAttemptId, TaskMetrics metrics) {
    this.tmm = Objects.requireNonNull(tmm, "tmm");
    this.taskAttemptId = taskAttemptId;
    this.consumer = new NativeMemoryConsumer();
    this.metrics = metrics;
  }

  /**
   * Adds a native spill to the task's spill metrics: {@code memory} bytes to {@code
   * memoryBytesSpilled}, {@code disk} bytes to {@code diskBytesSpilled}. Without task metrics (an
   * upstream over a bare TaskMemoryManager) they are only counted here ({@link
   * #memoryBytesSpilled()}). Spark's accumulators are not thread-safe, so the increments of this
   * task are serialised on its metrics.
   *
   * @throws IllegalArgumentException for a negative size
   */
  void recordSpill(long memory, long disk) {
    if (memory < 0 || disk < 0) {
      throw new IllegalArgumentException(
          "nativepool: task "
              + taskAttemptId
              + " spill of memory "
              + memory
              + ", disk "
              + disk
              + " bytes: negative size");
    }
    if (memory == 0 && disk == 0) {
      return;
    }
    memorySpilled.addAndGet(memory);
    diskSpilled.addAndGet(disk);
    if (metrics != null) {
      synchronized (metrics) {
        metrics.incMemoryBytesSpilled(memory);
        metrics.incDiskBytesSpilled(disk);
      }
    }
  }

  /**
   * Adds what the task's Go engines reported since the last take ({@code takeSpill0}), if this
   * object owns a pool (so the library is loaded). A failure costs a metric, never the task: it is
   * logged.
   */
  private void takeEngineSpills() {
    if (taskHandle() == 0) {
      return;
    }
    try {
      long[] s = Natives.takeSpill(taskAttemptId);
      recordSpill(s[0], s[1]);
    } catch (RuntimeException | LinkageError e) {
      LOG.warn(
          "nativepool: task {}: native spill bytes not added to its metrics", taskAttemptId, e);
    }
  }

  /** Native spill bytes this task added to {@code memoryBytesSpilled}. */
  public long memoryBytesSpilled() {
    return memorySpilled.get();
  }

  /** Native spill bytes this task added to {@code diskBytesSpilled}. */
  public long diskBytesSpilled() {
    return diskSpilled.get();
  }

  /** The task attempt this upstream serves. */
  public long taskAttemptId() {
    return taskAttemptId;
  }

  /** Bytes granted by Spark and not yet released (the consumer's {@code getUsed()}). */
  public long used() {
    return mirror.get();
  }

  /** Releases that arrived after {@link #close()} and were dropped. */
  public long lateReleases() {
    return lateReleases.get();
  }

  /** Bytes of the releases counted by {@link #lateReleases()}. */
  public long lateReleasedBytes() {
    return lateReleasedBytes.get();
  }

  /** Whether {@link #close()} has run. */
  public boolean isClosed() {
    return closed;
  }

  /** The Spark-side consumer, as Spark's {@code showMemoryUsage} and spill ordering see it. */
  MemoryConsumer memoryConsumer() {
    return consumer;
  }

  /**
   * Called from native code through JNI. Asks the task's {@code TaskMemoryManager} for {@code n}
   * bytes on behalf of the native pool; may block in Spark's 1/2N wait and may spill other
   * consumers of the task (including, last, this one, which re-enters native code).
   *
   * @return bytes granted, {@code 0 <= granted <= n}; the mirror has grown by that much
   * @throws IllegalArgumentException if {@code n <= 0}
   * @throws IllegalStateException after {@link #close()}
   */
  @Override
  public long acquireMemory(long n) {
    if (n <= 0) {
      throw new IllegalArgumentException(
          "nativepool: task " + taskAttemptId + " acquire of " + n + " bytes; must be > 0");
    }
    ensureNotClosed();
    long got = tmm.acquireExecutionMemory(n, consumer);
    long granted = Math.max(0L, Math.min(got, n));
    if (got > n) {
      // Spark documents got <= n; if it ever grants more, hand the excess straight back so that
      // Spark's balance and ours stay one number.
      tmm.releaseExecutionMemory(got - n, consumer);
    }
    mirror.addAndGet(granted);
    if (closed) {
      // close() ran while Spark was deciding: this grant came after the completion listener, so
      // give it back now (see acquire refusal above) rather than leave it for the leak check.
      if (granted > 0) {
        mirror.addAndGet(-granted);
        tmm.releaseExecutionMemory(granted, consumer);
      }
      ensureNotClosed();
    }
    if (granted < n && LOG.isDebugEnabled()) {
      // Routine (the pool turns it into a refusal or overcommit); the consumers' figures say who
      // holds the task's memory.
      LOG.debug(
          "nativepool: task {} asked Spark for {} bytes and got {}; task holds {} in total",
          taskAttemptId,
          n,
          granted,
          tmm.getMemoryConsumptionForThisTask());
      tmm.showMemoryUsage();
    }
    if (LOG.isTraceEnabled()) {
      LOG.trace(
          "nativepool: task {} acquired {} of {} bytes (used {})",
          taskAttemptId,
          granted,
          n,
          mirror.get());
    }
    return granted;
  }

  /**
   * Called from native code through JNI. Gives {@code n} bytes back to the task's
   * {@code TaskMemoryManager}. Returns nothing; the mirror has shrunk by {@code n}. If Spark's
   * release throws, the mirror is unchanged (Spark still counts the bytes) and the throwable goes
   * on to the pool, which keeps the bytes as owed. After {@link #close()} the release is counted as
   * late and dropped.
   *
   * @throws IllegalArgumentException if {@code n <= 0}
   * @throws IllegalStateException if {@code n} exceeds the bytes held; nothing is released
   */
  @Override
  public void releaseMemory(long n) {
    if (n <= 0) {
      throw new IllegalArgumentException(
          "nativepool: task " + taskAttemptId + " release of " + n + " bytes; must be > 0");
    }
    if (closed) {
      lateReleases.incrementAndGet();
      lateReleasedBytes.addAndGet(n);
      LOG.warn(
          "nativepool: task {} completed; late release of {} bytes ignored", taskAttemptId, n);
      return;
    }
    long cur;
    do {
      cur = mirror.get();
      if (n > cur) {
        throw new IllegalStateException(
            "nativepool: task "
                + taskAttemptId
                + " releases "
                + n
                + " bytes but holds only "
                + cur
                + " from Spark; release refused");
      }
    } while (!mirror.compareAndSet(cur, cur - n));
    boolean released = false;
    try {
      tmm.releaseExecutionMemory(n, consumer);
      released = true;
    } finally {
      if (!released) {
        // Spark kept the bytes (its release threw): so does the mirror, as the pool keeps them as
        // owed and hands them back at its next sweep.
        mirror.addAndGet(n);
      }
    }
    if (LOG.isTraceEnabled()) {
      LOG.trace("nativepool: task {} released {} bytes (used {})", taskAttemptId, n, cur - n);
    }
  }

  /**
   * Marks the task completed: later acquires throw, later releases are counted and dropped. Bytes
   * still held are left for Spark's leak check (and logged), because the native pool still
   * believes it holds them. Idempotent.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    takeEngineSpills();
    long left = mirror.get();
    if (left != 0) {
      LOG.error(
          "nativepool: task {} upstream closed while still holding {} bytes from Spark"
              + " (a pool handle of the task is still open)",
          taskAttemptId,
          left);
    }
  }

  /**
   * Spark's spills of this consumer now in flight; a {@link TaskPool} of the task refuses to close
   * while one runs (the spiller it calls may close it on the same thread, see {@link
   * TaskPool#close()}).
   */
  int spillsInFlight() {
    return spillsInFlight.get();
  }

  /**
   * Spark's spill of our consumer: one native call that reaches the task's pool through the Go task
   * handle. A pool that has closed (stale handle) reclaims nothing and returns 0.
   */
  private long spill(long size) {
    long task = taskHandle();
    if (closed || size <= 0 || task == 0) {
      return 0;
    }
    spillsInFlight.incrementAndGet();
    long freed;
    try {
      freed = Natives.reclaimTask(task, size);
    } finally {
      spillsInFlight.decrementAndGet();
    }
    // Spark's sorters count what a spill frees as memoryBytesSpilled; here that is what the pool
    // released to Spark (slack first, then what spillers freed). Engines' disk bytes are taken now
    // that their spillers have run.
    recordSpill(freed, 0);
    takeEngineSpills();
    if (LOG.isDebugEnabled()) {
      LOG.debug(
          "nativepool: task {} spill of {} bytes released {} to Spark", taskAttemptId, size, freed);
    }
    return freed;
  }

  private void ensureNotClosed() {
    if (closed) {
      throw new IllegalStateException(
          "nativepool: task " + taskAttemptId + " completed; acquire refused");
    }
  }

  @Override
  public String toString() {
    return "SparkTaskUpstream(task=" + taskAttemptId + ", used=" + mirror.get() + ")";
  }

  /**
   * The task's native bytes as Spark sees them. {@code getUsed()} is the mirror (not the
   * unsynchronised {@code used} field of the superclass, which stays 0), so Spark can pick the
   * native pool as a spill victim; {@code spill} asks the pool to reclaim.
   */
  private final class NativeMemoryConsumer extends MemoryConsumer {
    NativeMemoryConsumer() {
      super(SparkTaskUpstream.this.tmm, 0L, MemoryMode.OFF_HEAP);
    }

    @Override
    public long getUsed() {
      return mirror.get();
    }

    /**
     * Spark's spill request: returns exactly the bytes the pool released to Spark (through
     * {@link #releaseMemory}) during this call, so the mirror is already lower by that much.
     */
    @Override
    public long spill(long size, MemoryConsumer trigger) {
      return SparkTaskUpstream.this.spill(size);
    }

    @Override
    public String toString() {
      return "NativePoolConsumer(task=" + taskAttemptId + ", used=" + mirror.get() + ")";
    }
  }
}
