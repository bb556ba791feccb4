package org.nativepool.spark.memory;

import java.util.Map;

/**
 * Told of every task pool as it closes, with its high-water marks: how a layer above (the
 * executor memory ledger) learns of pools without the memory layer knowing it. Registered with
 * {@link ExecutorState#install}. Implementations must be safe for concurrent use and must not
 * throw; they run on task threads at task end.
 */
@FunctionalInterface
public interface TaskPoolObserver {
  /**
   * A task pool closed.
   *
   * @param taskAttemptId the task attempt the pool served
   * @param peak the pool's highest reserved bytes
   * @param consumerPeaks each consumer's highest reserved bytes in the pool, by name
   */
  void poolClosed(long taskAttemptId, long peak, Map<String, Long> consumerPeaks);
}
