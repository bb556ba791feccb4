package org.nativepool.spark.driver;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.concurrent.atomic.AtomicLong;
import org.nativepool.spark.events.GuardEpisodeEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executors' pod guard episodes as the driver counts them: each executor sends a {@link
 * GuardEpisodeEvent} when an episode of its pod guard ends (the headroom under its memory limit was
 * below the guard's reserve, and native memory gave way); the driver logs a WARN line ({@link
 * GuardEpisodeEvent#summary()}) and counts it in three gauges over the application's life, removed
 * executors included: {@value #GUARD_EPISODES}, {@value #GUARD_SPILLED} and {@value
 * #GUARD_LAST_REACTION}. (The driver side also keeps the episode as its executor's evidence and
 * posts it to the event log.) Safe for concurrent use.
 */
final class GuardEpisodes {
  /**
   * The driver side's logger: operators find these lines on {@code
   * org.nativepool.spark.driver.DriverSide} (docs/DEPLOYING.md).
   */
  private static final Logger LOG = LoggerFactory.getLogger(DriverSide.class);

  /** Gauge: pod guard episodes the executors reported, over the application's life. */
  static final String GUARD_EPISODES = "guard.episodes";

  /** Gauge: bytes native consumers spilled in those episodes. */
  static final String GUARD_SPILLED = "guard.spilledBytes";

  /**
   * Gauge: the reaction time of the last episode reported (ms, rounded; -1 before any, or when the
   * last one spilled nothing).
   */
  static final String GUARD_LAST_REACTION = "guard.lastReactionMillis";

  private final AtomicLong episodes = new AtomicLong();
  private final AtomicLong spilled = new AtomicLong();
  private volatile long lastReactionMillis = -1;

  /** Registers the {@code guard.*} gauges. */
  void register(MetricRegistry registry) {
    registry.register(GUARD_EPISODES, (Gauge<Long>) episodes::get);
    registry.register(GUARD_SPILLED, (Gauge<Long>) spilled::get);
    registry.register(GUARD_LAST_REACTION, (Gauge<Long>) () -> lastReactionMillis);
  }

  /** Counts episode {@code g} in the gauges and logs it. */
  void count(GuardEpisodeEvent g) {
    episodes.incrementAndGet();
    spilled.addAndGet(Math.max(0, g.getSpilled()));
    long reaction = g.getReactionMicros();
    lastReactionMillis = reaction < 0 ? -1 : Math.round(reaction / 1000.0);
    LOG.warn(g.summary());
  }
}
