package org.nativepool.spark.ui;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.NoSuchElementException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.status.AppHistoryServerPlugin;
import org.apache.spark.status.ElementTrackingStore;
import org.apache.spark.ui.SparkUI;
import org.apache.spark.util.kvstore.KVIndex;
import org.apache.spark.util.kvstore.KVStore;
import org.nativepool.spark.config.SparkLine;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.collection.immutable.List;
import scala.collection.immutable.List$;
import scala.runtime.BoxedUnit;

/**
 * The Native Memory page in Spark's History Server, built from the event log alone: Spark's {@code
 * FsHistoryProvider} finds this class through {@code ServiceLoader} (the plugin jar's {@code
 * META-INF/services/org.apache.spark.status.AppHistoryServerPlugin}) when the jar is on the History
 * Server's classpath. While it replays an application's event log, a {@link NativeMemoryListener}
 * gathers the plugin's events; when the replay ends, the timeline is written to the application's
 * store as one {@link Entry}, so that a History Server with a disk store shows the page again
 * without replaying. {@link #setupUI} attaches the page where the store has an entry: applications
 * that ran without the plugin get none.
 */
public final class NativeMemoryHistoryPlugin implements AppHistoryServerPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(NativeMemoryHistoryPlugin.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final AtomicBoolean MISMATCH_LOGGED = new AtomicBoolean();

  /**
   * Public no-argument constructor, for {@code ServiceLoader}; says at ERROR, once, when the jar is
   * of another Spark line than the History Server's ({@link #onBuiltLine}).
   */
  public NativeMemoryHistoryPlugin() {
    onBuiltLine();
  }

  /**
   * The timeline of one application in the History Server's store: its {@link
   * NativeMemoryTimeline.Snapshot} as JSON, under the one key {@value #KEY}.
   */
  public static final class Entry {
    /** The entry's key: one per application store. */
    public static final String KEY = "nativepool.nativeMemory";

    /** The store's natural key. */
    @KVIndex public final String id;

    /** The snapshot, as JSON. */
    public final String json;

    /** An entry; Jackson's creator when the store reads it back. */
    @JsonCreator
    public Entry(@JsonProperty("id") String id, @JsonProperty("json") String json) {
      this.id = id;
      this.json = json;
    }
  }

  /**
   * The one listener, as a Scala {@code List}: a subtype of the {@code Seq} Spark declares on Scala
   * 2.12 ({@code scala.collection.Seq}) and 2.13 ({@code scala.collection.immutable.Seq}) alike.
   */
  @Override
  public List<SparkListener> createListeners(SparkConf conf, ElementTrackingStore store) {
    if (!onBuiltLine()) {
      return List$.MODULE$.empty();
    }
    NativeMemoryListener listener = new NativeMemoryListener(new NativeMemoryTimeline());
    store.onFlush(
        () -> {
          if (listener.seen()) {
            try {
              String json = JSON.writeValueAsString(listener.timeline().snapshot());
              store.write(new Entry(Entry.KEY, json));
            } catch (JsonProcessingException e) {
              LOG.warn("nativepool: cannot keep the native memory timeline", e);
            }
          }
          return BoxedUnit.UNIT;
        });
    return List$.MODULE$.<SparkListener>empty().$colon$colon(listener);
  }

  @Override
  public void setupUI(SparkUI ui) {
    if (!onBuiltLine()) {
      return;
    }
    NativeMemoryTimeline.Snapshot s = read(ui.store().store());
    if (s != null) {
      String content = NativeMemoryPage.content(s);
      NativeMemoryWeb.attach(ui, () -> content);
    }
  }

  /**
   * Whether this jar is built for the History Server's Spark line. A jar of another line cannot
   * serve the page (its page class is built for another servlet API, its Scala may differ): the
   * History Server then shows no Native Memory tab, and says why once, at ERROR, when it first
   * loads its plugins (at its first replay), naming the artifact to put on its classpath instead.
   * (A jar of the other Scala version fails before: Spark calls a {@code createListeners} of its
   * own Scala's {@code Seq}, which that jar's class does not have.)
   */
  static boolean onBuiltLine() {
    String m = SparkLine.current().mismatch();
    if (m != null && !MISMATCH_LOGGED.getAndSet(true)) {
      LOG.error("{}; the History Server shows no Native Memory tab", m);
    }
    return m == null;
  }

  /** The snapshot kept in {@code store}, or null if there is none (or it cannot be read). */
  static NativeMemoryTimeline.Snapshot read(KVStore store) {
    try {
      Entry e = store.read(Entry.class, Entry.KEY);
      return JSON.readValue(e.json, NativeMemoryTimeline.Snapshot.class);
    } catch (NoSuchElementException e) {
      return null;
    } catch (Exception e) {
      LOG.warn("nativepool: cannot read the native memory timeline", e);
      return null;
    }
  }
}
