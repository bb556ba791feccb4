package org.nativepool.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.config.PoolSettings;

/** The executor side's process-wide state, without Spark or the native library. */
class ExecutorStateTest {
  @Test
  void settingsAreUnavailableWhileNoExecutorPluginIsRunning() {
    IllegalStateException e = assertThrows(IllegalStateException.class, ExecutorState::settings);
    assertEquals(
        "nativepool: the nativepool plugin is not initialised in this JVM"
            + " (set spark.plugins=org.nativepool.spark.NativePoolPlugin)",
        e.getMessage());
  }

  /**
   * A disabled start makes every task fail with its reason; a later start replaces it, and the
   * earlier start's shutdown does not undo the later one.
   */
  @Test
  void aStartReplacesTheLastAndOnlyItsOwnShutdownUndoesIt() {
    IllegalStateException why = new IllegalStateException("nativepool: library not loaded");
    Object disabled = ExecutorState.disable(why);
    IllegalStateException e = assertThrows(IllegalStateException.class, ExecutorState::settings);
    assertEquals(why.getMessage(), e.getMessage());
    assertSame(why, e.getCause());

    PoolSettings s = PoolSettings.fromConf(new SparkConf(false));
    TaskPoolObserver observer = (task, peak, consumers) -> {};
    Object installed = ExecutorState.install(s, observer);
    ExecutorState.uninstall(disabled);
    assertSame(s, ExecutorState.settings());
    assertSame(observer, ExecutorState.observer());
    ExecutorState.uninstall(installed);
    assertThrows(IllegalStateException.class, ExecutorState::settings);
  }
}
