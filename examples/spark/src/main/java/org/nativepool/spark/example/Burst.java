package org.nativepool.spark.example;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import org.apache.spark.storage.StorageUtils;

/**
 * Memory the JVM takes outside any accounting, on a thread of its own, during the measured run: as
 * Netty's 16 MiB chunks, Spark's spill-file readers and other direct buffers do, nobody reserves
 * it, and a pod dies of it all the same. The burst is direct buffers ({@code
 * ByteBuffer.allocateDirect}, which zeroes, so every page is touched at once), taken in 4 MiB steps
 * over the ramp (or all at once without one), held, then freed ({@code StorageUtils.dispose}: the
 * pages go back at once, not at the next GC).
 *
 * <p>It starts {@link Plan#atMillis} into the run, and not before the native pools hold half the
 * off-heap budget: the burst is to overlap native memory, which is what makes it deadly without the
 * pod guard and what the guard can make give way.
 */
final class Burst implements AutoCloseable {
  /** The ramp's step: a quarter of a Netty chunk. */
  static final long STEP = 4L << 20;

  /** How often the thread checks whether it may start. */
  private static final long POLL_MS = 10;

  /**
   * A burst's shape.
   *
   * @param bytes the burst's size; 0 for none
   * @param atMillis when it starts, from the start of the measured run
   * @param rampMillis how long it takes to reach its size; 0: all at once
   * @param holdMillis how long it is held at its size before it is freed
   */
  record Plan(long bytes, long atMillis, long rampMillis, long holdMillis)
      implements java.io.Serializable {
    /** No burst. */
    static final Plan NONE = new Plan(0, 0, 0, 0);

    Plan {
      if (bytes < 0 || atMillis < 0 || rampMillis < 0 || holdMillis < 0) {
        throw new IllegalArgumentException(
            "sortdemo: --burst, --burst-at, --burst-ramp and --burst-hold must not be negative");
      }
    }

    /** Whether there is a burst. */
    boolean any() {
      return bytes > 0;
    }

    /** The shape in words, for the report. */
    String describe() {
      return String.format(
          java.util.Locale.ROOT,
          "%s of direct buffers %s, %.1f s into the run once the native pools held memory,"
              + " held %.1f s",
          SortDemo.size(bytes),
          rampMillis == 0
              ? "at once"
              : String.format(java.util.Locale.ROOT, "over %.1f s", rampMillis / 1000.0),
          atMillis / 1000.0,
          holdMillis / 1000.0);
    }
  }

  private final Plan plan;
  private final long t0;
  private final LongSupplier nativeHeld;
  private final long startWhenHeld;
  private final Thread thread;
  private final List<ByteBuffer> buffers = new ArrayList<>();

  /** Bytes of the burst allocated now (the samples' {@code burst} column). */
  private volatile long held;

  /** When the burst began, reached its size and was freed, ms from {@code t0}; -1 not yet. */
  private volatile long startedMs = -1, fullMs = -1, freedMs = -1;

  /** Why the thread ended early, if it did. */
  private volatile Throwable failure;

  private volatile boolean stop;

  private Burst(Plan plan, long t0, LongSupplier nativeHeld, long startWhenHeld) {
    this.plan = plan;
    this.t0 = t0;
    this.nativeHeld = nativeHeld;
    this.startWhenHeld = startWhenHeld;
    this.thread = new Thread(this::run, "nativepool-demo-burst");
    this.thread.setDaemon(true);
  }

  /**
   * Starts the burst of {@code plan} (none: a burst that never allocates), timed from {@code t0}
   * ({@code System.nanoTime()}), once {@code nativeHeld} reaches {@code startWhenHeld}.
   */
  static Burst start(Plan plan, long t0, LongSupplier nativeHeld, long startWhenHeld) {
    Burst b = new Burst(plan, t0, nativeHeld, startWhenHeld);
    if (plan.any()) {
      b.thread.start();
    }
    return b;
  }

  /** Bytes of the burst allocated now. */
  long held() {
    return held;
  }

  /** When the burst began, from the start of the run (ms); -1 if it did not. */
  long startedMs() {
    return startedMs;
  }

  /** When it reached its full size (ms); -1 if it did not. */
  long fullMs() {
    return fullMs;
  }

  /** When it was freed (ms); -1 if it was not before the run ended. */
  long freedMs() {
    return freedMs;
  }

  /** Why the burst thread failed, or null. */
  Throwable failure() {
    return failure;
  }

  private long now() {
    return (System.nanoTime() - t0) / 1_000_000;
  }

  private void run() {
    try {
      while (!stop && (now() < plan.atMillis() || nativeHeld.getAsLong() < startWhenHeld)) {
        Thread.sleep(POLL_MS);
      }
      if (stop) {
        return;
      }
      startedMs = now();
      if (plan.rampMillis() == 0) {
        take(plan.bytes());
      } else {
        long steps = Math.max(1, (plan.bytes() + STEP - 1) / STEP);
        long pause = plan.rampMillis() / steps;
        for (long i = 0; i < steps && !stop; i++) {
          take(Math.min(STEP, plan.bytes() - held));
          if (i + 1 < steps) {
            Thread.sleep(pause);
          }
        }
      }
      fullMs = now();
      long until = fullMs + plan.holdMillis();
      while (!stop && now() < until) {
        Thread.sleep(POLL_MS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Throwable t) {
      failure = t;
    } finally {
      free();
    }
  }

  /** Allocates n bytes of direct buffers, in pieces of at most one step. */
  private void take(long n) {
    while (n > 0) {
      int piece = (int) Math.min(n, STEP);
      synchronized (buffers) {
        buffers.add(ByteBuffer.allocateDirect(piece)); // zeroed: every page touched
      }
      held += piece;
      n -= piece;
    }
  }

  /** Frees every buffer at once. */
  private void free() {
    synchronized (buffers) {
      if (buffers.isEmpty()) {
        return;
      }
      for (ByteBuffer b : buffers) {
        StorageUtils.dispose(b);
      }
      buffers.clear();
    }
    held = 0;
    freedMs = now();
  }

  /** Stops the burst early if it still runs, freeing it, and waits for the thread. */
  @Override
  public void close() {
    stop = true;
    if (thread.isAlive()) {
      thread.interrupt();
      try {
        thread.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    free();
  }
}
