package org.nativepool.spark.arrow;





import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.arrow.memory.AllocationListener;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.TaskContext;
import org.nativepool.spark.jni.ArrowMemoryExhaustedException;
import org.nativepool.spark.jni.LeakKind;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.Spiller;
import org.nativepool.spark.memory.ExecutorState;
import org.nativepool.spark.memory.Leaks;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.memory.TaskPool;
import org.nativepool.spark.memory.TaskResources;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Spark task's Arrow allocators, on the side of the C Data Interface rule of {@code
 * ffi/doc.go}: the producer pays while the buffers live, the other side only tracks.
 *
 * <ul>
 *   <li>{@link #producer()}: for buffers Java makes. A {@link RootAllocator} whose {@link
 *       PoolAllocationListener} charges every buffer to the reservation {@value #JAVA_CONSUMER} of
 *       the task's native pool, so Java's Arrow memory, the native operators' memory and Spark's
 *       view of the task are one budget. It is bounded by the pool: a buffer the pool (that is,
 *       Spark) refuses throws {@link ArrowMemoryExhaustedException}, unlike Comet's {@code
 *       RootAllocator(Long.MAX_VALUE)}. Its own Arrow limit is {@code Long.MAX_VALUE}: the pool is
 *       the only gate, so there is one refusal message.
 *   <li>{@link #importer()}: for buffers Go made and exported ({@link GoBatch#exportTo}). A
 *       {@link RootAllocator} with {@link AllocationListener#NOOP} and no limit: Go keeps charging
 *       those bytes until Java releases them, so charging them here would count them twice, and
 *       refusing them would free nothing (they exist already). It tracks them ({@code
 *       getAllocatedMemory}) and reports them if they leak.
 *   <li>{@link #newNativeReservation}: reservations for native operators; their Go allocators are
 *       closed with this object, leak reports first.
 * </ul>
 *
 * <p>{@link #close()} (from the task completion listener, for {@link #forCurrentTask()}) frees
 * every buffer the task's allocators hold, on either side, or keeps it reported with its owner
 * until it is freed, so no batch outlives the task's memory unaccounted. In this order:
 *
 * <ol>
 *   <li>the roots {@link GoBatch#exportTo} made in {@link #importer()} and that are still open
 *       are closed: their Go buffers are freed (the C release callback runs) and reading them
 *       afterwards fails with Arrow's bounds or reference-count checks, not with a crash; a later
 *       {@code close()} of such a root is a no-op;
 *   <li>the native reservations' Go allocators are closed (each leak report is logged and kept in
 *       {@link #leakReports()}; leaked Go batches are released, which also releases any Java
 *       buffers they imported);
 *   <li>the importer and the producer are closed if they hold nothing. An allocator that still
 *       holds buffers (a Java batch the task never closed, or a foreign buffer retained past its
 *       root) is <em>not</em> closed: Arrow would refuse every later release into it, so the
 *       memory could never be freed. It is reported (kept in {@link #leakReports()}, with Arrow's
 *       verbose listing) and stays open in the process-wide {@link #lingering()} list, naming the
 *       task, until its last buffer is released; a late {@code close()} of the leaked batch then
 *       frees the memory and throws nothing;
 *   <li>the reservations: every byte still charged goes back to Spark before Spark's own leak
 *       check (Spark's figure for a finished task must be 0), never twice. Bytes that outlive the
 *       task are counted by {@link #lingeringBytes()} instead, until freed.
 * </ol>
 *
 * {@code close()} never throws for a leak: it reports. Each leak is also recorded once in the
 * process's leak book ({@link org.nativepool.spark.memory.Leaks}, counted in {@code leaks}/{@code
 * leakedBytes}): a Go allocator's by Go when it closes; the task's exported roots still open, one
 * {@code export} leak per consumer (freed here, so not resident); the producer's Java buffers, a
 * {@code java-arrow} leak whose bytes stay in {@code leakedResident} until their late release. The
 * importer's buffers are Go's exports, recorded by Go: the producer reports.
 *
 * <p>Safe for concurrent use by the task's threads.
 */
public final class TaskArrowAllocators implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(TaskArrowAllocators.class);

  /** The consumer name of the reservation the producer allocator charges. */
  public static final String JAVA_CONSUMER = "arrow-java";

  private final TaskPool pool;
  private final Reservation javaReservation;
  private final PoolAllocationListener listener;
  private final RootAllocator producer;
  private final Importer importer;
  private final Set<Reservation> nativeReservations = ConcurrentHashMap.newKeySet();
  private final List<String> leakReports = Collections.synchronizedList(new ArrayList<>());

  /**
   * Roots exported into {@link #importer} that may still be open, with the consumer whose Go
   * allocator made them (guarded by itself). Pruned of closed roots when it doubles, so a long task
   * that closes its roots keeps it small.
   */
  private final Map<VectorSchemaRoot, String> exports = new IdentityHashMap<>();

  /**
   * Bytes of the producer's leaked buffers still allocated after the task (0 unless it leaked): set
   * when the leak is recorded, lowered by each late release, reset when the producer drains. Summed
   * over the lingering objects into LEAKED_RESIDENT ({@link #pushResident()}).
   */
  private final AtomicLong leakedResident = new AtomicLong();

  private int exportsPruneAt = 64;
  private volatile boolean closed;

  private TaskArrowAllocators(TaskPool pool) {
    this.pool = pool;
    String task = "task-" + pool.taskAttemptId();
    this.javaReservation = pool.newReservation(JAVA_CONSUMER, false, null);
    this.listener = new PoolAllocationListener(javaReservation);
    this.producer = new RootAllocator(listener, Long.MAX_VALUE);
    this.importer = new Importer(this);
    LOG.debug("nativepool: Arrow allocators of {} open", task);
  }

  /**
   * The allocators of the task running on this thread, made on first call (over {@link
   * TaskPool#openForCurrentTask()}) and closed with the task's resources ({@link TaskResources}),
   * before its pools and so before Spark's leak check. Later calls in the same task return the same
   * object.
   *
   * @throws IllegalStateException if this is not a task thread, the plugin is not initialised, or
   *     the task has completed
   */
  public static TaskArrowAllocators forCurrentTask() {
    TaskContext ctx = TaskContext.get();
    if (ctx == null) {
      throw new IllegalStateException(
          "nativepool: no TaskContext on thread '"
              + Thread.currentThread().getName()
              + "'; open the task's Arrow allocators on the task's thread");
    }
    // One per task, closed by the task's resources before its pools (so before Spark's leak
    // check).
    return ExecutorState.resourcesOf(ctx)
        .getOrOpen(
            TaskArrowAllocators.class,
            TaskResources.Priority.ARROW,
            () -> new TaskArrowAllocators(TaskPool.openForCurrentTask()));
  }

  /**
   * The allocators of a task over an explicit pool, for tests and embedders that build Spark's
   * memory managers directly. No listener is registered: the caller closes this object, then the
   * pool. The pool stays the caller's.
   *
   * @throws IllegalStateException if the pool is closed
   */
  public static TaskArrowAllocators open(TaskPool pool) {
    Objects.requireNonNull(pool, "pool");
    return new TaskArrowAllocators(pool);
  }

  /** The allocator for Java-made buffers, charged to the pool; see the class comment. */
  public BufferAllocator producer() {
    return producer;
  }

  /** The allocator for Go-made buffers imported into Java, tracking only; see the class comment. */
  public BufferAllocator importer() {
    return importer;
  }

  /** The reservation {@link #producer()} charges ({@value #JAVA_CONSUMER}). */
  public Reservation javaReservation() {
    return javaReservation;
  }

  /** The producer's listener: charged bytes, refusals, late releases. */
  public PoolAllocationListener listener() {
    return listener;
  }

  /** The task's pool. */
  public TaskPool pool() {
    return pool;
  }

  /**
   * A new reservation in the task's pool for a native operator (for {@link GoBatch#importFrom}
   * and {@link GoBatch#copy}); its Go allocator is closed, and its leak report collected, by
   * {@link #close()}, which then closes the reservation.
   *
   * @param name the consumer name, as refusals and leak reports name it
   * @param spiller called when Spark asks the pool for memory back, or null
   * @throws IllegalStateException if this object or the pool is closed
   */
  public Reservation newNativeReservation(String name, Spiller spiller) {
    Objects.requireNonNull(name, "name");
    if (closed) {
      throw new IllegalStateException("nativepool: Arrow allocators of " + pool + " are closed");
    }
    Reservation r = pool.newReservation(name, spiller != null, spiller);
    nativeReservations.add(r);
    return r;
  }

  /** {@link #newNativeReservation(String, Spiller)} without a spiller. */
  public Reservation newNativeReservation(String name) {
    return newNativeReservation(name, null);
  }

  /** The leak reports collected by {@link #close()} (Go allocators first, then Java's). */
  public List<String> leakReports() {
    synchronized (leakReports) {
      return new ArrayList<>(leakReports);
    }
  }

  /** Whether {@link #close()} has run. */
  public boolean isClosed() {
    return closed;
  }

  /**
   * Reports and releases everything the task's Arrow allocators still hold; see the class comment
   * for the order. Idempotent; never throws for a leak (it is logged and kept in {@link
   * #leakReports()}). If this object opened the pool ({@link #forCurrentTask()}), the pool's own
   * completion listener closes it afterwards.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    closeExports();
    for (Reservation r : nativeReservations) {
      if (r.isClosed()) {
        continue;
      }
      try {
        report("Go allocator of '" + r.name() + "'", GoAllocators.closeAllocator(r));
        r.close();
      } catch (RuntimeException e) {
        LOG.error("nativepool: closing the Go Arrow allocator of '{}' failed", r.name(), e);
      }
    }
    nativeReservations.clear();
    boolean held = !closeJava("importer", importer);
    // Closed first, so that every release from here on is a late one (the leak's resident bytes
    // follow them down) and the figure the leak takes below already excludes those before it.
    listener.close();
    long producerHeld = producer.getAllocatedMemory();
    if (!closeJava("producer", producer)) {
      held = true;
      // Java's own buffers, charged to the pool until now: Java's leak (a Go buffer exported into
      // the importer is the Go allocator's leak, recorded by Go).
      leakedResident.set(producerHeld);
      listener.onLateRelease(this::lateRelease);
      Leaks.report(
          pool.taskAttemptId(),
          JAVA_CONSUMER,
          LeakKind.JAVA_ARROW,
          producerHeld,
          producerHeld,
          javaReservation.site());
    }
    javaReservation.close();
    if (held) {
      ExecutorState.keep(this);
    }
    sweepLingering();
    if (leakedResident.get() > 0) {
      pushResident();
    }
  }

  /** A leaked producer buffer freed after the task: LEAKED_RESIDENT goes down with it. */
  private void lateRelease(long size) {
    leakedResident.accumulateAndGet(size, (cur, n) -> Math.max(0, cur - n));
    pushResident();
  }

  /** Tells the Go side what the lingering producers' leaked buffers still hold. */
  private static void pushResident() {
    long n = 0;
    for (TaskArrowAllocators t : ExecutorState.kept(TaskArrowAllocators.class)) {
      n += t.leakedResident.get();
    }
    try {
      Natives.leakResident(n);
    } catch (RuntimeException e) {
      LOG.error("nativepool: could not update the leaked resident bytes ({})", n, e);
    }
  }

  /**
   * Registers a root {@link GoBatch#exportTo} made in {@code importer}, if that is the importer
   * of an open task's allocators, so that the task's end closes it if the caller has not.
   */
  static void trackExport(BufferAllocator importer, VectorSchemaRoot root, String consumer) {
    if (importer instanceof Importer i && !i.owner.closed) {
      i.owner.track(root, consumer);
    }
  }

  /**
   * A task's importer: a root allocator that knows its task's allocators, so that a batch exported
   * into it is tracked ({@link GoBatch#exportTo}) without a process-wide map.
   */
  private static final class Importer extends RootAllocator {
    final TaskArrowAllocators owner;

    Importer(TaskArrowAllocators owner) {
      super(AllocationListener.NOOP, Long.MAX_VALUE);
      this.owner = owner;
    }
  }

  private void track(VectorSchemaRoot root, String consumer) {
    synchronized (exports) {
      exports.put(root, consumer);
      if (exports.size() >= exportsPruneAt) {
        exports.keySet().removeIf(TaskArrowAllocators::isReleased);
        exportsPruneAt = Math.max(64, 2 * exports.size());
      }
    }
  }

  /** Whether every vector of {@code root} has released its buffers (it was closed or cleared). */
  private static boolean isReleased(VectorSchemaRoot root) {
    for (FieldVector v : root.getFieldVectors()) {
      if (v.getBufferSize() != 0) {
        return false;
      }
    }
    return true;
  }

  /**
   * Closes the exported roots still open; the Go side frees their buffers. Each consumer's are one
   * leak ({@link LeakKind#EXPORT}), not resident: they are freed here.
   */
  private void closeExports() {
    Map<VectorSchemaRoot, String> open;
    synchronized (exports) {
      open = new IdentityHashMap<>(exports);
      exports.clear();
    }
    int n = 0;
    long bytes = 0;
    Map<String, Long> byConsumer = new TreeMap<>();
    for (Map.Entry<VectorSchemaRoot, String> x : open.entrySet()) {
      VectorSchemaRoot root = x.getKey();
      if (isReleased(root)) {
        continue;
      }
      n++;
      try {
        long b = 0;
        for (FieldVector v : root.getFieldVectors()) {
          b += v.getBufferSize();
        }
        bytes += b;
        byConsumer.merge(x.getValue(), b, Long::sum);
        root.close();
      } catch (RuntimeException e) {
        LOG.error("nativepool: closing a Go batch's Java root at the end of {} failed", this, e);
      }
    }
    for (Map.Entry<String, Long> e : byConsumer.entrySet()) {
      Leaks.report(
          pool.taskAttemptId(), e.getKey(), LeakKind.EXPORT, e.getValue(), 0, null);
    }
    if (n > 0) {
      report(
          "Go batches exported to Java",
          "nativepool: task "
              + pool.taskAttemptId()
              + ": "
              + n
              + " Go batch(es) exported to Java ("
              + bytes
              + " bytes) were still open at task end; closed, their Go buffers freed");
    }
  }

  /**
   * Closes a Java allocator if it holds nothing and returns true; otherwise reports what it holds
   * and leaves it open (a closed Arrow allocator refuses every later release, so the memory could
   * never be freed) and returns false.
   */
  private boolean closeJava(String role, RootAllocator a) {
    long held = a.getAllocatedMemory();
    if (held == 0) {
      try {
        a.close();
        return true;
      } catch (IllegalStateException e) {
        // A buffer was allocated concurrently with the task end: keep it open, as below.
        held = a.getAllocatedMemory();
      }
    }
    report(
        "Java " + role + " allocator of task " + pool.taskAttemptId(),
        "Memory was leaked by query. Memory leaked: ("
            + held
            + ") in the Java "
            + role
            + " allocator of task "
            + pool.taskAttemptId()
            + "; kept open and listed by TaskArrowAllocators.lingering() until released\n"
            + a.toVerboseString());
    return false;
  }

  /** Bytes the Java allocators of this object still hold. */
  private long javaHeld() {
    return importer.getAllocatedMemory() + producer.getAllocatedMemory();
  }

  /** Closes and forgets the lingering objects whose allocators have drained. */
  private static void sweepLingering() {
    for (TaskArrowAllocators t : ExecutorState.kept(TaskArrowAllocators.class)) {
      if (t.javaHeld() != 0) {
        continue;
      }
      boolean done = true;
      for (RootAllocator a : new RootAllocator[] {t.importer, t.producer}) {
        try {
          a.close();
        } catch (IllegalStateException e) {
          done = false; // a release is in flight: next sweep
        }
      }
      if (done && ExecutorState.release(t)) {
        LOG.info("nativepool: the Arrow memory task {} left behind is freed", t.pool.taskAttemptId());
        t.leakedResident.set(0);
        pushResident();
      }
    }
  }

  /**
   * The Java Arrow memory that outlived its task, one line per task: its owner (the task attempt),
   * the bytes its importer and producer still hold. A task leaves this list when its last buffer is
   * released (a late {@code close()} of the leaked batch), and its allocators are then closed.
   */
  public static List<String> lingering() {
    sweepLingering();
    List<String> out = new ArrayList<>();
    for (TaskArrowAllocators t : ExecutorState.kept(TaskArrowAllocators.class)) {
      out.add(
          "task "
              + t.pool.taskAttemptId()
              + ": importer holds "
              + t.importer.getAllocatedMemory()
              + " bytes, producer holds "
              + t.producer.getAllocatedMemory()
              + " bytes");
    }
    return out;
  }

  /** The bytes listed by {@link #lingering()}: Java Arrow memory that outlived its task. */
  public static long lingeringBytes() {
    sweepLingering();
    long n = 0;
    for (TaskArrowAllocators t : ExecutorState.kept(TaskArrowAllocators.class)) {
      n += t.javaHeld();
    }
    return n;
  }

  /**
   * The bytes the Java producers of every running task's allocators and of the lingering ones
   * hold now: the Arrow Java part of the executor memory ledger ({@code LedgerReader}).
   */
  public static long javaAllocatedBytes() {
    Set<TaskArrowAllocators> all = Collections.newSetFromMap(new IdentityHashMap<>());
    for (TaskResources r : ExecutorState.runningTasks()) {
      TaskArrowAllocators t = r.find(TaskArrowAllocators.class);
      if (t != null) {
        all.add(t);
      }
    }
    all.addAll(ExecutorState.kept(TaskArrowAllocators.class));
    long sum = 0;
    for (TaskArrowAllocators t : all) {
      sum += t.producer.getAllocatedMemory();
    }
    return sum;
  }

  private void report(String what, String report) {
    if (report == null) {
      return;
    }
    leakReports.add(report);
    LOG.warn("nativepool: Arrow leak at task end, {}: {}", what, report);
  }

  @Override
  public String toString() {
    return "TaskArrowAllocators(task="
        + pool.taskAttemptId()
        + ", javaCharged="
        + listener.charged()
        + (closed ? ", closed)" : ")");
  }
}
