package org.nativepool.spark.executor;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.spark.api.plugin.PluginContext;
import org.nativepool.spark.events.HeapHoldersEvent;
import org.nativepool.spark.events.HeapHoldersRequest;
import org.nativepool.spark.ledger.HeapHolders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor's end of the Native Memory page's "who holds the heap": the driver cannot call an
 * executor, so once per heartbeat interval this asks the driver whether a user requested this
 * executor's heap holders ({@code PluginContext.ask} with {@link HeapHoldersRequest#poll}); if one
 * did, it analyses the heap ({@link HeapHolders#tryAnalyze}: one analysis at a time in this JVM)
 * and sends the {@link HeapHoldersEvent} to the driver. The driver has checked the user's modify
 * permission and the rate limit already.
 *
 * <p>One daemon thread, {@code nativepool-heap-requests}, so that neither the ask nor the
 * analysis holds up the reporting thread; {@link #stop()} ends it. A failed ask is logged at DEBUG
 * and tried again at the next interval.
 */
final class HeapHolderPoller {
  private static final Logger LOG = LoggerFactory.getLogger(HeapHolderPoller.class);

  private final PluginContext ctx;
  private final HeapHolders holders;
  private final ScheduledExecutorService thread =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "nativepool-heap-requests");
            t.setDaemon(true);
            return t;
          });

  private HeapHolderPoller(PluginContext ctx, HeapHolders holders) {
    this.ctx = ctx;
    this.holders = holders;
  }

  /** Starts asking every {@code periodMillis}. */
  static HeapHolderPoller start(PluginContext ctx, HeapHolders holders, long periodMillis) {
    HeapHolderPoller p = new HeapHolderPoller(ctx, holders);
    p.thread.scheduleWithFixedDelay(p::poll, periodMillis, periodMillis, TimeUnit.MILLISECONDS);
    return p;
  }

  private void poll() {
    try {
      Object reply = ctx.ask(HeapHoldersRequest.poll(ctx.executorID()));
      if (reply instanceof HeapHoldersRequest r && !r.poll()) {
        HeapHoldersEvent e = holders.tryAnalyze(ctx.executorID(), r.trigger(), 0);
        LOG.info(e.describe());
        ctx.send(e);
      }
    } catch (Exception e) {
      LOG.debug("nativepool: executor {}: cannot ask the driver for heap holder requests",
          ctx.executorID(), e);
    }
  }

  /** Stops asking; an analysis under way finishes. Idempotent. */
  void stop() {
    thread.shutdownNow();
  }
}
