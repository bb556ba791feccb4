package org.nativepool.spark.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.config.GuardSettings;

/**
 * What only an executor knows: the limit of its memory cgroup, against which its pod guard's
 * reserve must fit, or its start fails (the SparkContext's, in local mode: {@code
 * PluginFailureTest} runs one in a real cgroup). No Spark and no library needed.
 */
class ExecutorSideTest {
  private static GuardSettings guard(String reserve) {
    SparkConf conf = new SparkConf(false).set("spark.master", "local[1]");
    if (reserve != null) {
      conf.set("spark.nativepool.guard.reserve", reserve);
    }
    return GuardSettings.fromConf(conf);
  }

  @Test
  void aReserveNotBelowTheCgroupsLimitFailsTheStartNamingKeyValueAndLimit() {
    assertEquals(
        "nativepool: spark.nativepool.guard.reserve = 2.0 GiB: not below this executor's memory"
            + " limit, 1.5 GiB (its memory cgroup's, read at its start): the pod guard would find"
            + " the headroom short at every sample and spill native memory without end. The"
            + " reserve must be below the limit: lower it, or unset it for 2% of the limit (at"
            + " least 32 MiB)",
        ExecutorSide.reserveNotBelowLimit(guard("2g"), 1536L << 20));
  }

  @Test
  void aReserveThatFitsTheDefaultOneOrNoLimitStartsTheExecutor() {
    assertNull(ExecutorSide.reserveNotBelowLimit(guard("2g"), 4L << 30));
    assertNull(ExecutorSide.reserveNotBelowLimit(guard(null), 16L << 20), "the default scales");
    assertNull(ExecutorSide.reserveNotBelowLimit(guard("2g"), -1), "no cgroup limit");
  }
}
