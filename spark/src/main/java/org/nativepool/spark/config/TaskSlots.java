package org.nativepool.spark.config;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.SparkConf;

/**
 * How many tasks an executor runs at once: its cores ({@code spark.executor.cores}; in local mode
 * the N of {@code local[N]}, all processors for {@code local[*]}; elsewhere, unset, all the
 * processors the JVM sees, as a standalone executor takes a worker's cores) divided by {@code
 * spark.task.cpus}, at least 1. Stateless.
 */
public final class TaskSlots {
  private TaskSlots() {}

  private static final Pattern LOCAL = Pattern.compile("local(?:-cluster)?\\[([^,\\]]+)");

  /** The task slots of {@code conf}'s executors. */
  public static int of(SparkConf conf) {
    int cores = cores(conf);
    int perTask = Math.max(1, conf.getInt("spark.task.cpus", 1));
    return Math.max(1, cores / perTask);
  }

  private static int cores(SparkConf conf) {
    String master = conf.get("spark.master", "");
    int processors = Runtime.getRuntime().availableProcessors();
    if (master.startsWith("local")) {
      Matcher m = LOCAL.matcher(master);
      if (master.startsWith("local-cluster")) {
        return conf.getInt("spark.executor.cores", processors);
      }
      if (!m.find()) {
        return 1; // "local": one thread
      }
      String n = m.group(1);
      if (n.equals("*")) {
        return processors;
      }
      try {
        return Math.max(1, Integer.parseInt(n.trim()));
      } catch (NumberFormatException e) {
        return processors;
      }
    }
    return conf.getInt("spark.executor.cores", processors);
  }
}
