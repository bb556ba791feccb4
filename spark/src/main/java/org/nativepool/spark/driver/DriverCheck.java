package org.nativepool.spark.driver;

import org.apache.spark.SparkConf;
import org.nativepool.spark.arrow.CDataOrigin;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.config.PoolSettings;
import org.nativepool.spark.config.SettingsCheck;
import org.nativepool.spark.config.SparkLine;
import org.nativepool.spark.jni.LibraryLoader;
import org.nativepool.spark.ledger.ExecutorLedger;
import org.nativepool.spark.ledger.LedgerReader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver's startup check, run by the driver plugin's {@code init}, before any executor exists,
 * so that whatever would fail the application later fails its SparkContext now, once, with the
 * reason. The plugin jar must be built for this Spark's line ({@link SparkLine#requireBuiltLine()}:
 * the message names both lines and the artifact to deploy). Every {@code spark.nativepool.*}
 * setting must parse and fit the others ({@link SettingsCheck}: the key, the value and the rule),
 * the pod guard's and the ledger's included, since executors that found a bad one could only
 * disable what it sets; a ledger threshold must watch a part that exists ({@link
 * LedgerReader#checkThresholds}), and a ledger listener class must be one the executors can make
 * ({@link ExecutorLedger#checkListenerClasses}). A setting this Spark line cannot honour is refused
 * rather than ignored ({@link NativePoolConf#AUTO_OVERHEAD} before Spark 4.1). Unless {@link
 * NativePoolConf#DRIVER_CHECK} is false the library the executors will load is loaded and
 * version-checked in the driver's JVM, so that a missing library or a version mismatch fails the
 * application once, when the SparkContext starts, instead of in every task. Without an explicit
 * path on a driver platform the jar carries no library for (a macOS client, say) it only logs that
 * it skipped the check; the executors still refuse their tasks. Stateless.
 */
final class DriverCheck {
  private static final Logger LOG = LoggerFactory.getLogger(DriverCheck.class);

  private DriverCheck() {}

  /**
   * What the check found: the settings, what is worth a WARN, and where the library came from.
   *
   * @param settings every setting, checked
   * @param library where the library was loaded from, or why the check was skipped
   */
  record Outcome(SettingsCheck settings, String library) {}

  /**
   * Runs the check; the warnings of {@link SettingsCheck#warnings()} are the caller's to log.
   *
   * @param conf the application's configuration
   * @param loader where ledger listener classes are looked up (the driver's, which {@code --jars}
   *     extends)
   * @throws IllegalStateException if the jar is built for another Spark line, or if the library
   *     cannot be loaded or reports another version (the message is the one every task would fail
   *     with)
   * @throws IllegalArgumentException for a {@code spark.nativepool.*} value that does not parse or
   *     fit, or a setting this Spark line cannot honour: naming the key, the value and the rule
   */
  static Outcome run(SparkConf conf, ClassLoader loader) {
    SparkLine line = SparkLine.current();
    line.requireBuiltLine();
    SettingsCheck settings = SettingsCheck.of(conf);
    LedgerReader.checkThresholds(
        settings.ledger().thresholds(), conf.get(NativePoolConf.LEDGER_THRESHOLDS.key(), ""));
    ExecutorLedger.checkListenerClasses(settings.ledger().listeners(), loader);
    refuseAutoOverheadWithoutEffect(conf, line);
    String cdata =
        CDataOrigin.conflict(
            conf.get("spark.plugins", ""), loader);
    if (cdata != null) {
      LOG.warn(cdata);
    }
    PoolSettings s = settings.pool();
    if (!NativePoolConf.DRIVER_CHECK.read(conf)) {
      return new Outcome(
          settings, "not checked on the driver (" + NativePoolConf.DRIVER_CHECK.key() + "=false)");
    }
    if (s.library() == null && LibraryLoader.bundledLibrary() == null) {
      String why =
          "not checked on the driver: the jar carries no library for "
              + LibraryLoader.platform()
              + "; executors check their own";
      LOG.warn("nativepool: {}", why);
      return new Outcome(settings, why);
    }
    String source = LibraryLoader.ensureLoaded(s.library(), s.libraryOrigin());
    LOG.info("nativepool: driver check passed: {}; {}", source, line);
    return new Outcome(settings, source);
  }

  /**
   * {@link NativePoolConf#AUTO_OVERHEAD} on a Spark that builds the default ResourceProfile before
   * it loads plugins (3.5, 4.0): the overhead would be set too late to size any executor, so the
   * application is refused, with the value to set by hand.
   *
   * @throws IllegalArgumentException naming the setting to use instead
   */
  static void refuseAutoOverheadWithoutEffect(SparkConf conf, SparkLine line) {
    if (line.autoOverheadTakesEffect() || !NativePoolConf.AUTO_OVERHEAD.read(conf)) {
      return;
    }
    AutoOverhead.Choice c = AutoOverhead.choose(conf);
    throw new IllegalArgumentException(
        "nativepool: "
            + NativePoolConf.AUTO_OVERHEAD.key()
            + "=true cannot take effect on Spark "
            + line.sparkVersion()
            + ": it builds the executors' default ResourceProfile before it loads plugins (Spark"
            + " 4.1 and later load them first), so a memoryOverhead the driver plugin sets would"
            + " size no executor. Set "
            + AutoOverhead.KEY
            + "="
            + c.overheadMib()
            + "m instead (what "
            + NativePoolConf.AUTO_OVERHEAD.key()
            + " would choose here: "
            + c.formula()
            + ") and remove "
            + NativePoolConf.AUTO_OVERHEAD.key());
  }
}
