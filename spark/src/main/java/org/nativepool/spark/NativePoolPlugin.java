package org.nativepool.spark;

import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.SparkPlugin;
import org.nativepool.spark.config.SparkLine;
import org.nativepool.spark.driver.DriverSide;
import org.nativepool.spark.executor.ExecutorSide;

/**
 * The Spark plugin: {@code spark.plugins=org.nativepool.spark.NativePoolPlugin}.
 *
 * <p>Its executor side ({@link ExecutorSide}) loads the native library, configures it, installs the
 * settings every task's pool is opened with, registers the gauges and starts the reporting thread;
 * its driver side ({@link DriverSide}) checks the library at startup, keeps per-executor and total
 * gauges for Spark's metrics system (PrometheusServlet included), posts stage peaks and threshold
 * events to the event log, and may choose the executors' memoryOverhead. In local mode both sides
 * register a source named {@code plugin.org.nativepool.spark.NativePoolPlugin}; their gauge names
 * differ, so they coexist.
 *
 * <p>This class is the only one that knows both sides; nothing else in the plugin depends on it.
 */
public final class NativePoolPlugin implements SparkPlugin {
  /** Public no-argument constructor, as Spark instantiates plugins by reflection. */
  public NativePoolPlugin() {}

  /**
   * The driver side: a new {@link DriverSide}, once this jar is known to be built for the running
   * Spark line. The check comes before the class is loaded: a class of this jar that calls a Spark
   * method whose signature differs between lines (Spark 4.1's {@code Utils.getLocalDir} takes a
   * {@code ReadOnlySparkConf}, which Spark 3.5 has not) fails to load on another line with a {@code
   * NoClassDefFoundError} instead of the message naming both lines and the jar to deploy. Such
   * calls are kept out of {@code DriverSide} and {@code ExecutorSide} ({@link
   * org.nativepool.spark.config.LocalDir}); this check keeps the driver's message even if one
   * slips in. The executor side checks in its {@code init}, where a mismatch disables the native
   * pools and fails every task with the message rather than the executor.
   *
   * @throws IllegalStateException if this jar is built for another Spark line ({@link
   *     SparkLine#requireBuiltLine()}): the SparkContext fails at its start
   */
  @Override
  public DriverPlugin driverPlugin() {
    SparkLine.current().requireBuiltLine();
    return new DriverSide();
  }

  /** The executor side: a new {@link ExecutorSide}. */
  @Override
  public ExecutorPlugin executorPlugin() {
    return new ExecutorSide();
  }
}
