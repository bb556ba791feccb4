package org.nativepool.spark;

/**
 * A consumer's reservation in a task's native pool, DataFusion's {@code MemoryReservation} seen
 * from Java. Created by {@link TaskPool#newReservation(String, boolean, NativeSpiller)} and owned
 * by the caller: {@link #close()} frees it; {@link TaskPool#close()} (the task completion listener)
 * closes any still open.
 *
 * <p>Every method validates before crossing into native code: a negative size throws
 * {@link IllegalArgumentException}, a closed reservation {@link IllegalStateException}
 * ("nativepool: reservation '…' is closed"). Safe for concurrent use; {@link #close()} while
 * another thread is inside a native call on this reservation throws instead of freeing under it.
 */
public final class NativeReservation extends HandleGuard implements AutoCloseable {
  private final TaskPool pool;
  private final long handle;
  private final String name;
  private final boolean canSpill;

  /** Kept reachable while native code may call it back. */
  private final NativeSpiller spiller;

  /** The refusal text of the last tryGrow, or null if it succeeded. */
  private volatile String lastRefusal;

  NativeReservation(
      TaskPool pool, long handle, String name, boolean canSpill, NativeSpiller spiller) {
    this.pool = pool;
    this.handle = handle;
    this.name = name;
    this.canSpill = canSpill;
    this.spiller = spiller;
  }

  /** The consumer name given at creation (it appears in the pool's refusal and leak reports). */
  public String name() {
    return name;
  }

  /** Whether the consumer was registered as spillable. */
  public boolean canSpill() {
    return canSpill;
  }

  /** The spiller given at creation, or null. */
  public NativeSpiller spiller() {
    return spiller;
  }

  /** The pool this reservation belongs to. */
  public TaskPool pool() {
    return pool;
  }

  long handle() {
    return handle;
  }

  /**
   * Grows by {@code n} bytes if the pool agrees (for unified pools, if Spark grants them; Spark may
   * spill other consumers of the task first, and may block in its 1/2N wait). On refusal the
   * reservation and the pool are unchanged and {@link #lastRefusal()} holds the pool's message.
   *
   * @return true if grown, false if refused
   * @throws IllegalArgumentException if {@code n < 0}
   * @throws IllegalStateException if closed
   */
  public boolean tryGrow(long n) {
    checkSize("tryGrow", n);
    enter();
    try {
      String refusal = NativeBridge.tryGrow0(handle, n);
      lastRefusal = refusal;
      return refusal == null;
    } finally {
      exit();
    }
  }

  /**
   * {@link #tryGrow(long)} that throws on refusal.
   *
   * @throws NativeMemoryExhaustedException with the pool's refusal text; nothing changed
   * @throws IllegalArgumentException if {@code n < 0}
   * @throws IllegalStateException if closed
   */
  public void tryGrowOrThrow(long n) {
    checkSize("tryGrow", n);
    enter();
    try {
      String refusal = NativeBridge.tryGrow0(handle, n);
      lastRefusal = refusal;
      if (refusal != null) {
        throw new NativeMemoryExhaustedException(name, n, refusal);
      }
    } finally {
      exit();
    }
  }

  /** The refusal message of the last {@link #tryGrow(long)}, or null if it succeeded. */
  public String lastRefusal() {
    return lastRefusal;
  }

  /**
   * Grows by {@code n} bytes; never refuses (what Spark does not grant becomes the pool's
   * overcommit, repaid first on release).
   *
   * @throws IllegalArgumentException if {@code n < 0}
   * @throws IllegalStateException if closed
   */
  public void grow(long n) {
    checkSize("grow", n);
    enter();
    try {
      NativeBridge.grow0(handle, n);
    } finally {
      exit();
    }
  }

  /**
   * Shrinks by {@code n} bytes.
   *
   * @throws IllegalArgumentException if {@code n < 0} or {@code n} exceeds {@link #size()}
   * @throws IllegalStateException if closed
   */
  public void shrink(long n) {
    checkSize("shrink", n);
    enter();
    try {
      NativeBridge.shrink0(handle, n);
    } finally {
      exit();
    }
  }

  /**
   * Frees every byte of the reservation; it stays open.
   *
   * @return the bytes freed
   * @throws IllegalStateException if closed
   */
  public long free() {
    enter();
    try {
      return NativeBridge.free0(handle);
    } finally {
      exit();
    }
  }

  /**
   * The current size in bytes.
   *
   * @throws IllegalStateException if closed
   */
  public long size() {
    enter();
    try {
      return NativeBridge.size0(handle);
    } finally {
      exit();
    }
  }

  /**
   * Frees the reservation and unregisters it; idempotent.
   *
   * @throws IllegalStateException if a native call on this reservation is in flight (nothing is
   *     closed then)
   */
  @Override
  public void close() {
    if (!markClosed()) {
      return;
    }
    try {
      NativeBridge.closeReservation0(handle);
    } finally {
      pool.forget(this);
    }
  }

  /** Whether {@link #close()} has run. */
  public boolean isClosed() {
    return guardClosed();
  }

  @Override
  String describe() {
    return "reservation '" + name + "'";
  }

  private void checkSize(String op, long n) {
    if (n < 0) {
      throw new IllegalArgumentException(
          "nativepool: " + describe() + " " + op + "(" + n + "): negative size");
    }
  }

  @Override
  public String toString() {
    return "NativeReservation(" + name + ", task=" + pool.taskAttemptId() + ")";
  }
}
