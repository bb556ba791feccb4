package org.nativepool.spark.driver;

import org.apache.spark.SparkConf;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.config.PoolSettings;
import org.nativepool.spark.jni.LibraryLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver's startup check: the application's {@code spark.nativepool.*} settings must parse
 * (a bad value throws here, naming the key), and unless {@link NativePoolConf#DRIVER_CHECK} is
 * false the library the executors will load is loaded and version-checked in the driver's JVM, so
 * that a missing library or a version mismatch fails the application once, when the SparkContext
 * starts, instead of in every task. Without an explicit path on a driver platform the jar carries
 * no library for (a macOS client, say) it only logs that it skipped the check; the executors still
 * refuse their tasks. Stateless.
 */
final class DriverCheck {
  private static final Logger LOG = LoggerFactory.getLogger(DriverCheck.class);

  private DriverCheck() {}

  /**
   * Runs the check.
   *
   * @return where the library was loaded from, or why the check was skipped
   * @throws IllegalStateException if the library cannot be loaded or reports another version (the
   *     message is the one every task would fail with)
   * @throws IllegalArgumentException for a {@code spark.nativepool.*} value that does not parse
   */
  static String run(SparkConf conf) {
    PoolSettings s = PoolSettings.fromConf(conf);
    if (!NativePoolConf.DRIVER_CHECK.read(conf)) {
      return "not checked on the driver (" + NativePoolConf.DRIVER_CHECK.key() + "=false)";
    }
    if (s.library() == null && LibraryLoader.bundledLibrary() == null) {
      String why =
          "not checked on the driver: the jar carries no library for "
              + LibraryLoader.platform()
              + "; executors check their own";
      LOG.warn("nativepool: {}", why);
      return why;
    }
    String source = LibraryLoader.ensureLoaded(s.library(), s.libraryOrigin());
    LOG.info("nativepool: driver check passed: {}", source);
    return source;
  }
}
