package org.nativepool.spark.jni;

/**
 * The {@link Upstream} that owns a task's pool, with the two fields the native code writes. An
 * open hands Go a candidate owner ({@link Natives#openPool}); the open that creates the task's
 * pool registers it (one JNI global ref) and stores the Go task handle in it, through which Spark's
 * spill of the owner's consumer reaches the pool ({@link Natives#reclaimTask}); every successful
 * open tells its candidate which owner the task has ({@link #registeredOwner()}), so a join learns
 * the owner from Go and no Java-side map of tasks is kept.
 *
 * <p>The fields' names and types are part of the contract with {@code jni/np.c}, which looks them
 * up by name; a subclass must not hide them.
 */
public abstract class TaskOwner implements Upstream {
  /**
   * The Go task handle of the pool this object owns: written by Go ({@code SetLongField}, in {@code
   * openPool0}) when an open given this object creates the task's pool, before any other open can
   * reach that pool, so no spill of the task can find it unset. 0 if none.
   */
  private volatile long taskHandle;

  /**
   * Written by Go ({@code SetObjectField}) at the end of every successful {@code openPool0} given
   * this object: the task's registered owner (this object, or the one the creating open
   * registered).
   */
  private volatile TaskOwner registeredOwner;

  /** For subclasses. */
  protected TaskOwner() {}

  /**
   * The Go task handle of the task pool this object owns, or 0 if it owns none (it was only a
   * candidate of a join, or never opened a pool). Stale once that pool has closed.
   */
  public final long taskHandle() {
    return taskHandle;
  }

  /**
   * The task's owner as Go answered the last successful open given this object: this object if
   * that open created the task's pool, else the owner the creating open registered. Null before any
   * open. Read by the opening thread right after the open.
   */
  public final TaskOwner registeredOwner() {
    return registeredOwner;
  }
}
