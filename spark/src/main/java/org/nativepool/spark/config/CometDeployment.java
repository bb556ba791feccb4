package org.nativepool.spark.config;

import org.apache.spark.SparkConf;

/**
 * Whether a configuration deploys DataFusion Comet beside the plugin: by its plugin in {@code
 * spark.plugins} or its session extensions in {@code spark.sql.extensions}. Two things depend on
 * it: which copy of Arrow's C Data Interface the JVM must load ({@code arrow.CDataOrigin}), and
 * whether the pod guard may hold Spark's off-heap memory ({@link GuardSettings}: Comet 1.2 fails a
 * task whose reservation that cannot spill Spark grants short). Stateless.
 */
public final class CometDeployment {
  private CometDeployment() {}

  /** Comet's plugin class, as an application names it in {@code spark.plugins}. */
  public static final String PLUGIN = "org.apache.spark.CometPlugin";

  /** Comet's session extensions, as an application names them in {@code spark.sql.extensions}. */
  public static final String EXTENSIONS = "org.apache.comet.CometSparkSessionExtensions";

  /** Whether a {@code spark.plugins} value (a comma-separated list) names Comet's plugin. */
  public static boolean inPlugins(String plugins) {
    return NativePoolConf.names(plugins).contains(PLUGIN);
  }

  /**
   * Where {@code conf} deploys Comet, said for a log line ({@code spark.plugins names
   * org.apache.spark.CometPlugin}); null where it does not.
   */
  public static String of(SparkConf conf) {
    if (inPlugins(conf.get("spark.plugins", ""))) {
      return "spark.plugins names " + PLUGIN;
    }
    if (NativePoolConf.names(conf.get("spark.sql.extensions", "")).contains(EXTENSIONS)) {
      return "spark.sql.extensions names " + EXTENSIONS;
    }
    return null;
  }
}
