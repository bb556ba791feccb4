package org.nativepool.spark.memory;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.ConcurrentModificationException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.TaskContext;
import org.apache.spark.memory.MemoryConsumer;
import org.apache.spark.memory.MemoryMode;
import org.apache.spark.memory.TaskMemoryManager;
import org.apache.spark.util.TaskCompletionListener;
import org.nativepool.spark.config.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who holds Spark's off-heap execution memory, by engine: the running tasks' {@code
 * TaskMemoryManager}s, tracked from their start to their end, and their consumers' figures, grouped
 * by the engine their class belongs to. The executor memory ledger names each engine's share as a
 * part of its own ({@code offHeap.comet}, {@code offHeap.gluten}, {@code offHeap.spark}, {@code
 * offHeap.other}), so that an executor running another engine (Comet, Gluten) beside the plugin, or
 * Spark alone in off-heap mode, shows what those consumers hold of Spark's memory, and, in the
 * ledger's unexplained remainder, the resident memory beyond it that nobody reserved.
 *
 * <p>Engines, by the consumer's class: nativepool's own ({@code org.nativepool.*}, left out: the
 * ledger has {@code native.*} for them); Comet ({@code org.apache.comet.*}, {@code
 * org.apache.spark.Comet*}, {@code org.apache.spark.sql.comet.*}); Gluten ({@code
 * org.apache.gluten.*}, {@code io.glutenproject.*}); Spark's own ({@code org.apache.spark.*}: its
 * sorters, aggregation maps, shuffle writers); anything else is {@code other}. Only off-heap
 * consumers count.
 *
 * <p>A task's consumers are read from Spark's private {@code TaskMemoryManager.consumers} set
 * without its lock (taking it would wait for any acquire or spill the task has in flight): a read
 * that meets a concurrent change is tried again, and a read that cannot be made costs that task's
 * figures for one reading, never the task. Each consumer's {@code getUsed()} is its own (Comet's
 * returns its task's native reservation). What cannot be read by reflection (a Spark line that
 * renamed the field) is logged once at WARN and the parts are left out.
 *
 * <p>Safe for concurrent use: tasks start and end on their threads while the ledger reads.
 */
public final class SparkConsumers {
  private static final Logger LOG = LoggerFactory.getLogger(SparkConsumers.class);

  /** The engines, in display order. */
  public static final List<String> ENGINES = List.of("comet", "gluten", "spark", "other");

  /**
   * The engines whose consumers fail their task when Spark grants a reservation short. Comet's
   * pools turn a short grant into an error, and those of its operators that cannot spill (a sort's
   * merge of its spill files) fail the task with it. Spark's own consumers spill and ask again, and
   * Gluten's spill through their own consumer before they give up, as Tungsten's do.
   */
  static final Set<String> FAIL_ON_SHORT_GRANT = Set.of("comet");

  private static final Field CONSUMERS = consumersField();

  private final ConcurrentHashMap<Long, TaskMemoryManager> tasks = new ConcurrentHashMap<>();

  /** Engines seen since this executor started: their parts stay in the ledger from then on. */
  private final Set<String> seen = ConcurrentHashMap.newKeySet();

  /** A registry with no task. */
  public SparkConsumers() {}

  private static Field consumersField() {
    try {
      Field f = TaskMemoryManager.class.getDeclaredField("consumers");
      f.setAccessible(true);
      return f;
    } catch (ReflectiveOperationException | RuntimeException e) {
      LOG.warn(
          "nativepool: cannot read TaskMemoryManager.consumers ({}); the ledger leaves out Spark's"
              + " off-heap memory by engine",
          e.toString());
      return null;
    }
  }

  /**
   * Tracks the task running on this thread until it completes. Called from the executor plugin's
   * {@code onTaskStart}; does nothing off a task thread.
   */
  public void track(TaskContext ctx) {
    if (ctx == null || CONSUMERS == null) {
      return;
    }
    long id = ctx.taskAttemptId();
    track(id, ctx.taskMemoryManager());
    ctx.addTaskCompletionListener((TaskCompletionListener) c -> untrack(id));
  }

  /** Tracks task {@code id}'s memory manager until {@link #untrack}: the tests' tasks. */
  void track(long id, TaskMemoryManager tmm) {
    if (CONSUMERS != null) {
      tasks.put(id, tmm);
    }
  }

  /** Stops tracking task {@code id}. */
  void untrack(long id) {
    tasks.remove(id);
  }

  /** The tasks tracked now. */
  public int tasks() {
    return tasks.size();
  }

  /**
   * What the running tasks' off-heap consumers hold of Spark's memory now, by engine ({@link
   * #ENGINES}, nativepool's own left out): every engine seen since the start, 0 when it holds
   * nothing now; empty while none was seen.
   */
  public Map<String, Long> offHeapByEngine() {
    Map<String, Long> now = new LinkedHashMap<>();
    for (OffHeapConsumer h : offHeapConsumers()) {
      long used = h.consumer().getUsed();
      if (used > 0) {
        seen.add(h.engine());
        now.merge(h.engine(), used, Long::sum);
      }
    }
    Map<String, Long> out = new LinkedHashMap<>();
    for (String e : ENGINES) {
      if (seen.contains(e)) {
        out.put(e, now.getOrDefault(e, 0L));
      }
    }
    return out;
  }

  /**
   * A running task's off-heap consumer that holds memory now and belongs to an engine that fails
   * its task when Spark grants it less than it asked ({@link #FAIL_ON_SHORT_GRANT}), said for a log
   * line; null if there is none. The pod guard holds none of Spark's memory while there is one.
   */
  public String holderFailingOnShortGrant() {
    for (OffHeapConsumer h : offHeapConsumers()) {
      long used;
      if (FAIL_ON_SHORT_GRANT.contains(h.engine()) && (used = h.consumer().getUsed()) > 0) {
        return h.engine()
            + "'s "
            + h.consumer().getClass().getName()
            + " in task "
            + h.task()
            + " holds "
            + Bytes.format(used);
      }
    }
    return null;
  }

  /** An off-heap consumer of a running task, and the engine it belongs to (never nativepool). */
  private record OffHeapConsumer(long task, MemoryConsumer consumer, String engine) {}

  /** The running tasks' off-heap consumers of every engine but nativepool's. */
  private List<OffHeapConsumer> offHeapConsumers() {
    List<OffHeapConsumer> out = new ArrayList<>();
    for (Map.Entry<Long, TaskMemoryManager> t : tasks.entrySet()) {
      for (MemoryConsumer c : consumersOf(t.getValue())) {
        String engine = engineOf(c.getClass().getName());
        if (c.getMode() == MemoryMode.OFF_HEAP && engine != null) {
          out.add(new OffHeapConsumer(t.getKey(), c, engine));
        }
      }
    }
    return out;
  }

  /** The engine a consumer's class belongs to; null for nativepool's own. */
  static String engineOf(String className) {
    if (className.startsWith("org.nativepool.")) {
      return null;
    }
    String lower = className.toLowerCase(Locale.ROOT);
    if (className.startsWith("org.apache.comet.")
        || className.startsWith("org.apache.spark.sql.comet.")
        || className.startsWith("org.apache.spark.Comet")
        || lower.startsWith("org.apache.spark.shuffle.comet.")) {
      return "comet";
    }
    if (className.startsWith("org.apache.gluten.") || className.startsWith("io.glutenproject.")) {
      return "gluten";
    }
    if (className.startsWith("org.apache.spark.")) {
      return "spark";
    }
    return "other";
  }

  /** A copy of the task's consumers; empty if it cannot be read now. */
  @SuppressWarnings("unchecked")
  private static List<MemoryConsumer> consumersOf(TaskMemoryManager tmm) {
    if (CONSUMERS == null) {
      return List.of();
    }
    Set<MemoryConsumer> set;
    try {
      set = (Set<MemoryConsumer>) CONSUMERS.get(tmm);
    } catch (IllegalAccessException e) {
      return List.of();
    }
    for (int attempt = 0; attempt < 3; attempt++) {
      try {
        List<MemoryConsumer> out = new ArrayList<>(set.size());
        for (MemoryConsumer c : set) {
          if (c != null) {
            out.add(c);
          }
        }
        return out;
      } catch (ConcurrentModificationException | ArrayIndexOutOfBoundsException e) {
        // the task registered a consumer meanwhile: try again
      }
    }
    return List.of();
  }
}
