package org.nativepool.spark.jni;




/** What leaked at a task's end: the leak kinds of the Go side's leak book, by their codes. */
public enum LeakKind {
  /**
   * A reservation still holding bytes at its task's end (Java: its {@code
   * Reservation.size()}; Go: what the pool's close found). Accounting only: the bytes went
   * back to Spark with the task, so they are never resident.
   */
  RESERVATION("reservation"),
  /** A Go Arrow allocator closed with live buffers or imported batches still held. */
  ARROW("arrow"),
  /**
   * A Go Arrow allocator closed with batches exported to Java that Java still holds (or Go batches
   * Java still had open at its task's end, closed then): resident while Java holds them.
   */
  EXPORT("export"),
  /** Java Arrow buffers the task's producer allocator still held: resident until released. */
  JAVA_ARROW("java-arrow");

  private final String code;

  LeakKind(String code) {
    this.code = code;
  }

  /** The kind's code as the natives and the log name it. */
  public String code() {
    return code;
  }

  /** The kind whose {@link #code()} is {@code code}; {@code IllegalArgumentException} if none. */
  public static LeakKind of(String code) {
    for (LeakKind k : values()) {
      if (k.code.equals(code)) {
        return k;
      }
    }
    throw new IllegalArgumentException("nativepool: unknown leak kind '" + code + "'");
  }
}
