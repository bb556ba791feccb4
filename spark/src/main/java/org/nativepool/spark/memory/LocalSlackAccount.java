package org.nativepool.spark.memory;

import org.nativepool.spark.config.Bytes;



/**
 * The Java-side ledger of one {@link Reservation}: the bytes the caller reserved ({@link
 * #used()}) and the bytes the Go reservation holds beyond them ({@link #slack()}), after
 * CockroachDB's {@code BoundAccount}, which keeps a reserved buffer of about one chunk so that
 * small grows and shrinks do not reach its monitor.
 *
 * <p>With quantum {@code Q}, the Go reservation holds {@code used + slack}, and:
 *
 * <ul>
 *   <li>a grow the slack covers is local ({@link #growLocally}); otherwise the caller takes the
 *       whole slack aside ({@link #takeSlack}), asks Go for {@link #ask(long) the rest rounded up
 *       to a multiple of Q}, and books the result ({@link #commitGrow} or {@link #putBack});
 *   <li>a shrink moves bytes into the slack and, once the slack exceeds {@code 2Q}, returns all
 *       but {@code Q} of it for the caller to give back to Go ({@link #shrink}, {@link #trim});
 *   <li>{@link #clear()} returns everything.
 * </ul>
 *
 * <p>Exact mode is a quantum of 0, not a separate path: nothing is rounded, a grow of {@code n >
 * 0} always crosses, and every shrink hands its bytes straight back (the slack is then always 0,
 * because {@code slack <= 2Q = 0} after every call). Invariants after every method: {@code used
 * >= 0}, {@code slack >= 0}, and {@code slack <= 2Q} except while a grow that crossed is being
 * booked.
 *
 * <p>Not thread-safe: the owning {@link Reservation} calls it under its private lock, and
 * never holds that lock across the native call between {@link #takeSlack} and {@link
 * #commitGrow}. The account only counts; it never calls Go itself. The zero quantum is valid
 * (exact mode).
 */
final class LocalSlackAccount {
  private final long quantum;

  /** The rounding unit: Q, or 1 in exact mode (so rounding is the identity there). */
  private final long unit;

  /** Bytes the caller reserved. */
  private long used;

  /** Bytes the Go reservation holds beyond {@link #used}. */
  private long slack;

  /**
   * @param quantum Q in bytes, {@code >= 0}; 0 is exact mode
   * @throws IllegalArgumentException if {@code quantum < 0}
   */
  LocalSlackAccount(long quantum) {
    if (quantum < 0) {
      throw new IllegalArgumentException("nativepool: negative local-slack quantum " + quantum);
    }
    this.quantum = quantum;
    this.unit = Math.max(quantum, 1);
  }

  long quantum() {
    return quantum;
  }

  /** The bytes the caller reserved. */
  long used() {
    return used;
  }

  /** The bytes held in Go beyond {@link #used()}. */
  long slack() {
    return slack;
  }

  /**
   * Grows by {@code n} from the slack if it covers {@code n} (no Go call needed).
   *
   * @return true if booked; false if the grow must cross (nothing changed then)
   */
  boolean growLocally(long n) {
    if (n > slack) {
      return false;
    }
    slack -= n;
    used += n;
    return true;
  }

  /**
   * Takes the whole slack aside for a grow that crosses (so a concurrent spill cannot give it back
   * twice); the caller books it again with {@link #commitGrow} or {@link #putBack}.
   *
   * @return the bytes taken
   */
  long takeSlack() {
    long taken = slack;
    slack = 0;
    return taken;
  }

  /**
   * What to ask of Go for {@code need} bytes: rounded up to a multiple of Q (unchanged if that
   * would overflow, and always unchanged in exact mode).
   */
  long ask(long need) {
    long rem = need % unit;
    if (rem == 0 || need > Long.MAX_VALUE - unit) {
      return need;
    }
    return need + unit - rem;
  }

  /**
   * Books a grow of {@code n} that crossed: Go granted {@code granted} bytes, and {@code taken}
   * came from {@link #takeSlack}.
   */
  void commitGrow(long n, long taken, long granted) {
    used += n;
    slack += taken + granted - n;
  }

  /**
   * Puts bytes taken out of the account back into the slack: the slack a refused (or failed) grow
   * took aside, or bytes that {@link #shrink}, {@link #trim} or {@link #clear} returned for a
   * give-back that could not cross (the pool is closing; its close returns them).
   */
  void putBack(long bytes) {
    slack += bytes;
  }

  /**
   * Shrinks by {@code n}: the bytes go into the slack, and what exceeds {@code 2Q} comes out.
   *
   * @return the bytes the caller must give back to Go (0 if none)
   * @throws IllegalArgumentException if {@code n > used()}, with the text of the Go pool's own
   *     refusal (DataFusion's, {@code pool/reservation.go}), so every mode reports it alike;
   *     nothing changes
   */
  long shrink(long n) {
    if (n > used) {
      throw new IllegalArgumentException(
          "Cannot free the capacity " + n + " out of allocated size " + used + ": invalid size");
    }
    used -= n;
    slack += n;
    return trim();
  }

  /**
   * Takes what exceeds {@code 2Q} out of the slack, leaving {@code Q}.
   *
   * @return the bytes the caller must give back to Go (0 if none)
   */
  long trim() {
    if (slack <= 2 * quantum) {
      return 0;
    }
    long excess = slack - quantum;
    slack = quantum;
    return excess;
  }

  /**
   * Empties the account.
   *
   * @return every byte it held ({@code used + slack}), for the caller to give back to Go
   */
  long clear() {
    long all = used + slack;
    used = 0;
    slack = 0;
    return all;
  }
}
