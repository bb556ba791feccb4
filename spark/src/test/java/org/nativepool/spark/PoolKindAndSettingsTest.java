package org.nativepool.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/** Parsing of {@code spark.nativepool.*}; no native library needed. */
class PoolKindAndSettingsTest {

  @Test
  void poolKindParsesConfigNamesAndCarriesTheNativeCodes() {
    assertEquals(PoolKind.FAIR_UNIFIED, PoolKind.parse("fair_unified"));
    assertEquals(PoolKind.GREEDY_UNIFIED, PoolKind.parse(" Greedy_Unified "));
    assertEquals(0, PoolKind.FAIR_UNIFIED.code());
    assertEquals(1, PoolKind.GREEDY_UNIFIED.code());
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> PoolKind.parse("greedy"));
    assertEquals(
        "nativepool: unknown pool kind 'greedy' (expected fair_unified or greedy_unified)",
        e.getMessage());
  }

  @Test
  void settingsDefaultToFairUnifiedEightMebibyteChunksAndTheOffHeapSize() {
    SparkConf conf = new SparkConf(false).set("spark.memory.offHeap.size", "256m");
    NativePoolSettings s = NativePoolSettings.fromConf(conf);
    assertEquals(PoolKind.FAIR_UNIFIED, s.kind());
    assertEquals(8L << 20, s.chunkSize());
    assertEquals(256L << 20, s.poolSize());
    assertArrayEquals(new long[0], s.thresholds());
    assertEquals(false, s.logging());
    assertNull(s.library());
  }

  @Test
  void settingsReadEveryKey() {
    SparkConf conf =
        new SparkConf(false)
            .set("spark.nativepool.pool", "greedy_unified")
            .set("spark.nativepool.chunkSize", "0")
            .set("spark.nativepool.poolSize", "1g")
            .set("spark.nativepool.thresholds", "64m, 1g,,512k")
            .set("spark.nativepool.logging", "true")
            .set("spark.nativepool.library", "/x/libnativepool.so");
    NativePoolSettings s = NativePoolSettings.fromConf(conf);
    assertEquals(PoolKind.GREEDY_UNIFIED, s.kind());
    assertEquals(0, s.chunkSize());
    assertEquals(1L << 30, s.poolSize());
    assertArrayEquals(new long[] {64L << 20, 1L << 30, 512L << 10}, s.thresholds());
    assertEquals(true, s.logging());
    assertEquals("/x/libnativepool.so", s.library());
  }

  @Test
  void settingsRejectAThresholdThatIsNotASize() {
    SparkConf conf = new SparkConf(false).set("spark.nativepool.thresholds", "64m,lots");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> NativePoolSettings.fromConf(conf));
    assertEquals(
        "nativepool: spark.nativepool.thresholds: 'lots' is not a size (e.g. 512m, 2g)",
        e.getMessage());
    assertEquals(NumberFormatException.class, e.getCause().getClass());
  }

  @Test
  void pluginSettingsAreUnavailableWhileNoExecutorPluginIsRunning() {
    IllegalStateException e =
        assertThrows(IllegalStateException.class, NativePoolPlugin::settings);
    assertEquals(
        "nativepool: NativePoolPlugin is not initialised in this JVM"
            + " (set spark.plugins=org.nativepool.spark.NativePoolPlugin)",
        e.getMessage());
  }
}
