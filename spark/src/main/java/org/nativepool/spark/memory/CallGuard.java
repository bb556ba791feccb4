package org.nativepool.spark.memory;

import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * The open/in-use/closed state of a Java object that owns a native handle.
 *
 * <p>{@code state >= 0} counts the native calls in flight; {@link #CLOSED} means closed, and the
 * {@link #CLOSING} bit marks a close that waits for the calls in flight. Every native call is
 * bracketed by {@link #enter()} and {@link #exit()}, the latter in a {@code finally} block, so a
 * close during a call either fails loudly ({@link #markClosed()}) or waits for it ({@link
 * #awaitClosed()}) instead of freeing the handle under it. Calls may nest (a spiller shrinking its
 * own reservation from inside that reservation's {@code tryGrow}).
 *
 * <p>A guard may have a parent (a reservation's pool): every call on it is then also a call on the
 * parent, so the parent's close sees the calls of all its children at once and can refuse or wait
 * for them atomically, before it closes any child.
 */
abstract class CallGuard {
  private static final int CLOSED = -1;

  /** Set by {@link #awaitClosed()} while calls drain; the low bits still count them. */
  private static final int CLOSING = 1 << 30;

  private static final AtomicIntegerFieldUpdater<CallGuard> STATE =
      AtomicIntegerFieldUpdater.newUpdater(CallGuard.class, "state");

  @SuppressWarnings("unused") // updated through STATE
  private volatile int state;

  /** The guard every call on this one also enters, or null. */
  private final CallGuard parent;

  /** Wakes {@link #awaitClosed()} when the last call in flight exits. */
  private final Object drained = new Object();

  CallGuard() {
    this(null);
  }

  /**
   * @param parent the guard every call on this one also enters (a reservation's pool), or null
   */
  CallGuard(CallGuard parent) {
    this.parent = parent;
  }

  /** Names this object in messages, e.g. {@code reservation 'sort'}. */
  abstract String describe();

  /**
   * Marks one native call in flight, on this guard and its parent. Must be paired with {@link
   * #exit()} in a {@code finally}.
   *
   * @throws IllegalStateException "nativepool: … is closed" (or "… is closing"), for this guard or
   *     its parent; nothing is then counted
   */
  final void enter() {
    String refused = enterSelf();
    if (refused != null) {
      throw new IllegalStateException(refused);
    }
    if (parent != null) {
      refused = parent.enterSelf();
      if (refused != null) {
        exitSelf();
        throw new IllegalStateException(refused);
      }
    }
  }

  /** Ends a call begun with {@link #enter()}. */
  final void exit() {
    exitSelf();
    if (parent != null) {
      parent.exitSelf();
    }
  }

  /** Counts one call on this guard alone; returns null, or why it was refused. */
  private String enterSelf() {
    for (; ; ) {
      int s = state;
      if (s == CLOSED) {
        return "nativepool: " + describe() + " is closed";
      }
      if ((s & CLOSING) != 0) {
        return "nativepool: " + describe() + " is closing";
      }
      if (STATE.compareAndSet(this, s, s + 1)) {
        return null;
      }
    }
  }

  private void exitSelf() {
    if (STATE.decrementAndGet(this) == CLOSING) {
      synchronized (drained) {
        drained.notifyAll();
      }
    }
  }

  /**
   * Closes the state if no native call is in flight (on this guard or, through them, its
   * children). Never blocks, so it is safe from inside a call (a spiller) on the same thread.
   *
   * @return true if this call closed it, false if it was closed already or a waiting close is under
   *     way
   * @throws IllegalStateException if native calls are in flight; the state is unchanged
   */
  final boolean markClosed() {
    return markClosed(0);
  }

  /**
   * {@link #markClosed()} that also counts {@code otherCalls} native calls in flight that are not
   * entered on this guard (a pool counts Spark's spills of its task's owner): with any, it refuses.
   */
  final boolean markClosed(int otherCalls) {
    for (; ; ) {
      int s = state;
      if (s == CLOSED || (s & CLOSING) != 0) {
        return false;
      }
      if (s + otherCalls > 0) {
        throw new IllegalStateException(
            "nativepool: "
                + describe()
                + " is in use by "
                + (s + otherCalls)
                + " native call(s); close refused");
      }
      if (STATE.compareAndSet(this, 0, CLOSED)) {
        return true;
      }
    }
  }

  /**
   * Closes the state once the native calls in flight have returned: new calls are refused at once
   * ("… is closing"), and this waits, uninterruptibly (an interrupt is kept for the caller), until
   * the last call in flight exits. It must not be called on a thread that is itself inside a call
   * on this guard (it would wait for itself); a task completion listener never is.
   *
   * @return true if this call closed it, false if it was closed already or another close is under
   *     way
   */
  final boolean awaitClosed() {
    for (; ; ) {
      int s = state;
      if (s == CLOSED || (s & CLOSING) != 0) {
        return false;
      }
      if (s == 0) {
        if (STATE.compareAndSet(this, 0, CLOSED)) {
          return true;
        }
      } else if (STATE.compareAndSet(this, s, s | CLOSING)) {
        break;
      }
    }
    boolean interrupted = false;
    synchronized (drained) {
      while (state != CLOSING) {
        try {
          drained.wait();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      state = CLOSED; // CLOSING with no call in flight: nothing else writes it now
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return true;
  }

  /** The native calls in flight now (0 when closed); a snapshot, for messages. */
  final int callsInFlight() {
    int s = state;
    return s == CLOSED ? 0 : s & ~CLOSING;
  }

  /** Whether a close has succeeded ({@link #awaitClosed()}: has finished waiting). */
  final boolean guardClosed() {
    return state == CLOSED;
  }
}
