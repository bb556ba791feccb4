package org.nativepool.spark;

import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * The open/in-use/closed state of a Java object that owns a native handle.
 *
 * <p>{@code state >= 0} counts the native calls in flight; {@link #CLOSED} means closed. Every
 * native call is bracketed by {@link #enter()} and {@link #exit()}, the latter in a
 * {@code finally} block, so {@link #markClosed()} during a call fails loudly instead of freeing the
 * handle under it. Calls may nest (a spiller shrinking its own reservation from inside that
 * reservation's {@code tryGrow}).
 */
abstract class HandleGuard {
  private static final int CLOSED = -1;

  private static final AtomicIntegerFieldUpdater<HandleGuard> STATE =
      AtomicIntegerFieldUpdater.newUpdater(HandleGuard.class, "state");

  @SuppressWarnings("unused") // updated through STATE
  private volatile int state;

  /** Names this object in messages, e.g. {@code reservation 'sort'}. */
  abstract String describe();

  /**
   * Marks one native call in flight. Must be paired with {@link #exit()} in a {@code finally}.
   *
   * @throws IllegalStateException "nativepool: … is closed"
   */
  final void enter() {
    for (; ; ) {
      int s = state;
      if (s == CLOSED) {
        throw new IllegalStateException("nativepool: " + describe() + " is closed");
      }
      if (STATE.compareAndSet(this, s, s + 1)) {
        return;
      }
    }
  }

  /** Ends a call begun with {@link #enter()}. */
  final void exit() {
    STATE.decrementAndGet(this);
  }

  /**
   * Closes the state if no native call is in flight.
   *
   * @return true if this call closed it, false if it was closed already
   * @throws IllegalStateException if native calls are in flight; the state is unchanged
   */
  final boolean markClosed() {
    for (; ; ) {
      int s = state;
      if (s == CLOSED) {
        return false;
      }
      if (s > 0) {
        throw new IllegalStateException(
            "nativepool: " + describe() + " is in use by " + s + " native call(s); close refused");
      }
      if (STATE.compareAndSet(this, 0, CLOSED)) {
        return true;
      }
    }
  }

  /** Whether {@link #markClosed()} has succeeded. */
  final boolean guardClosed() {
    return state == CLOSED;
  }
}
