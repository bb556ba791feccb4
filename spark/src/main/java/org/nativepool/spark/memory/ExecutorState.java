package org.nativepool.spark.memory;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.TaskContext;
import org.nativepool.spark.config.PoolSettings;
import org.nativepool.spark.jni.Natives;

/**
 * The executor side's process-wide state, all in this one place (the native library's own, its
 * load and its log sink, lives in {@code org.nativepool.spark.jni}):
 *
 * <ul>
 *   <li>what the executor plugin installed at its start: the {@link PoolSettings} tasks open their
 *       pools with, or why native pools are disabled on this executor, and the {@link
 *       TaskPoolObserver} told of every closing task pool (the executor memory ledger);
 *   <li>whether Java allocation sites are captured ({@link CallerSites});
 *   <li>each running task's {@link TaskResources}, closed in order at its end;
 *   <li>the running tasks' {@code TaskMemoryManager}s, whose consumers the ledger splits by engine
 *       ({@link SparkConsumers});
 *   <li>what outlived its task and is kept until it is freed (Java Arrow allocators whose buffers
 *       leaked).
 * </ul>
 *
 * <p>Spark runs one executor plugin per JVM; in local mode one JVM may see several SparkContexts
 * one after another, so a plugin's shutdown only clears what its own start installed. Safe for
 * concurrent use; holds no locks across calls out.
 */
public final class ExecutorState {
  /** What one plugin start installed; see {@link #install} and {@link #disable}. */
  private record Installed(PoolSettings settings, RuntimeException disabled, TaskPoolObserver observer) {}

  private static final AtomicReference<Installed> INSTALLED = new AtomicReference<>();

  private static volatile boolean allocationSites;

  private static final ConcurrentHashMap<Long, TaskResources> TASKS = new ConcurrentHashMap<>();

  private static final Set<Object> LINGERING = ConcurrentHashMap.newKeySet();

  private static final SparkConsumers SPARK_CONSUMERS = new SparkConsumers();

  private ExecutorState() {}

  /** The running tasks' memory managers, for the ledger's split of Spark's memory by engine. */
  public static SparkConsumers sparkConsumers() {
    return SPARK_CONSUMERS;
  }

  /**
   * The executor plugin started: tasks open their pools with {@code settings}, and closing pools
   * are reported to {@code observer} (may be null).
   *
   * @return a token for {@link #uninstall}
   */
  public static Object install(PoolSettings settings, TaskPoolObserver observer) {
    Installed i = new Installed(settings, null, observer);
    INSTALLED.set(i);
    return i;
  }

  /**
   * The executor plugin could not start native pools (the library did not load, a setting did not
   * parse): every task asking for a pool fails with {@code why}.
   *
   * @return a token for {@link #uninstall}
   */
  public static Object disable(RuntimeException why) {
    Installed i = new Installed(null, why, null);
    INSTALLED.set(i);
    return i;
  }

  /** Forgets what the start that returned {@code token} installed, unless another start replaced it. */
  public static void uninstall(Object token) {
    if (token instanceof Installed i) {
      INSTALLED.compareAndSet(i, null);
    }
  }

  /**
   * The settings of this executor's plugin.
   *
   * @throws IllegalStateException if no executor plugin has started in this JVM, or if it disabled
   *     native pools: then with the message of its failure, the same on every call, so every task
   *     asking for a native pool fails with it
   */
  public static PoolSettings settings() {
    Installed i = INSTALLED.get();
    if (i != null && i.disabled() != null) {
      throw new IllegalStateException(i.disabled().getMessage(), i.disabled());
    }
    if (i == null) {
      throw new IllegalStateException(
          "nativepool: the nativepool plugin is not initialised in this JVM"
              + " (set spark.plugins=org.nativepool.spark.NativePoolPlugin)");
    }
    return i.settings();
  }

  /** The observer the running plugin installed, or null. */
  public static TaskPoolObserver observer() {
    Installed i = INSTALLED.get();
    return i == null ? null : i.observer();
  }

  /** Whether reservations and Go copies record the Java caller that made them. */
  public static boolean allocationSites() {
    return allocationSites;
  }

  /**
   * Turns allocation sites on or off, on both sides: Go Arrow allocators made from now on record
   * the stack of every allocation, and Java reservations and Go copies entered from Java record
   * their Java caller ({@link CallerSites}). The plugin sets it from {@code
   * spark.nativepool.allocationSites} at its start and turns it off at its end. Loads the library
   * if needed.
   */
  public static void setAllocationSites(boolean on) {
    Natives.configureArrow(on);
    allocationSites = on;
  }

  /**
   * The resources of the task {@code ctx} runs, made (with its completion listener) on first use.
   * Call on the task's thread.
   *
   * @throws IllegalStateException if the task has completed
   */
  public static TaskResources resourcesOf(TaskContext ctx) {
    long id = ctx.taskAttemptId();
    TaskResources r = TASKS.get(id);
    if (r != null && !r.isClosed()) {
      return r;
    }
    if (ctx.isCompleted()) {
      throw new IllegalStateException("nativepool: task " + id + " completed");
    }
    TaskResources made = new TaskResources(id);
    TASKS.put(id, made); // only the task's own thread makes its resources
    made.listenTo(ctx, () -> TASKS.remove(id, made));
    return made;
  }

  /** The resources of the running tasks. */
  public static Collection<TaskResources> runningTasks() {
    return List.copyOf(TASKS.values());
  }

  /** Keeps {@code o}, which outlived its task, until {@link #release(Object)}. */
  public static void keep(Object o) {
    LINGERING.add(o);
  }

  /** Forgets {@code o}; returns whether it was kept. */
  public static boolean release(Object o) {
    return LINGERING.remove(o);
  }

  /** What is kept of {@code type}. */
  public static <T> List<T> kept(Class<T> type) {
    List<T> out = new ArrayList<>();
    for (Object o : LINGERING) {
      if (type.isInstance(o)) {
        out.add(type.cast(o));
      }
    }
    return out;
  }
}
