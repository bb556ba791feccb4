package org.nativepool.spark.ui;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.status.AppHistoryServerPlugin;
import org.apache.spark.status.ElementTrackingStore;
import org.apache.spark.ui.SparkUI;
import org.apache.spark.util.kvstore.KVIndex;
import org.apache.spark.util.kvstore.KVStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.jdk.javaapi.CollectionConverters;
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

  /** Public no-argument constructor, for {@code ServiceLoader}. */
  public NativeMemoryHistoryPlugin() {}

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

  @Override
  public scala.collection.immutable.Seq<SparkListener> createListeners(
      SparkConf conf, ElementTrackingStore store) {
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
    return CollectionConverters.asScala(List.<SparkListener>of(listener)).toList();
  }

  @Override
  public void setupUI(SparkUI ui) {
    NativeMemoryTimeline.Snapshot s = read(ui.store().store());
    if (s != null) {
      String content = NativeMemoryPage.content(s);
      NativeMemoryWeb.attach(ui, () -> content);
    }
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
