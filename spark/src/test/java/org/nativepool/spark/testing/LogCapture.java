package org.nativepool.spark.testing;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;

/**
 * Captures the formatted messages that reach log4j's logger configuration of a logger name (the
 * test's log4j2-test.properties configures {@code org.nativepool.spark}), for assertions on what
 * the plugin logs through SLF4J. {@link #close()} detaches it.
 */
public final class LogCapture extends AbstractAppender implements AutoCloseable {
  private final List<String> messages = new CopyOnWriteArrayList<>();
  private final LoggerConfig config;

  private LogCapture(LoggerConfig config) {
    super("nativepool-test-capture", null, null, true, Property.EMPTY_ARRAY);
    this.config = config;
  }

  /** Starts capturing what the logger {@code name} logs at INFO or above. */
  public static LogCapture attach(String name) {
    LoggerContext lc = (LoggerContext) LogManager.getContext(false);
    Configuration cfg = lc.getConfiguration();
    LogCapture c = new LogCapture(cfg.getLoggerConfig(name));
    c.start();
    c.config.addAppender(c, org.apache.logging.log4j.Level.INFO, null);
    lc.updateLoggers();
    return c;
  }

  @Override
  public void append(LogEvent event) {
    messages.add(event.getMessage().getFormattedMessage());
  }

  /** The messages captured so far, oldest first. */
  public List<String> messages() {
    return List.copyOf(messages);
  }

  @Override
  public void close() {
    config.removeAppender(getName());
    ((LoggerContext) LogManager.getContext(false)).updateLoggers();
    stop();
  }
}
