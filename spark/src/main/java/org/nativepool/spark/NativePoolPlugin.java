package org.nativepool.spark;

import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.SparkPlugin;
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

  /** The driver side: a new {@link DriverSide}. */
  @Override
  public DriverPlugin driverPlugin() {
    return new DriverSide();
  }

  /** The executor side: a new {@link ExecutorSide}. */
  @Override
  public ExecutorPlugin executorPlugin() {
    return new ExecutorSide();
  }
}
