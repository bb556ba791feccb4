package org.nativepool.spark.testing;

import com.codahale.metrics.MetricRegistry;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.resource.ResourceInformation;

/**
 * What Spark's {@code PluginContextImpl} gives a driver plugin, over a test's own registry: so that
 * a test can {@code init} a {@code DriverSide} on a real SparkContext, hand it messages as Spark's
 * plugin endpoint would, and read its gauges. The driver neither sends nor asks.
 */
public record DriverContext(SparkConf conf, MetricRegistry metricRegistry)
    implements PluginContext {
  @Override
  public String executorID() {
    return "driver";
  }

  @Override
  public String hostname() {
    return "localhost";
  }

  @Override
  public Map<String, ResourceInformation> resources() {
    return Map.of();
  }

  @Override
  public void send(Object message) {
    throw new UnsupportedOperationException("the driver does not send");
  }

  @Override
  public Object ask(Object message) {
    throw new UnsupportedOperationException("the driver does not ask");
  }
}
