package org.nativepool.spark.testing;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkEnv;
import org.apache.spark.metrics.source.Source;
import org.nativepool.spark.NativePoolPlugin;

/**
 * The metric sources Spark's metrics system holds under a name, as a Java list. Spark returns a
 * Scala {@code Seq}; this walks its iterator, the one part of it whose shape is the same in Scala
 * 2.12 and 2.13, so the tests build for every Spark line without a collection converter (2.13's
 * {@code scala.jdk.javaapi} is missing from 2.12, 2.12's {@code JavaConverters} deprecated in
 * 2.13).
 */
public final class SparkMetrics {
  /** The name of the plugin's metric sources: Spark's "plugin." and the plugin's class name. */
  public static final String PLUGIN_SOURCE = "plugin." + NativePoolPlugin.class.getName();

  private SparkMetrics() {}

  /** The sources of the running SparkContext's metrics system named {@code name}. */
  public static List<Source> sourcesByName(String name) {
    List<Source> out = new ArrayList<>();
    var it = SparkEnv.get().metricsSystem().getSourcesByName(name).iterator();
    while (it.hasNext()) {
      out.add(it.next());
    }
    return out;
  }

  /** The plugin's metric sources ({@link #PLUGIN_SOURCE}): the executor's, and the driver's. */
  public static List<Source> pluginSources() {
    return sourcesByName(PLUGIN_SOURCE);
  }
}
