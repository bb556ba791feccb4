package org.nativepool.spark.config;

import java.nio.file.Path;
import org.apache.spark.SparkConf;
import org.apache.spark.util.Utils;

/**
 * Spark's local directory in this JVM, where the plugin writes its scratch files (the heap holders'
 * recordings): Spark's own choice ({@code Utils.getLocalDir}: YARN's or Kubernetes' local
 * directories, else {@code spark.local.dir}, else {@code java.io.tmpdir}).
 *
 * <p>A class of its own because the call is not the same on every Spark line: {@code
 * Utils.getLocalDir} takes a {@code SparkConf} up to Spark 4.0 and a {@code ReadOnlySparkConf} from
 * 4.1, so a class that makes it, compiled for one line, fails to load on another. The plugin's
 * entry classes ({@code DriverSide}, {@code ExecutorSide}) must load on every line, so that a jar
 * of another line says so (naming both lines and the jar to deploy) instead of failing with a
 * {@code NoClassDefFoundError}: they reach this class only after that check.
 */
public final class LocalDir {
  private LocalDir() {}

  /** Spark's local directory for {@code conf}. */
  public static Path of(SparkConf conf) {
    return Path.of(Utils.getLocalDir(conf));
  }
}
