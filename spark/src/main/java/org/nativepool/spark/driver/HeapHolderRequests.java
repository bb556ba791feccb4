package org.nativepool.spark.driver;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.nativepool.spark.config.HeapHolderSettings;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.events.HeapHoldersEvent;
import org.nativepool.spark.events.HeapHoldersRequest;
import org.nativepool.spark.ledger.HeapHolders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Native Memory page's "who holds the heap" action, per JVM ({@link #request}). It changes what
 * a JVM does (it pauses for the path search), so it obeys Spark's modify permissions as the UI's
 * kill links do: {@code SecurityManager.checkModifyPermissions} of the request's remote user
 * ({@code spark.acls.enable}, {@code spark.modify.acls}, {@code spark.modify.acls.groups}, the
 * admin lists), and {@link NativePoolConf#HEAP_HOLDERS_ON_DEMAND} turns it off. A JVM is analysed
 * on demand at most once per {@link NativePoolConf#HEAP_HOLDERS_INTERVAL} and one request at a time
 * waits for it.
 *
 * <p>The driver analyses itself on a thread of its own, {@code nativepool-heap-holders}; an
 * executor gets its request when it next asks ({@link #poll}, once per heartbeat) and sends back a
 * {@link HeapHoldersEvent} ({@link #received}). Each result is logged at INFO and posted, so the
 * event log keeps it and the page shows it. Safe for concurrent use.
 */
final class HeapHolderRequests {
  /** The driver side's logger: operators find these lines on {@code DriverSide}. */
  private static final Logger LOG = LoggerFactory.getLogger(DriverSide.class);

  private final HeapHolderSettings settings;
  private final Predicate<String> mayModify;
  private final Predicate<String> known;
  private final HeapHolders local;
  private final Consumer<SparkListenerEvent> post;
  private final ExecutorService thread =
      Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "nativepool-heap-holders");
            t.setDaemon(true);
            return t;
          });

  /** JVM → when its last request was accepted (epoch ms). Guarded by this. */
  private final Map<String, Long> accepted = new HashMap<>();

  /** Executor → the request it has not collected yet. Guarded by this. */
  private final Map<String, HeapHoldersRequest> pending = new HashMap<>();

  /**
   * @param settings whether the action is on, and its rate limit
   * @param mayModify Spark's modify permission of a remote user (null: unauthenticated)
   * @param known whether an executor id is a live executor
   * @param local the driver's own heap holders; null when its recording is off
   * @param post posts an event to Spark's listener bus
   */
  HeapHolderRequests(
      HeapHolderSettings settings,
      Predicate<String> mayModify,
      Predicate<String> known,
      HeapHolders local,
      Consumer<SparkListenerEvent> post) {
    this.settings = settings;
    this.mayModify = mayModify;
    this.known = known;
    this.local = local;
    this.post = post;
  }

  /** Whether the page offers the action. */
  boolean enabled() {
    return settings.onDemand();
  }

  /**
   * A user asks who holds the heap of {@code jvm} (an executor id, or {@value
   * GrowthReportEvent#DRIVER}). Returns what the page tells them: the request accepted, or {@code
   * refused: } and why (the action is off, no modify permission, an unknown JVM, a request still
   * waiting, or too soon after the last).
   */
  String request(String jvm, String user) {
    if (!settings.onDemand()) {
      return "refused: the action is off ("
          + NativePoolConf.HEAP_HOLDERS_ON_DEMAND.key()
          + " or "
          + NativePoolConf.HEAP_HOLDERS.key()
          + " is false)";
    }
    if (!mayModify.test(user)) {
      LOG.info("nativepool: heap holders of {} refused to {}: no modify permission", jvm, user);
      return "refused: user "
          + (user == null ? "(unauthenticated)" : user)
          + " has no modify permission (spark.acls.enable, spark.modify.acls)";
    }
    boolean driver = GrowthReportEvent.DRIVER.equals(jvm);
    if (jvm == null || (!driver && !known.test(jvm))) {
      return "refused: no live JVM " + jvm;
    }
    long now = System.currentTimeMillis();
    HeapHoldersRequest r = new HeapHoldersRequest(jvm, false, user, now);
    synchronized (this) {
      if (pending.containsKey(jvm)) {
        return "refused: a request for " + name(jvm) + " is still waiting for it";
      }
      Long last = accepted.get(jvm);
      long next = last == null ? 0 : last + settings.minIntervalMillis();
      if (now < next) {
        return "refused: one analysis of a JVM per "
            + settings.minIntervalMillis() / 1000
            + " s; the next for "
            + name(jvm)
            + " in "
            + Math.max(1, (next - now + 999) / 1000)
            + " s";
      }
      accepted.put(jvm, now);
      if (!driver) {
        pending.put(jvm, r);
      }
    }
    if (!driver) {
      return "requested: executor "
          + jvm
          + " analyses its heap when it next reports (within its heartbeat interval); the"
          + " result appears under Heap holders";
    }
    if (local == null) {
      return "refused: the driver's recording is off";
    }
    try {
      thread.execute(() -> received(local.tryAnalyze(jvm, r.trigger(), 0)));
    } catch (RejectedExecutionException e) {
      return "refused: the driver side is stopping";
    }
    return "requested: the driver analyses its heap now; the result appears under Heap holders";
  }

  /** An executor asks whether a user requested its heap holders: the request, or null. */
  synchronized HeapHoldersRequest poll(String executorId) {
    return pending.remove(executorId);
  }

  /** A result, the driver's or an executor's: logged and posted. */
  void received(HeapHoldersEvent e) {
    LOG.info(e.describe());
    post.accept(e);
  }

  /** Stops the driver's analysis thread. */
  void stop() {
    thread.shutdownNow();
  }

  private static String name(String jvm) {
    return GrowthReportEvent.DRIVER.equals(jvm) ? "the driver" : "executor " + jvm;
  }
}
