package org.nativepool.spark.example;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A daemon thread that calls {@link #sample()} every period until {@link #close()}, and the CSV
 * file its rows go to: the life cycle {@link MemorySampler} and {@link LedgerSampler} share. The
 * first write failure is kept; later rows are dropped, and {@link #close()} throws it.
 */
abstract class CsvSampler implements AutoCloseable {
  private final long periodMs;
  private final String what;
  private final BufferedWriter csv;
  private final Thread thread;
  private volatile boolean stopping;
  private IOException failure; // guarded by this

  /**
   * Opens {@code csvPath} and writes {@code header} (a line, without its newline).
   *
   * @param what names the file in the error of {@link #close()}, e.g. "the samples"
   */
  CsvSampler(Path csvPath, String header, long periodMs, String threadName, String what)
      throws IOException {
    this.periodMs = periodMs;
    this.what = what;
    this.csv = Files.newBufferedWriter(csvPath, StandardCharsets.UTF_8);
    csv.write(header + "\n");
    this.thread = new Thread(this::run, threadName);
    thread.setDaemon(true);
  }

  /** Takes one sample and writes its row (with {@link #writeRow}); called on the thread. */
  abstract void sample();

  /** Starts the thread. */
  final void startThread() {
    thread.start();
  }

  /** Whether a write failed: a sample may then skip its work. */
  final synchronized boolean failed() {
    return failure != null;
  }

  /** Writes one row (without its newline), unless a write failed before. */
  final synchronized void writeRow(String row) {
    if (failure != null) {
      return;
    }
    try {
      csv.write(row + "\n");
    } catch (IOException e) {
      failure = e;
    }
  }

  private void run() {
    while (!stopping) {
      try {
        Thread.sleep(periodMs);
      } catch (InterruptedException e) {
        return;
      }
      sample();
    }
  }

  /** Stops the thread, takes one last sample and closes the CSV. Idempotent. */
  @Override
  public final void close() {
    if (stopping) {
      return;
    }
    stopping = true;
    thread.interrupt();
    try {
      thread.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    sample();
    synchronized (this) {
      try {
        csv.close();
      } catch (IOException e) {
        if (failure == null) {
          failure = e;
        }
      }
      if (failure != null) {
        throw new UncheckedIOException("sortdemo: writing " + what, failure);
      }
    }
  }
}
