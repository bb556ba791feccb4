package org.nativepool.publishtest;

import org.apache.spark.TaskContext;
import org.nativepool.spark.NativePoolPlugin;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.memory.TaskPool;

/**
 * What a Spark application's code does with the plugin, compiled against the installed artifact
 * and Spark only: names the plugin class and grows a reservation of the task's pool.
 */
public final class Consumer {
  private Consumer() {}

  /** The value of spark.plugins that loads nativepool. */
  public static String plugin() {
    return NativePoolPlugin.class.getName();
  }

  /** Reserves {@code bytes} in the current task's native pool, and gives them back. */
  public static boolean reserve(long bytes) {
    if (TaskContext.get() == null) {
      return false;
    }
    try (TaskPool pool = TaskPool.openForCurrentTask();
        Reservation r = pool.newReservation("publish-test", false, null)) {
      return r.tryGrow(bytes);
    }
  }
}
