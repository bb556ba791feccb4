package org.nativepool.spark.events;

import java.io.Serializable;

/**
 * The on-demand "who holds the heap" between an executor and the driver, over plugin RPC. The
 * driver cannot call an executor, so each executor asks once per heartbeat ({@code
 * PluginContext.ask}) with a poll of its own ({@link #poll}); the driver answers with the request a
 * user made on the Native Memory page for that executor, or null. The executor then analyses its
 * heap and sends a {@link HeapHoldersEvent}. Immutable; Java-serialisable.
 *
 * @param executorId the executor asking, or asked
 * @param poll true for an executor's question, false for a user's request
 * @param user who asked on the page (Spark's remote user; null: unauthenticated, or a poll)
 * @param timeMillis when (epoch ms)
 */
public record HeapHoldersRequest(String executorId, boolean poll, String user, long timeMillis)
    implements Serializable {
  private static final long serialVersionUID = 1L;

  /** An executor's question: is there a request for me? */
  public static HeapHoldersRequest poll(String executorId) {
    return new HeapHoldersRequest(executorId, true, null, System.currentTimeMillis());
  }

  /** The trigger a {@link HeapHoldersEvent} of this request names. */
  public String trigger() {
    return user == null ? "on demand" : "on demand by " + user;
  }
}
