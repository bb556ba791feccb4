package org.nativepool.spark.example;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.ledger.LedgerListener;

/**
 * The soak's {@link LedgerListener}: keeps every growth report the executor's ledger makes, with
 * the micro-batch the query was at when it came, and wakes whoever waits for one. Called on the
 * plugin's reporting thread; read from any thread.
 */
final class GrowthWatcher implements LedgerListener {
  /** A report, and the micro-batches started when it came. */
  record Seen(GrowthReportEvent report, long batches) {}

  private final LongSupplier batches;
  private final List<Seen> seen = new ArrayList<>();

  /** @param batches the micro-batches the query has started so far */
  GrowthWatcher(LongSupplier batches) {
    this.batches = batches;
  }

  @Override
  public void onGrowth(GrowthReportEvent report) {
    long b = batches.getAsLong();
    synchronized (this) {
      seen.add(new Seen(report, b));
      notifyAll();
    }
  }

  /** Every report so far. */
  synchronized List<Seen> reports() {
    return List.copyOf(seen);
  }

  /** The first report of {@code part}, or null. */
  synchronized Seen first(String part) {
    for (Seen s : seen) {
      if (s.report().getPart().equals(part)) {
        return s;
      }
    }
    return null;
  }

  /** Waits up to {@code ms} for a report (returns at once when one came already). */
  synchronized void await(long ms) throws InterruptedException {
    if (seen.isEmpty()) {
      wait(ms);
    }
  }
}
