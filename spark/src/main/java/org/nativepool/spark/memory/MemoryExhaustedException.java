package org.nativepool.spark.memory;

/**
 * Thrown by {@link Reservation#tryGrowOrThrow(long)} when the task's pool refuses a grow
 * (Go {@code ErrResourcesExhausted}). The message is the pool's refusal text unchanged
 * (DataFusion's wording, with the top-consumers report); the reservation and the pool are
 * unchanged. Unchecked, so that a task that does not handle it fails with that message.
 */
public class MemoryExhaustedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The reservation that asked, and how many bytes. */
  private final String consumerName;

  private final long requested;

  /**
   * @param consumerName the refused reservation's consumer name
   * @param requested the bytes asked for
   * @param message the pool's refusal text
   */
  public MemoryExhaustedException(String consumerName, long requested, String message) {
    super(message);
    this.consumerName = consumerName;
    this.requested = requested;
  }

  /** The refused reservation's consumer name. */
  public String consumerName() {
    return consumerName;
  }

  /** The bytes asked for. */
  public long requested() {
    return requested;
  }
}
