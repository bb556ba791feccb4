package org.nativepool.spark;

import java.util.Arrays;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.memory.TaskPool;

/**
 * Run in a fresh JVM by {@link PluginFailureTest} (the library loads once per JVM): starts a
 * local[1] SparkContext with the plugin, {@code spark.nativepool.library=<args[0]>}, {@code
 * spark.nativepool.driverCheck=<args[1]>} and any further {@code key=value} arguments as settings,
 * runs one task that opens a native pool, and prints one line: {@code context-failed <message>},
 * {@code task-failed <message>} or {@code ok}.
 */
public final class PluginFailureProbe {
  private PluginFailureProbe() {}

  public static void main(String[] args) {
    SparkConf conf =
        new SparkConf()
            .setMaster("local[1]")
            .setAppName("plugin-failure-probe")
            .set("spark.ui.enabled", "false")
            .set("spark.plugins", NativePoolPlugin.class.getName())
            .set("spark.memory.offHeap.enabled", "true")
            .set("spark.memory.offHeap.size", "16m")
            .set(NativePoolConf.LIBRARY.key(), args[0])
            .set(NativePoolConf.DRIVER_CHECK.key(), args[1]);
    for (int i = 2; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      conf.set(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    JavaSparkContext jsc;
    try {
      jsc = new JavaSparkContext(conf);
    } catch (RuntimeException e) {
      System.out.println("context-failed " + e.getMessage());
      return;
    }
    try {
      jsc.parallelize(Arrays.asList(1), 1)
          .foreach(
              x -> {
                try (TaskPool p = TaskPool.openForCurrentTask()) {
                  p.stats();
                }
              });
      System.out.println("ok");
    } catch (Exception e) { // SparkException (checked, thrown by Scala) when the job aborts
      // The job's failure text: the task's exception message is in it, after Spark's own words.
      String m = e.getMessage();
      int at = m.indexOf("java.lang.IllegalStateException: ");
      String cause = at < 0 ? m : m.substring(at + "java.lang.IllegalStateException: ".length());
      System.out.println("task-failed " + cause.split("\n")[0]);
    } finally {
      jsc.stop();
    }
  }
}
