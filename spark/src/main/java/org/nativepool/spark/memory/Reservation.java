package org.nativepool.spark.memory;





import java.util.function.LongFunction;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.jni.LeakKind;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.Spiller;

/**
 * A consumer's reservation in a task's native pool, DataFusion's {@code MemoryReservation} seen
 * from Java. Created by {@link TaskPool#newReservation(String, boolean, Spiller)} and owned
 * by the caller: {@link #close()} frees it; {@link TaskPool#close()} (the task completion listener)
 * closes any still open.
 *
 * <p>Every method validates before crossing into native code: a negative size throws
 * {@link IllegalArgumentException}, a closed reservation {@link IllegalStateException}
 * ("nativepool: reservation '…' is closed"). Safe for concurrent use; {@link #close()} while
 * another thread is inside a native call on this reservation throws instead of freeing under it.
 * Each native call on a reservation also counts as a call on its {@link TaskPool}, whose close
 * therefore refuses (or, at task end, waits) while it runs.
 *
 * <h2>Local slack (chunked pools)</h2>
 *
 * <p>A call costs at least one JNI crossing (≈ 67 ns) even when the Go pool answers it from its
 * chunk slack, so a small {@code tryGrow}+{@code shrink} pair can never be much cheaper than two
 * crossings. The reservation therefore keeps its Java-side ledger in one {@link
 * LocalSlackAccount}, as CockroachDB's {@code BoundAccount} keeps a reserved buffer of up to one
 * chunk, with quantum {@code Q} ({@link TaskPool#reservationSlack()}, {@code
 * spark.nativepool.reservationSlack}, default 64 KiB). Exact mode (the pool's chunk size is 0) and
 * {@code reservationSlack} 0 are the same account with {@code Q = 0}: every grow and shrink of
 * {@code n > 0} is one Java→Go call, as in Comet, and nothing stays local.
 *
 * <ul>
 *   <li>the Go reservation holds {@code granted = used + localSlack}, where {@code used} is what
 *       the caller reserved ({@link #size()}) and {@code 0 <= localSlack <= 2Q} after every call;
 *   <li>{@code tryGrow(n)} with {@code n <= localSlack} takes the bytes from the slack, without
 *       crossing; otherwise it asks Go for {@code n - localSlack} rounded up to a multiple of
 *       {@code Q}, and if the pool refuses that, once more for exactly {@code n - localSlack}
 *       before it reports a refusal, so the rounding never causes a refusal the pool would not
 *       make (the refusal text then names {@code n - localSlack}, the bytes the pool was asked
 *       for). {@code grow(n)} rounds the same way (it never refuses);
 *   <li>{@code shrink(n)} moves {@code n} bytes into the slack; when the slack exceeds {@code 2Q}
 *       it gives back all but {@code Q} to Go in one call;
 *   <li>{@link #free()} and {@link #close()} give back everything, slack included; {@link
 *       #size()} reads {@code used} without crossing, in every mode;
 *   <li>when Spark asks the pool for memory back and the pool calls this reservation's spiller,
 *       the slack goes back first; the user's spiller is called only if the slack did not cover
 *       the target, and whatever it shrank goes back in full (none stays local) before the spill
 *       returns. A reservation without a spiller keeps its slack (at most {@code 2Q}) until its
 *       next call that crosses, {@link #free()} or {@link #close()}.
 * </ul>
 *
 * <p>Accounting stays exact where it matters: Spark's figure for the task and the pool's HELD are
 * still one number, and the Go reservation is exactly {@code used + localSlack}; with {@code Q =
 * 0}, or once the slack is given back, Java's {@link #size()} equals the Go reservation's size.
 * The Go-side figures include each Java reservation's local slack, as HELD includes the pool's
 * chunk slack: the pool's RESERVED, its per-consumer bytes in TrackConsumers reports, the
 * fair_unified pool's share of the consumer, and its spill order. So the pool may refuse a grow of
 * another consumer up to {@code 2Q} bytes per open Java reservation sooner than without the slack.
 *
 * <p>Arrow memory the Go side allocates for this reservation ({@code GoBatch.copy}) is charged
 * to a Go reservation of its own, of the same consumer ({@code internal/bridge/arrow.go}), not to
 * this one: it counts for the consumer in the pool, but never in {@link #size()}, and {@link
 * #free()} leaves it to its Go buffers; {@code GoAllocators.stats(res).reserved()} reads that Arrow
 * reservation once the allocator exists.
 *
 * <p>The local counters are guarded by a private monitor held only for a few field updates,
 * never across a native call: a native call may block in Spark's {@code acquireExecutionMemory}
 * and Spark may call this reservation's spiller from another thread meanwhile.
 */
public final class Reservation extends CallGuard implements AutoCloseable {
  private final TaskPool pool;
  private final long handle;
  private final String name;
  private final boolean canSpill;

  /** Kept reachable while native code may call it back. The user's spiller, or null. */
  private final Spiller spiller;

  /** Guards {@link #account}; never held across a native call. */
  private final Object lock = new Object();

  /**
   * This reservation's Java-side ledger (used bytes and local slack); quantum 0 without local
   * slack. Guarded by {@link #lock}.
   */
  private final LocalSlackAccount account;

  /** The refusal text of the last tryGrow, or null if it succeeded. */
  private volatile String lastRefusal;

  /**
   * The Java caller that created this reservation ({@link CallerSites}), or null when allocation
   * sites were off; a leak at the task's end names it.
   */
  private final String site;

  Reservation(
      TaskPool pool,
      long handle,
      String name,
      boolean canSpill,
      Spiller spiller,
      long quantum,
      String site) {
    super(pool); // every native call on this reservation is a call on its pool too
    this.pool = pool;
    this.handle = handle;
    this.name = name;
    this.canSpill = canSpill;
    this.spiller = spiller;
    this.account = new LocalSlackAccount(quantum);
    this.site = site;
  }

  /**
   * Where this reservation was created, {@code pkg.Class.method(File.java:42)}, when allocation
   * sites were on ({@link NativePoolConf#ALLOCATION_SITES}); null otherwise.
   */
  public String site() {
    return site;
  }

  /** The consumer name given at creation (it appears in the pool's refusal and leak reports). */
  public String name() {
    return name;
  }

  /** Whether the consumer was registered as spillable. */
  public boolean canSpill() {
    return canSpill;
  }

  /** The spiller given at creation, or null. */
  public Spiller spiller() {
    return spiller;
  }

  /** The pool this reservation belongs to. */
  public TaskPool pool() {
    return pool;
  }

  /**
   * The local-slack quantum Q of this reservation in bytes; 0 when it has none (exact mode, or
   * {@code reservationSlack} 0): then every call crosses into Go.
   */
  public long slackQuantum() {
    return account.quantum();
  }

  long handle() {
    return handle;
  }

  /**
   * Runs {@code call} with this reservation's native handle, counted as one native call on the
   * reservation and its pool (their close refuses or waits while it runs), and returns its result.
   * For the Arrow layer, whose Go allocator belongs to the reservation: {@code
   * res.callNative(h -> Natives.importBatch(h, array, schema))}.
   *
   * @throws IllegalStateException if the reservation or its pool is closed or closing
   */
  public <T> T callNative(LongFunction<T> call) {
    enter();
    try {
      return call.apply(handle);
    } finally {
      exit();
    }
  }

  /** The bytes held in Go beyond {@link #size()} (0 without local slack). For tests. */
  long localSlack() {
    synchronized (lock) {
      return account.slack();
    }
  }

  /**
   * Grows by {@code n} bytes if the pool agrees (for unified pools, if Spark grants them; Spark may
   * spill other consumers of the task first, and may block in its 1/2N wait). On refusal the
   * reservation and the pool are unchanged and {@link #lastRefusal()} holds the pool's message.
   * With local slack, a grow the slack covers does not cross into Go (see the class comment).
   *
   * @return true if grown, false if refused
   * @throws IllegalArgumentException if {@code n < 0}
   * @throws IllegalStateException if closed
   */
  public boolean tryGrow(long n) {
    checkSize("tryGrow", n);
    String refusal = tryGrowOnce(n);
    if (refusal != null || lastRefusal != null) {
      lastRefusal = refusal;
    }
    return refusal == null;
  }

  /**
   * {@link #tryGrow(long)} that throws on refusal.
   *
   * @throws MemoryExhaustedException with the pool's refusal text; nothing changed
   * @throws IllegalArgumentException if {@code n < 0}
   * @throws IllegalStateException if closed
   */
  public void tryGrowOrThrow(long n) {
    checkSize("tryGrow", n);
    String refusal = tryGrowOnce(n);
    if (refusal != null || lastRefusal != null) {
      lastRefusal = refusal;
    }
    if (refusal != null) {
      throw new MemoryExhaustedException(name, n, refusal);
    }
  }

  /**
   * One tryGrow: null on success, else the pool's refusal text. A grow that must cross enters the
   * guard before it takes the local slack: a pool that is closing refuses it while Java's and Go's
   * books still agree (the slack stays local, and the close gives it back with the rest).
   */
  private String tryGrowOnce(long n) {
    if (growLocally(n)) {
      return null;
    }
    enter();
    long taken = -1; // -1: nothing taken out of the account (yet)
    boolean done = false;
    try {
      synchronized (lock) {
        if (account.growLocally(n)) { // a shrink meanwhile refilled the slack
          return null;
        }
        // The slack goes into this grow; a spill meanwhile cannot give it back twice.
        taken = account.takeSlack();
      }
      long need = n - taken;
      long ask = account.ask(need);
      String refusal = Natives.tryGrow(handle, ask);
      if (refusal != null && ask != need) {
        ask = need;
        refusal = Natives.tryGrow(handle, ask);
      }
      long excess;
      synchronized (lock) {
        if (refusal == null) {
          account.commitGrow(n, taken, ask);
        } else {
          account.putBack(taken);
        }
        excess = account.trim();
        done = true;
      }
      giveBack(excess);
      return refusal;
    } finally {
      if (!done && taken >= 0) {
        // tryGrow0 threw (an upcall's exception): the reservation is unchanged.
        synchronized (lock) {
          account.putBack(taken);
        }
      }
      exit();
    }
  }

  /**
   * Grows by {@code n} from the local slack if it covers {@code n}, without crossing.
   *
   * @return true if done; false if the grow must cross (nothing changed then)
   * @throws IllegalStateException if closed
   */
  private boolean growLocally(long n) {
    synchronized (lock) {
      checkOpen();
      return account.growLocally(n);
    }
  }

  /** The refusal message of the last {@link #tryGrow(long)}, or null if it succeeded. */
  public String lastRefusal() {
    return lastRefusal;
  }

  /**
   * Grows by {@code n} bytes; never refuses (what Spark does not grant becomes the pool's
   * overcommit, repaid first on release). If Spark's {@code acquireMemory} throws, the grow is
   * still recorded (it is overcommit) and the throwable is rethrown ({@code jni/API.md}).
   *
   * @throws IllegalArgumentException if {@code n < 0}
   * @throws IllegalStateException if closed
   */
  public void grow(long n) {
    checkSize("grow", n);
    if (growLocally(n)) {
      return;
    }
    enter(); // before the slack is taken: see tryGrowOnce
    long taken = -1; // -1: nothing taken out of the account
    long ask = 0;
    long excess = 0;
    boolean recorded = false;
    try {
      synchronized (lock) {
        if (account.growLocally(n)) {
          return;
        }
        taken = account.takeSlack();
      }
      ask = account.ask(n - taken);
      Natives.grow(handle, ask);
      recorded = true;
    } finally {
      // grow0 records its bytes even when an upcall throws (API.md), so book them either way;
      // only a normal return may give an excess (from concurrent shrinks) back.
      if (taken >= 0) {
        synchronized (lock) {
          account.commitGrow(n, taken, ask);
          if (recorded) {
            excess = account.trim();
          }
        }
      }
      exit();
    }
    giveBack(excess);
  }

  /**
   * Shrinks by {@code n} bytes. With local slack, the bytes go to the slack, and to Go only when
   * the slack exceeds {@code 2Q}.
   *
   * @throws IllegalArgumentException if {@code n < 0}, or if {@code n} exceeds {@link #size()}
   *     (DataFusion's "Cannot free the capacity n out of allocated size m: invalid size", in every
   *     mode); nothing changes
   * @throws IllegalStateException if closed
   */
  public void shrink(long n) {
    checkSize("shrink", n);
    long excess;
    synchronized (lock) {
      checkOpen();
      excess = account.shrink(n); // throws DataFusion's text if n > size(), changing nothing
    }
    giveBack(excess);
  }

  /**
   * Frees every byte of the reservation (and its local slack); it stays open.
   *
   * @return the bytes freed, as {@link #size()} counted them
   * @throws IllegalStateException if closed
   */
  public long free() {
    long freed;
    long all;
    synchronized (lock) {
      checkOpen();
      freed = account.used();
      all = account.clear();
    }
    giveBack(all);
    return freed;
  }

  /**
   * The current size in bytes: what the caller reserved through this object, read from the Java
   * ledger without crossing. It equals the Go reservation's size ({@link #nativeSize()}) whenever
   * the local slack is 0, which quantum 0 (exact mode) keeps always.
   *
   * @throws IllegalStateException if closed
   */
  public long size() {
    synchronized (lock) {
      checkOpen();
      return account.used();
    }
  }

  /**
   * The Go reservation's size in bytes, read with one native call: {@link #size()} plus the local
   * slack, and never any Arrow memory (that has its own Go reservation). For diagnostics and tests:
   * with no call in flight on this reservation, {@code nativeSize() == size()} whenever the local
   * slack is 0 (always with quantum 0).
   *
   * @throws IllegalStateException if closed
   */
  public long nativeSize() {
    enter();
    try {
      return Natives.size(handle);
    } finally {
      exit();
    }
  }

  /**
   * Frees the reservation, local slack included, and unregisters it; idempotent.
   *
   * @throws IllegalStateException if a native call on this reservation is in flight (nothing is
   *     closed then)
   */
  @Override
  public void close() {
    if (markClosed()) {
      closeHandle();
    }
  }

  /**
   * {@link #close()} from the pool's close, once no call is in flight on the pool: the only calls
   * left to drain are ones being refused by the closed pool, so the wait is momentary. Bytes still
   * reserved are a leak ({@link LeakKind#RESERVATION}): counted, logged and listed with
   * this reservation's name and creation site.
   */
  void closeWithPool() {
    if (awaitClosed()) {
      long leaked;
      synchronized (lock) {
        leaked = account.used();
      }
      if (leaked > 0) {
        // What the user reserved and never gave back (not the Go size, which includes the local
        // slack). Recorded here: the Go pool never sees it, this close gives the bytes back first.
        Leaks.report(
            pool.taskAttemptId(), name, LeakKind.RESERVATION, leaked, 0, site);
      }
      closeHandle();
    }
  }

  private void closeHandle() {
    try {
      Natives.closeReservation(handle);
    } finally {
      synchronized (lock) {
        account.clear();
      }
      pool.forget(this);
    }
  }

  /** Whether {@link #close()} has run. */
  public boolean isClosed() {
    return guardClosed();
  }

  /**
   * Gives the whole local slack back to Go (one native call if there is any). Called first by
   * the spiller wrapper when the pool reclaims.
   *
   * @return the bytes given back; 0 if there was none or the reservation is closed (its bytes
   *     went back with the close)
   */
  long returnSlack() {
    try {
      enter(); // before the slack is taken: a closed or closing pool returns it itself
    } catch (IllegalStateException closed) {
      return 0;
    }
    try {
      long s;
      synchronized (lock) {
        s = account.takeSlack();
      }
      if (s > 0) {
        Natives.shrink(handle, s);
      }
      return s;
    } finally {
      exit();
    }
  }

  /**
   * Shrinks the Go reservation by bytes already taken out of the local counters. If the pool is
   * closing (or the reservation closed meanwhile), the bytes go back into the local slack before
   * the refusal is thrown, so Java's books keep what Go still holds, and the close gives them back.
   */
  private void giveBack(long bytes) {
    if (bytes == 0) {
      return;
    }
    try {
      enter();
    } catch (IllegalStateException refused) {
      synchronized (lock) {
        account.putBack(bytes); // back into the slack
      }
      throw refused;
    }
    try {
      Natives.shrink(handle, bytes);
    } finally {
      exit();
    }
  }

  private void checkOpen() {
    if (guardClosed()) {
      throw new IllegalStateException("nativepool: " + describe() + " is closed");
    }
  }

  @Override
  String describe() {
    return "reservation '" + name + "'";
  }

  private void checkSize(String op, long n) {
    if (n < 0) {
      throw new IllegalArgumentException(
          "nativepool: " + describe() + " " + op + "(" + n + "): negative size");
    }
  }

  @Override
  public String toString() {
    return "Reservation(" + name + ", task=" + pool.taskAttemptId() + ")";
  }

  /**
   * The spiller registered with Go for a reservation with local slack and a user spiller: gives
   * the slack back first, calls the user's spiller only if the slack did not cover the target,
   * then gives back whatever the user's spiller shrank (none of it stays local).
   */
  static final class SlackFirstSpiller implements Spiller {
    private final Spiller user;
    private volatile Reservation reservation;

    SlackFirstSpiller(Spiller user) {
      this.user = user;
    }

    /** Set once, right after the reservation object exists. */
    void bind(Reservation r) {
      reservation = r;
    }

    @Override
    public long spill(long target) {
      Reservation r = reservation;
      if (r == null) {
        return user.spill(target); // not yet bound: nothing reserved, no slack
      }
      long freed = r.returnSlack();
      if (freed >= target) {
        return freed;
      }
      try {
        freed += user.spill(target - freed);
      } finally {
        r.returnSlack();
      }
      return freed;
    }
  }
}
