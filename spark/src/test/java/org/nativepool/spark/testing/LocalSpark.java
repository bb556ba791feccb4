package org.nativepool.spark.testing;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Path;
import java.util.Collection;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.sql.SparkSession;
import org.nativepool.spark.NativePoolPlugin;

/**
 * What every test that runs the plugin in a local SparkSession needs: the native library under test
 * (the path surefire passes as {@value #LIBRARY_PROPERTY}, see the module's pom.xml), a session
 * builder with the plugin, off-heap memory and that library, an uncompressed event log, the
 * plugin's events as they reach Spark's listener bus, and a stop that leaves no session behind for
 * the next test class.
 */
public final class LocalSpark {
  /** The system property surefire sets to the library under test (build/lib/libnativepool.so). */
  public static final String LIBRARY_PROPERTY = "nativepool.test.library";

  private LocalSpark() {}

  /**
   * The absolute path of the native library under test. Fails the calling test when surefire did
   * not set it, or when no file is there (run {@code make lib}).
   */
  public static String library() {
    String lib = System.getProperty(LIBRARY_PROPERTY);
    assertNotNull(lib, "surefire sets " + LIBRARY_PROPERTY);
    assertTrue(new File(lib).isFile(), "no library at " + lib + " (run make lib)");
    return lib;
  }

  /**
   * A session builder for {@code master} (e.g. {@code local[2]}) named {@code appName}, with the
   * plugin ({@code spark.plugins}), {@code offHeapSize} of off-heap memory ({@code 128m}) and the
   * library under test ({@code spark.nativepool.library}); Spark's task memory leak check throws
   * ({@code spark.unsafe.exceptionOnMemoryLeak}), so that a task ending with memory still acquired
   * fails the test, and the web UI is off. The test adds its own settings, which win over these.
   */
  public static SparkSession.Builder builder(String master, String appName, String offHeapSize) {
    return SparkSession.builder()
        .master(master)
        .appName(appName)
        .config("spark.plugins", NativePoolPlugin.class.getName())
        .config("spark.memory.offHeap.enabled", "true")
        .config("spark.memory.offHeap.size", offHeapSize)
        .config("spark.nativepool.library", library())
        .config("spark.unsafe.exceptionOnMemoryLeak", "true")
        .config("spark.ui.enabled", "false");
  }

  /**
   * The settings of an uncompressed event log in {@code dir}, for {@link
   * SparkSession.Builder#config(SparkConf)}: tests read it back as JSON lines ({@link EventLogs}).
   */
  public static SparkConf eventLog(Path dir) {
    return new SparkConf(false)
        .set("spark.eventLog.enabled", "true")
        .set("spark.eventLog.dir", dir.toUri().toString())
        .set("spark.eventLog.compress", "false");
  }

  /**
   * Adds to {@code events}, as Spark's listener bus delivers them, the events that are none of
   * Spark's own ({@code onOtherEvent}): the plugin's. {@code events} must be safe for the bus's
   * thread to add to while the test reads it (a {@code CopyOnWriteArrayList}).
   */
  public static void collectOtherEvents(
      SparkSession spark, Collection<? super SparkListenerEvent> events) {
    spark
        .sparkContext()
        .addSparkListener(
            new SparkListener() {
              @Override
              public void onOtherEvent(SparkListenerEvent event) {
                events.add(event);
              }
            });
  }

  /**
   * Stops {@code spark} (nothing when it is null: its start failed) and clears the thread's active
   * and the process's default session, so that the next test class's builder starts a new session
   * instead of getting this stopped one.
   */
  public static void stop(SparkSession spark) {
    if (spark == null) {
      return;
    }
    spark.stop();
    SparkSession.clearActiveSession();
    SparkSession.clearDefaultSession();
  }
}
