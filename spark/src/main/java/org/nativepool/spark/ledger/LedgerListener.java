package org.nativepool.spark.ledger;

import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.events.LedgerCrossingEvent;

/**
 * Notified by the executor memory ledger ({@link ExecutorLedger}) instead of polling it: each
 * threshold crossing, up or down, and each growth report. Register one with {@link
 * ExecutorLedger#addListener} or by class name with {@link NativePoolConf#LEDGER_LISTENERS}.
 *
 * <p>Called on the plugin's reporting thread, one call at a time; keep it short. An exception it
 * throws is logged and does not stop other listeners or later notifications.
 */
public interface LedgerListener {
  /** A part crossed a threshold. */
  default void onCrossing(LedgerCrossingEvent crossing) {}

  /** The growth detector reported a part whose floor keeps rising. */
  default void onGrowth(GrowthReportEvent report) {}
}
