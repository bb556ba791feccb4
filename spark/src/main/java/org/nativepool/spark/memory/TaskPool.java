package org.nativepool.spark.memory;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.TaskContext;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.config.PoolSettings;
import org.nativepool.spark.jni.GoLog;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.PoolStats;
import org.nativepool.spark.jni.Records;
import org.nativepool.spark.jni.Spiller;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A handle to one task's native pool (the task-shared pool of the Go registry: every open of the
 * same live task reaches the same pool, if kind, size and chunk size match).
 *
 * <p>Owned by whoever opened it. {@link #open(TaskContext, PoolKind, long, long)} also adds the
 * handle to the task's {@link TaskResources}, which close it at the task's end with its open
 * reservations; the open that creates the task's pool also adds the task's {@link
 * SparkTaskUpstream} (its owner), which closes after every handle. Spark checks for leaked memory
 * right after the completion listeners and before the plugins' {@code onTaskSucceeded}, so
 * everything goes back to Spark there.
 *
 * <p>Which pool and which owner a task has is known only to Go: an open hands Go a candidate
 * owner, Go registers it if the open creates the pool and otherwise tells the open the registered
 * one ({@link #upstream()}). Spark's spill of the owner's consumer reaches the pool through the Go
 * task handle the owner holds, never through a {@code TaskPool}.
 *
 * <h2>Closing while calls are in flight</h2>
 *
 * <p>Every native call on the pool or on one of its reservations counts as a call on the pool: a
 * {@code tryGrow} that waits in Spark's 1/2N wait, an Arrow import. A spill Spark asks of the task's
 * owner counts as a call on every pool handle of the task for {@link #close()}, which refuses while
 * one runs; the task completion listener does not wait for it in Java, but the Go pool's final
 * close does (the spill runs inside the pool's call gate). A close never closes anything under such
 * a call, and a close that does not happen closes nothing: not a reservation, not the pool handle,
 * not the Go pool.
 *
 * <ul>
 *   <li>{@link #close()} <em>refuses</em>: it throws {@link IllegalStateException} ("… is in use
 *       by n native call(s); close refused") and leaves everything open. It never blocks, so a
 *       spiller may call it from inside Spark's spill on the thread whose call asked Spark for
 *       memory (it is refused there, without deadlock). Close again once the calls have returned.
 *   <li>The task completion listener <em>waits</em>: new calls are refused at once ("… is
 *       closing"), the calls in flight on other threads run to their end (a grant Spark makes
 *       meanwhile lands in the open pool), and then everything is closed and returned to Spark,
 *       before Spark's leak check. So Spark's figure for the task and the pool's HELD stay one
 *       number at every step, and no leak is reported for bytes that were never reserved.
 * </ul>
 *
 * <p>In chunked mode its reservations keep an account-local slack of up to {@code 2Q} bytes
 * ({@link #reservationSlack()}; see {@link Reservation}), so that small grows and shrinks do
 * not cross into Go.
 *
 * <p>Safe for concurrent use by the task's threads.
 */
public final class TaskPool extends CallGuard implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(TaskPool.class);

  private final SparkTaskUpstream upstream;
  private final long taskAttemptId;
  private final long handle;
  private final PoolKind kind;
  private final long poolSize;
  private final long chunkSize;

  /** The local-slack quantum Q given to reservations created from now on. */
  private volatile long reservationSlack = NativePoolConf.RESERVATION_SLACK.parse(null);

  /** Reservations created here and not yet closed; closed with the pool. */
  private final Set<Reservation> reservations = ConcurrentHashMap.newKeySet();

  private TaskPool(
      SparkTaskUpstream upstream,
      long taskAttemptId,
      long handle,
      PoolKind kind,
      long poolSize,
      long chunkSize) {
    this.upstream = upstream;
    this.taskAttemptId = taskAttemptId;
    this.handle = handle;
    this.kind = kind;
    this.poolSize = poolSize;
    this.chunkSize = chunkSize;
  }

  /**
   * Opens the pool of the task running on this thread with the plugin's settings
   * ({@link ExecutorState#settings()}, installed by the executor plugin).
   *
   * @throws IllegalStateException if this is not a task thread or the plugin is not initialised
   */
  public static TaskPool openForCurrentTask() {
    TaskContext ctx = TaskContext.get();
    if (ctx == null) {
      throw new IllegalStateException(
          "nativepool: no TaskContext on thread '"
              + Thread.currentThread().getName()
              + "'; open the task pool on the task's thread");
    }
    PoolSettings s = ExecutorState.settings();
    TaskPool pool = open(ctx, s.kind(), s.poolSize(), s.chunkSize());
    pool.setReservationSlack(s.reservationSlack());
    return pool;
  }

  /**
   * Opens (or joins) the pool of a running task, borrowing from the task's
   * {@code TaskMemoryManager}. Call on the task thread. The pool is closed by a completion listener
   * if the caller has not closed it by then.
   *
   * @param kind the pool kind
   * @param poolSize the fair_unified pool size in bytes (ignored by greedy_unified), {@code >= 0}
   * @param chunkSize bytes borrowed from Spark at a time, {@code >= 0}; 0 = one Spark call per
   *     grow and shrink
   * @throws IllegalArgumentException for a negative size
   * @throws IllegalStateException if the task has completed, or the task's pool was opened with a
   *     different kind, size or chunk size
   */
  public static TaskPool open(TaskContext ctx, PoolKind kind, long poolSize, long chunkSize) {
    Objects.requireNonNull(ctx, "ctx");
    checkArgs(kind, poolSize, chunkSize);
    Natives.ensureLoaded();
    long id = ctx.taskAttemptId();
    if (ctx.isCompleted()) {
      throw new IllegalStateException("nativepool: task " + id + " completed; cannot open a pool");
    }
    // A candidate owner: Go registers it only if this open creates the task's pool; a join learns
    // the task's owner from Go instead (no Java-side map of tasks).
    TaskResources resources = ExecutorState.resourcesOf(ctx);
    SparkTaskUpstream candidate = new SparkTaskUpstream(ctx);
    long h = Natives.openPool(id, kind.code(), poolSize, chunkSize, candidate);
    SparkTaskUpstream owner = ownerAfterOpen(candidate);
    TaskPool pool = new TaskPool(owner, id, h, kind, poolSize, chunkSize);
    if (owner == candidate) {
      // This open created the pool: its owner closes after every pool handle of the task.
      GoLog.taskStarted(ctx); // Go's records about the task name its stage and partition
      resources.add(
          TaskResources.Priority.OWNER,
          "the task's Spark consumer",
          () -> {
            try {
              owner.close();
            } finally {
              GoLog.taskEnded(id);
            }
          });
    }
    resources.add(TaskResources.Priority.POOL, pool.toString(), pool::closeAtTaskEnd);
    return pool;
  }

  /**
   * Opens (or joins) a task's pool over an explicit upstream, for tests that build Spark's memory
   * managers directly. No listener is registered: the caller closes the pool, then the upstream.
   * {@code up} becomes the task's owner if this open creates the pool; a join borrows from the
   * owner registered by the open that did ({@link #upstream()}), and {@code up} stays unused.
   *
   * @param taskAttemptId must equal {@code up.taskAttemptId()}
   * @throws IllegalArgumentException for a negative size or a mismatched task id
   * @throws IllegalStateException if {@code up} is closed, or the task's pool was opened with a
   *     different kind, size or chunk size
   */
  public static TaskPool open(
      SparkTaskUpstream up, long taskAttemptId, PoolKind kind, long poolSize, long chunkSize) {
    Objects.requireNonNull(up, "up");
    checkArgs(kind, poolSize, chunkSize);
    if (up.taskAttemptId() != taskAttemptId) {
      throw new IllegalArgumentException(
          "nativepool: upstream of task "
              + up.taskAttemptId()
              + " cannot open a pool for task "
              + taskAttemptId);
    }
    if (up.isClosed()) {
      throw new IllegalStateException(
          "nativepool: task " + taskAttemptId + " completed; cannot open a pool");
    }
    Natives.ensureLoaded();
    long h = Natives.openPool(taskAttemptId, kind.code(), poolSize, chunkSize, up);
    return new TaskPool(ownerAfterOpen(up), taskAttemptId, h, kind, poolSize, chunkSize);
  }

  /**
   * The task's owner that {@code openPool0} just stored in {@code candidate}: the candidate itself
   * if the open created the pool, else the owner registered by the open that did.
   */
  private static SparkTaskUpstream ownerAfterOpen(SparkTaskUpstream candidate) {
    return candidate.registeredOwner() instanceof SparkTaskUpstream owner ? owner : candidate;
  }

  private static void checkArgs(PoolKind kind, long poolSize, long chunkSize) {
    Objects.requireNonNull(kind, "kind");
    if (poolSize < 0) {
      throw new IllegalArgumentException(
          "nativepool: pool size " + poolSize + ": negative size");
    }
    if (chunkSize < 0) {
      throw new IllegalArgumentException(
          "nativepool: chunk size " + chunkSize + ": negative size");
    }
  }

  /**
   * Registers a new consumer in the pool and returns its empty reservation. With allocation sites
   * on ({@link NativePoolConf#ALLOCATION_SITES}) the caller is recorded ({@link
   * Reservation#site()}), so a leak of the reservation names it.
   *
   * @param name the consumer name used in refusal and leak reports
   * @param canSpill whether the fair_unified pool counts it among spillable consumers
   * @param spiller called when Spark asks the pool for memory back, or null; non-null requires
   *     {@code canSpill}
   * @throws IllegalArgumentException if {@code spiller != null && !canSpill}
   * @throws IllegalStateException if the pool is closed
   */
  public Reservation newReservation(String name, boolean canSpill, Spiller spiller) {
    Objects.requireNonNull(name, "name");
    if (spiller != null && !canSpill) {
      throw new IllegalArgumentException(
          "nativepool: consumer '" + name + "' has a spiller but canSpill is false");
    }
    String site = CallerSites.capture(); // null unless allocation sites are on
    long q = chunkSize > 0 ? reservationSlack : 0;
    // With local slack, Go calls a wrapper that gives the slack back before the user's spiller.
    Reservation.SlackFirstSpiller wrapped =
        q > 0 && spiller != null ? new Reservation.SlackFirstSpiller(spiller) : null;
    enter();
    try {
      long h =
          Natives.newReservation(
              handle, name, canSpill, wrapped != null ? wrapped : spiller);
      Reservation r = new Reservation(this, h, name, canSpill, spiller, q, site);
      if (wrapped != null) {
        wrapped.bind(r);
      }
      reservations.add(r);
      return r;
    } finally {
      exit();
    }
  }

  /**
   * Sets the local-slack quantum Q of the reservations this handle creates from now on (those
   * already open keep theirs). Ignored in exact mode (chunk size 0), where every call crosses.
   * {@link #openForCurrentTask()} sets it from {@link NativePoolConf#RESERVATION_SLACK}; the
   * other opens start with its default, 64 KiB.
   *
   * @param bytes Q in bytes; 0 = no local slack (every call crosses into Go)
   * @throws IllegalArgumentException if {@code bytes} is negative or above 1 TiB
   */
  public void setReservationSlack(long bytes) {
    if (bytes < 0 || bytes > NativePoolConf.MAX_RESERVATION_SLACK) {
      throw new IllegalArgumentException(
          "nativepool: reservation slack "
              + bytes
              + ": "
              + (bytes < 0 ? "negative size" : "above 1 TiB"));
    }
    reservationSlack = bytes;
  }

  /**
   * The local-slack quantum Q given to reservations created from now on; reservations of an
   * exact-mode pool have none whatever this says ({@link Reservation#slackQuantum()}).
   */
  public long reservationSlack() {
    return reservationSlack;
  }

  /**
   * What Spark's {@code spill()} does: returns slack to Spark, then asks spillable consumers
   * (largest first) to spill.
   *
   * @return the bytes released to Spark during this call
   * @throws IllegalArgumentException if {@code target < 0}
   * @throws IllegalStateException if the pool is closed
   */
  public long reclaim(long target) {
    if (target < 0) {
      throw new IllegalArgumentException(
          "nativepool: " + describe() + " reclaim(" + target + "): negative size");
    }
    enter();
    try {
      return Natives.reclaim(handle, target);
    } finally {
      exit();
    }
  }

  /**
   * Adds a spill of a Java consumer of this pool to the task's Spark spill metrics: {@code
   * memoryBytes} to {@code memoryBytesSpilled}, {@code diskBytes} (what the spill wrote) to {@code
   * diskBytesSpilled}. Pass {@code memoryBytes} 0 from a {@link Spiller} the pool called for
   * Spark: what it frees reaches Spark through the pool and is counted as it is released. A spill
   * the consumer starts itself (its {@code tryGrow} was refused) passes the bytes it freed, as
   * Spark's own sorters count every spill. Callable from any thread, also after close.
   *
   * @throws IllegalArgumentException for a negative size
   */
  public void reportSpill(long memoryBytes, long diskBytes) {
    upstream.recordSpill(memoryBytes, diskBytes);
  }

  /**
   * A snapshot of the pool's figures.
   *
   * @throws IllegalStateException if the pool is closed
   */
  public PoolStats stats() {
    enter();
    try {
      return Natives.poolStats(handle);
    } finally {
      exit();
    }
  }

  /**
   * The upstream this pool borrows from: the task's owner, registered by the open that created the
   * task's pool (for a join, not necessarily the object the join was given).
   */
  public SparkTaskUpstream upstream() {
    return upstream;
  }

  public long taskAttemptId() {
    return taskAttemptId;
  }

  public PoolKind kind() {
    return kind;
  }

  public long poolSize() {
    return poolSize;
  }

  public long chunkSize() {
    return chunkSize;
  }

  /** Whether {@link #close()} has run. */
  public boolean isClosed() {
    return guardClosed();
  }

  long handle() {
    return handle;
  }

  void forget(Reservation r) {
    reservations.remove(r);
  }

  /**
   * Closes every reservation still open, then this pool handle; the task's last handle returns
   * everything the pool still holds to Spark. A reservation still holding bytes is a leak, counted
   * and logged with its name ({@link Leaks}). Idempotent (a close already under way, such as the
   * task-end close waiting for calls, is left to finish). Refuses instead of closing under a call:
   * see the class comment. If closing a reservation throws (an exception of Spark's {@code
   * releaseMemory}), the rest is closed anyway and the first failure is thrown afterwards, the
   * others suppressed into it.
   *
   * @throws IllegalStateException if a native call on this pool or one of its reservations, or a
   *     Spark spill of the task's owner, is in flight, on any thread ("… is in use by n native
   *     call(s); close refused"); nothing is closed
   */
  @Override
  public void close() {
    // A Spark spill of the task's owner in flight (perhaps on this very thread, through a spiller
    // that closes its pool) counts as a call: the Go pool's close would wait for it.
    if (markClosed(upstream.spillsInFlight())) {
      closeAll();
    }
  }

  /**
   * The task completion listener's close: refuses new calls, waits until the native calls in flight
   * on this pool and its reservations (on other threads) have returned, then closes as {@link
   * #close()} does. Returns at once if the pool is closed or another close is under way. Must not
   * run on a thread that is inside a call on this pool (a listener never is).
   */
  void closeAtTaskEnd() {
    int inFlight = callsInFlight();
    if (inFlight > 0) {
      // Another thread of the task is still inside a native call (perhaps parked in Spark's 1/2N
      // wait): the close waits for it, so say why the task's end may take a while.
      LOG.info(
          "nativepool: task {} completed with {} native call(s) in flight on its pool;"
              + " the close waits for them",
          taskAttemptId,
          inFlight);
    }
    if (awaitClosed()) {
      closeAll();
    }
  }

  /** The consumer peaks of {@code consumerPeaks0} ("name TAB bytes" lines) by name. */
  static Map<String, Long> parseConsumerPeaks(String lines) {
    Map<String, Long> out = new LinkedHashMap<>();
    for (String[] f : Records.parse(lines, 2, "consumerPeaks0")) {
      out.merge(f[0], Long.parseLong(f[1]), Math::max);
    }
    return out;
  }

  /** Closes the reservations and the handle; the pool's guard is closed and no call is in flight. */
  private void closeAll() {
    RuntimeException failure = null;
    for (Reservation r : reservations) {
      try {
        r.closeWithPool();
      } catch (RuntimeException e) {
        if (failure == null) {
          failure = e;
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    TaskPoolObserver observer = ExecutorState.observer();
    if (observer != null) {
      try {
        // The pool's and its consumers' peaks, for the ledger's high-water marks and the
        // executor's interval peak (a task shorter than the reporter's poll would otherwise not
        // show in the driver's stage peaks).
        observer.poolClosed(
            taskAttemptId,
            Natives.poolStats(handle).peak(),
            parseConsumerPeaks(Natives.consumerPeaks(handle)));
      } catch (RuntimeException e) {
        LOG.debug("nativepool: {}: no peaks for the ledger", describe(), e);
      }
    }
    try {
      Natives.closePool(handle);
    } catch (RuntimeException e) {
      if (failure == null) {
        failure = e;
      } else {
        failure.addSuppressed(e);
      }
    }
    if (failure != null) {
      throw failure;
    }
  }

  @Override
  String describe() {
    return "pool of task " + taskAttemptId;
  }

  @Override
  public String toString() {
    return "TaskPool(task="
        + taskAttemptId
        + ", kind="
        + kind
        + ", poolSize="
        + poolSize
        + ", chunkSize="
        + chunkSize
        + (isClosed() ? ", closed)" : ")");
  }
}
