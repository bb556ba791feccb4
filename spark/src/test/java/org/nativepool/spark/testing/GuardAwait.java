package org.nativepool.spark.testing;

import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.nativepool.spark.jni.Natives;

/**
 * Waiting in the pod guard's tests: timing on a busy machine is never asserted, every expectation
 * is polled with a generous deadline, and a timeout names what the guard did (its episodes and the
 * process's figures).
 */
public final class GuardAwait {
  private static final long DEADLINE_SECONDS = 60;

  private GuardAwait() {}

  /** Polls {@code done} until it is true, for at most 60 s. */
  public static void until(String what, BooleanSupplier done) throws InterruptedException {
    value(what, () -> done.getAsBoolean() ? Boolean.TRUE : null);
  }

  /** Polls {@code value} until it is non-null, for at most 60 s, and returns it. */
  public static <T> T value(String what, Supplier<T> value) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
    while (true) {
      T v = value.get();
      if (v != null) {
        return v;
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError(
            "timed out waiting for "
                + what
                + "; episodes "
                + Natives.guardEpisodes()
                + ", "
                + Natives.processStats());
      }
      Thread.sleep(50);
    }
  }
}
