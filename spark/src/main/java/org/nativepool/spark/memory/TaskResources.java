package org.nativepool.spark.memory;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Supplier;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one task attempt opened that must be closed when it ends, closed in an explicit order by
 * one task completion listener, as Gluten's {@code TaskResources} does: by ascending {@link
 * Priority}, and within a priority the last opened first. So the order never depends on who
 * registered a listener first. The order is:
 *
 * <ol>
 *   <li>{@link Priority#ARROW}: the task's Arrow allocators, which give their charges back to the
 *       task's pool and report leaked buffers while the pool is still open;
 *   <li>{@link Priority#POOL}: the task's pool handles, each closing its open reservations (a leak
 *       if they still hold bytes) and, with the last, the Go pool, which returns everything it
 *       holds to Spark;
 *   <li>{@link Priority#OWNER}: the task's Spark consumer (the pool's owner), after every handle,
 *       so Spark's figure for the task is 0 before Spark's own leak check.
 * </ol>
 *
 * <p>Spark runs the completion listeners before it checks for leaked memory and before the plugins'
 * {@code onTaskSucceeded}. A resource whose close throws does not stop the others; the first
 * failure is rethrown (the others suppressed into it) after all have closed, as Spark treats a
 * failing listener. Made by {@code ExecutorState.resourcesOf(TaskContext)}; safe for concurrent use
 * by the task's threads.
 */
public final class TaskResources {
  private static final Logger LOG = LoggerFactory.getLogger(TaskResources.class);

  /** When a resource closes at task end: lower first. */
  public enum Priority {
    /** Arrow allocators: first, while the pool is open. */
    ARROW,
    /** Task pool handles and their reservations. */
    POOL,
    /** The task's owner (Spark consumer): last. */
    OWNER
  }

  private record Entry(Priority priority, long order, String name, AutoCloseable resource) {}

  private final long taskAttemptId;

  // Guarded by this.
  private final List<Entry> entries = new ArrayList<>();
  private long opened;
  private boolean closed;

  TaskResources(long taskAttemptId) {
    this.taskAttemptId = taskAttemptId;
  }

  /** The task attempt these resources belong to. */
  public long taskAttemptId() {
    return taskAttemptId;
  }

  /**
   * Adds a resource to close at the task's end.
   *
   * @param name names it in a failure's log line
   * @throws IllegalStateException if the task has already ended (nothing is added: close it
   *     yourself)
   */
  public synchronized void add(Priority priority, String name, AutoCloseable resource) {
    if (closed) {
      throw new IllegalStateException(
          "nativepool: task " + taskAttemptId + " completed; cannot register " + name);
    }
    entries.add(new Entry(priority, opened++, name, resource));
  }

  /**
   * The task's resource of {@code type}, opening it with {@code open} and adding it at {@code
   * priority} the first time it is asked for: so one task has one of each, whoever asks.
   *
   * @throws IllegalStateException if the task has already ended
   */
  public synchronized <T extends AutoCloseable> T getOrOpen(
      Class<T> type, Priority priority, Supplier<T> open) {
    T found = find(type);
    if (found != null) {
      return found;
    }
    if (closed) {
      throw new IllegalStateException(
          "nativepool: task " + taskAttemptId + " completed; cannot open " + type.getSimpleName());
    }
    T made = open.get();
    entries.add(new Entry(priority, opened++, type.getSimpleName(), made));
    return made;
  }

  /** The task's open resource of {@code type}, or null. */
  public synchronized <T> T find(Class<T> type) {
    for (Entry e : entries) {
      if (type.isInstance(e.resource())) {
        return type.cast(e.resource());
      }
    }
    return null;
  }

  /** Whether the task has ended (its resources are closed or closing). */
  public synchronized boolean isClosed() {
    return closed;
  }

  /** Closes every resource in order (see the class comment); idempotent. */
  void closeAll() {
    List<Entry> order;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      order = new ArrayList<>(entries);
      entries.clear();
    }
    order.sort(
        Comparator.comparing(Entry::priority)
            .thenComparing(Comparator.comparingLong(Entry::order).reversed()));
    RuntimeException failure = null;
    for (Entry e : order) {
      try {
        e.resource().close();
      } catch (Exception x) {
        LOG.error("nativepool: task {}: closing {} failed", taskAttemptId, e.name(), x);
        RuntimeException r = x instanceof RuntimeException rx ? rx : new IllegalStateException(x);
        if (failure == null) {
          failure = r;
        } else {
          failure.addSuppressed(r);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
  }

  /**
   * Registers the one completion listener that closes these resources, then runs {@code
   * afterClose} (the registry forgetting them).
   */
  void listenTo(TaskContext ctx, Runnable afterClose) {
    ctx.addTaskCompletionListener(
        (TaskCompletionListener)
            c -> {
              try {
                closeAll();
              } finally {
                afterClose.run();
              }
            });
  }

  @Override
  public String toString() {
    return "TaskResources(task=" + taskAttemptId + ")";
  }
}
