package org.nativepool.spark.arrow;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.arrow.memory.AllocationListener;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;
import org.nativepool.spark.NativeReservation;
import org.nativepool.spark.NativeSpiller;
import org.nativepool.spark.TaskPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Spark task's Arrow allocators, on the side of the C Data Interface rule of {@code
 * ffi/doc.go}: the producer pays while the buffers live, the other side only tracks.
 *
 * <ul>
 *   <li>{@link #producer()}: for buffers Java makes. A {@link RootAllocator} whose {@link
 *       PoolAllocationListener} charges every buffer to the reservation {@value #JAVA_CONSUMER} of
 *       the task's native pool, so Java's Arrow memory, the native operators' memory and Spark's
 *       view of the task are one budget. It is bounded by the pool: a buffer the pool (that is,
 *       Spark) refuses throws {@link ArrowMemoryExhaustedException}, unlike Comet's {@code
 *       RootAllocator(Long.MAX_VALUE)}. Its own Arrow limit is {@code Long.MAX_VALUE}: the pool is
 *       the only gate, so there is one refusal message.
 *   <li>{@link #importer()}: for buffers Go made and exported ({@link NativeBatch#exportTo}). A
 *       {@link RootAllocator} with {@link AllocationListener#NOOP} and no limit: Go keeps charging
 *       those bytes until Java releases them, so charging them here would count them twice, and
 *       refusing them would free nothing (they exist already). It tracks them ({@code
 *       getAllocatedMemory}) and reports them if they leak.
 *   <li>{@link #newNativeReservation}: reservations for native operators; their Go allocators are
 *       closed with this object, leak reports first.
 * </ul>
 *
 * <p>{@link #close()} (from the task completion listener, for {@link #forCurrentTask()}), in this
 * order: closes the native reservations' Go allocators (each leak report is logged and kept in
 * {@link #leakReports()}; leaked Go batches are released, which also releases any Java buffers they
 * imported), then the importer and the producer (Arrow's leak report, "Memory was leaked", is
 * logged and kept), then the reservations, which hands every byte still charged back to Spark
 * before Spark's own leak check. Leaked Java buffers cannot be freed (something still references
 * them, and Arrow refuses to release into a closed allocator); their bytes are returned to Spark
 * all the same and never given back twice. {@code close()} never throws for a leak: it reports.
 *
 * <p>Safe for concurrent use by the task's threads.
 */
public final class TaskArrowAllocators implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(TaskArrowAllocators.class);

  /** The consumer name of the reservation the producer allocator charges. */
  public static final String JAVA_CONSUMER = "arrow-java";

  /** One per running task attempt opened through {@link #forCurrentTask()}. */
  private static final ConcurrentHashMap<Long, TaskArrowAllocators> TASKS =
      new ConcurrentHashMap<>();

  private final TaskPool pool;
  private final NativeReservation javaReservation;
  private final PoolAllocationListener listener;
  private final RootAllocator producer;
  private final RootAllocator importer;
  private final Set<NativeReservation> nativeReservations = ConcurrentHashMap.newKeySet();
  private final List<String> leakReports = Collections.synchronizedList(new ArrayList<>());
  private volatile boolean closed;

  private TaskArrowAllocators(TaskPool pool) {
    this.pool = pool;
    String task = "task-" + pool.taskAttemptId();
    this.javaReservation = pool.newReservation(JAVA_CONSUMER, false, null);
    this.listener = new PoolAllocationListener(javaReservation);
    this.producer = new RootAllocator(listener, Long.MAX_VALUE);
    this.importer = new RootAllocator(AllocationListener.NOOP, Long.MAX_VALUE);
    LOG.debug("nativepool: Arrow allocators of {} open", task);
  }

  /**
   * The allocators of the task running on this thread, made on first call (over {@link
   * TaskPool#openForCurrentTask()}) and closed by a task completion listener, which runs before the
   * pool's own listener and so before Spark's leak check. Later calls in the same task return the
   * same object.
   *
   * @throws IllegalStateException if this is not a task thread, the plugin is not initialised, or
   *     the task has completed
   */
  public static TaskArrowAllocators forCurrentTask() {
    TaskContext ctx = TaskContext.get();
    if (ctx == null) {
      throw new IllegalStateException(
          "nativepool: no TaskContext on thread '"
              + Thread.currentThread().getName()
              + "'; open the task's Arrow allocators on the task's thread");
    }
    long id = ctx.taskAttemptId();
    TaskArrowAllocators cur = TASKS.get(id);
    if (cur != null && !cur.closed) {
      return cur;
    }
    if (ctx.isCompleted()) {
      throw new IllegalStateException(
          "nativepool: task " + id + " completed; cannot open Arrow allocators");
    }
    // The task thread is the only one that opens for this task, so no race on TASKS here.
    TaskArrowAllocators fresh = new TaskArrowAllocators(TaskPool.openForCurrentTask());
    TASKS.put(id, fresh);
    // Registered after the pool's listener, so it runs before it (listeners run in reverse).
    ctx.addTaskCompletionListener(
        (TaskCompletionListener)
            c -> {
              TASKS.remove(id, fresh);
              fresh.close();
            });
    return fresh;
  }

  /**
   * The allocators of a task over an explicit pool, for tests and embedders that build Spark's
   * memory managers directly. No listener is registered: the caller closes this object, then the
   * pool. The pool stays the caller's.
   *
   * @throws IllegalStateException if the pool is closed
   */
  public static TaskArrowAllocators open(TaskPool pool) {
    Objects.requireNonNull(pool, "pool");
    return new TaskArrowAllocators(pool);
  }

  /** The allocator for Java-made buffers, charged to the pool; see the class comment. */
  public BufferAllocator producer() {
    return producer;
  }

  /** The allocator for Go-made buffers imported into Java, tracking only; see the class comment. */
  public BufferAllocator importer() {
    return importer;
  }

  /** The reservation {@link #producer()} charges ({@value #JAVA_CONSUMER}). */
  public NativeReservation javaReservation() {
    return javaReservation;
  }

  /** The producer's listener: charged bytes, refusals, late releases. */
  public PoolAllocationListener listener() {
    return listener;
  }

  /** The task's pool. */
  public TaskPool pool() {
    return pool;
  }

  /**
   * A new reservation in the task's pool for a native operator (for {@link NativeBatch#importFrom}
   * and {@link NativeBatch#copy}); its Go allocator is closed, and its leak report collected, by
   * {@link #close()}, which then closes the reservation.
   *
   * @param name the consumer name, as refusals and leak reports name it
   * @param spiller called when Spark asks the pool for memory back, or null
   * @throws IllegalStateException if this object or the pool is closed
   */
  public NativeReservation newNativeReservation(String name, NativeSpiller spiller) {
    Objects.requireNonNull(name, "name");
    if (closed) {
      throw new IllegalStateException("nativepool: Arrow allocators of " + pool + " are closed");
    }
    NativeReservation r = pool.newReservation(name, spiller != null, spiller);
    nativeReservations.add(r);
    return r;
  }

  /** {@link #newNativeReservation(String, NativeSpiller)} without a spiller. */
  public NativeReservation newNativeReservation(String name) {
    return newNativeReservation(name, null);
  }

  /** The leak reports collected by {@link #close()} (Go allocators first, then Java's). */
  public List<String> leakReports() {
    synchronized (leakReports) {
      return new ArrayList<>(leakReports);
    }
  }

  /** Whether {@link #close()} has run. */
  public boolean isClosed() {
    return closed;
  }

  /**
   * Reports and releases everything the task's Arrow allocators still hold; see the class comment
   * for the order. Idempotent; never throws for a leak (it is logged and kept in {@link
   * #leakReports()}). If this object opened the pool ({@link #forCurrentTask()}), the pool's own
   * completion listener closes it afterwards.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (NativeReservation r : nativeReservations) {
      if (r.isClosed()) {
        continue;
      }
      try {
        report("Go allocator of '" + r.name() + "'", NativeArrow.closeAllocator(r));
        r.close();
      } catch (RuntimeException e) {
        LOG.error("nativepool: closing the Go Arrow allocator of '{}' failed", r.name(), e);
      }
    }
    nativeReservations.clear();
    closeJava(importer);
    closeJava(producer);
    listener.close();
    javaReservation.close();
  }

  /** Closes a Java allocator; a leak (Arrow's IllegalStateException) is reported, not thrown. */
  private void closeJava(RootAllocator a) {
    long held = a.getAllocatedMemory();
    String verbose = held != 0 ? a.toVerboseString() : null;
    try {
      a.close();
    } catch (IllegalStateException e) {
      report(
          "Java allocator of task " + pool.taskAttemptId(),
          e.getMessage() + (verbose != null ? "\n" + verbose : ""));
    }
  }

  private void report(String what, String report) {
    if (report == null) {
      return;
    }
    leakReports.add(report);
    LOG.warn("nativepool: Arrow leak at task end, {}: {}", what, report);
  }

  @Override
  public String toString() {
    return "TaskArrowAllocators(task="
        + pool.taskAttemptId()
        + ", javaCharged="
        + listener.charged()
        + (closed ? ", closed)" : ")");
  }
}
