package org.nativepool.spark.config;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/** Parsing of {@code spark.nativepool.*}; no native library needed. */
class SettingsTest {

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
    PoolSettings s = PoolSettings.fromConf(conf);
    assertEquals(PoolKind.FAIR_UNIFIED, s.kind());
    assertEquals(8L << 20, s.chunkSize());
    assertEquals(256L << 20, s.poolSize());
    assertArrayEquals(new long[0], s.taskThresholds());
    assertEquals(false, s.logging());
    assertNull(s.library());
  }

  @Test
  void processMemoryDefaultsTo128KiBMmapThresholdAndADerivedGoLimit() {
    PoolSettings s = PoolSettings.fromConf(new SparkConf(false));
    assertEquals(128L << 10, s.mallocMmapThreshold());
    assertEquals(NativePoolConf.GO_MEMORY_LIMIT_DERIVED, s.goMemoryLimit());
    assertEquals(384L << 20, s.memoryOverhead(), "Spark's minimum over a 1g executor");
  }

  @Test
  void processMemorySettingsAreRead() {
    SparkConf conf =
        new SparkConf(false)
            .set("spark.nativepool.mallocMmapThreshold", "0")
            .set("spark.nativepool.goMemoryLimit", "96m")
            .set("spark.executor.memoryOverhead", "512");
    PoolSettings s = PoolSettings.fromConf(conf);
    assertEquals(0, s.mallocMmapThreshold());
    assertEquals(96L << 20, s.goMemoryLimit());
    assertEquals(512L << 20, s.memoryOverhead(), "a memoryOverhead without unit is MiB");
    assertEquals(
        0,
        PoolSettings.fromConf(conf.set("spark.nativepool.goMemoryLimit", "off")).goMemoryLimit());
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                PoolSettings.fromConf(
                    new SparkConf(false).set("spark.nativepool.mallocMmapThreshold", "64m")));
    assertEquals(
        "nativepool: spark.nativepool.mallocMmapThreshold = '64m': above glibc's maximum of 32"
            + " MiB",
        e.getMessage());
  }

  /**
   * One formula, Spark's own ({@code ResourceProfile.calculateOverHeadMemory}): an explicit
   * memoryOverhead, else max(factor × memory, minMemoryOverhead) in MiB, truncated; in local mode
   * the driver's settings, unless the executor's overhead is set.
   */
  @Test
  void memoryOverheadIsSparksFormula() {
    SparkConf yarn = new SparkConf(false).set("spark.master", "yarn");
    assertEquals(819L << 20, MemoryOverhead.bytes(yarn.clone().set("spark.executor.memory", "8g")));
    assertEquals(
        2048L << 20,
        MemoryOverhead.bytes(
            yarn.clone()
                .set("spark.executor.memory", "8g")
                .set("spark.executor.memoryOverheadFactor", "0.25")));
    // Spark 3.5 has no minMemoryOverhead setting: its minimum is always 384 MiB.
    assertEquals(
        SparkLine.current().hasMinMemoryOverhead() ? 1024L << 20 : 819L << 20,
        MemoryOverhead.bytes(
            yarn.clone()
                .set("spark.executor.memory", "8g")
                .set("spark.executor.minMemoryOverhead", "1g")),
        "Spark's minMemoryOverhead is read where Spark has it");
    assertEquals(384L << 20, MemoryOverhead.bytes(yarn), "384 MiB over a 1g executor");
    SparkConf local = new SparkConf(false).set("spark.master", "local[2]");
    assertEquals(
        256L << 20, MemoryOverhead.bytes(local.clone().set("spark.driver.memoryOverhead", "256m")));
    assertEquals(614L << 20, MemoryOverhead.bytes(local.clone().set("spark.driver.memory", "6g")));
    assertEquals(
        100L << 20,
        MemoryOverhead.bytes(
            local
                .clone()
                .set("spark.driver.memoryOverhead", "256m")
                .set("spark.executor.memoryOverhead", "100m")),
        "an explicit executor memoryOverhead wins");
  }

  @Test
  void settingsReadEveryKey() {
    SparkConf conf =
        new SparkConf(false)
            .set("spark.nativepool.pool", "greedy_unified")
            .set("spark.nativepool.chunkSize", "0")
            .set("spark.nativepool.poolSize", "1g")
            .set("spark.nativepool.task.reservedThresholds", "64m, 1g,,512k")
            .set("spark.nativepool.logging", "true")
            .set("spark.nativepool.library", "/x/libnativepool.so");
    PoolSettings s = PoolSettings.fromConf(conf);
    assertEquals(PoolKind.GREEDY_UNIFIED, s.kind());
    assertEquals(0, s.chunkSize());
    assertEquals(1L << 30, s.poolSize());
    assertArrayEquals(new long[] {64L << 20, 1L << 30, 512L << 10}, s.taskThresholds());
    assertEquals(true, s.logging());
    assertEquals("/x/libnativepool.so", s.library());
  }

  @Test
  void settingsRejectAThresholdThatIsNotASize() {
    SparkConf conf =
        new SparkConf(false).set("spark.nativepool.task.reservedThresholds", "64m,lots");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> PoolSettings.fromConf(conf));
    assertEquals(
        "nativepool: spark.nativepool.task.reservedThresholds = '64m,lots': 'lots' is not a size"
            + " (e.g. 512k, 64m, 2g)",
        e.getMessage());
  }

  /**
   * The key that meant two thresholds still works, read as each of the two keys that replaced it
   * that is unset; a key set explicitly wins.
   */
  @Test
  void theDeprecatedThresholdsKeyIsReadAsBothOfItsSuccessors() {
    SparkConf conf = new SparkConf(false).set("spark.nativepool.thresholds", "64m");
    assertArrayEquals(new long[] {64L << 20}, PoolSettings.fromConf(conf).taskThresholds());
    assertArrayEquals(
        new long[] {64L << 20}, ReportingSettings.fromConf(conf).executorThresholds());
    conf.set("spark.nativepool.executor.reservedThresholds", "1g");
    assertArrayEquals(new long[] {1L << 30}, ReportingSettings.fromConf(conf).executorThresholds());
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                PoolSettings.fromConf(
                    new SparkConf(false).set("spark.nativepool.thresholds", "lots")));
    assertTrue(e.getMessage().startsWith("nativepool: spark.nativepool.thresholds"), e::getMessage);
  }

  @Test
  void monitoringIsOnUnlessTheKeySaysFalse() {
    assertTrue(ReportingSettings.fromConf(new SparkConf(false)).monitoring());
    SparkConf off = new SparkConf(false).set(NativePoolConf.MONITORING.key(), "false");
    assertFalse(ReportingSettings.fromConf(off).monitoring());
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ReportingSettings.fromConf(
                    new SparkConf(false).set(NativePoolConf.MONITORING.key(), "off")));
    assertTrue(e.getMessage().contains("spark.nativepool.monitoring"), e::getMessage);
  }

  /**
   * A misspelt key is named with the closest known one: a wrong case alone, a letter too many or
   * too few, a dot for a word.
   */
  @Test
  void theClosestKnownKeyIsNamedForAMisspelling() {
    assertEquals(
        "spark.nativepool.chunkSize", NativePoolConf.closestKey("spark.nativepool.chunksize"));
    assertEquals(
        "spark.nativepool.poolSize", NativePoolConf.closestKey("spark.nativepool.poolsize"));
    assertEquals(
        "spark.nativepool.guard.enabled",
        NativePoolConf.closestKey("spark.nativepool.guard.enable"));
    assertEquals(
        "spark.nativepool.ledger.thresholds",
        NativePoolConf.closestKey("spark.nativepool.ledger.threshold"));
    assertEquals(
        "spark.nativepool.memory.logInterval",
        NativePoolConf.closestKey("spark.nativepool.memory.loginterval"));
    assertEquals(
        "spark.nativepool.logLevel", NativePoolConf.closestKey("spark.nativepool.loglevl"));
  }

  /** Only keys under the plugin's prefix, in any case, that the registry lacks are unknown. */
  @Test
  void unknownKeysAreThoseUnderThePrefixTheRegistryLacks() {
    SparkConf conf =
        new SparkConf(false)
            .set("spark.nativepool.chunkSize", "1m")
            .set("spark.nativepool.thresholds", "16m") // deprecated, still read
            .set("spark.NativePool.poolSize", "1g")
            .set("spark.nativepool.guard.enable", "true")
            .set("spark.nativpool.chunkSize", "1m")
            .set("spark.native.pool.chunkSize", "1m")
            .set("spark.memory.offHeap.size", "1g")
            .set("spark.sql.nativeThing", "1"); // not the plugin's
    assertEquals(
        java.util.List.of(
            "spark.NativePool.poolSize",
            "spark.native.pool.chunkSize",
            "spark.nativepool.guard.enable",
            "spark.nativpool.chunkSize"),
        NativePoolConf.unknownKeys(conf));
    assertEquals(
        "spark.nativepool.chunkSize", NativePoolConf.closestKey("spark.nativpool.chunkSize"));
    assertEquals(
        "spark.nativepool.chunkSize", NativePoolConf.closestKey("spark.native.pool.chunkSize"));
  }

  /** Every setting is checked together, and what is worth a WARN comes back, not thrown. */
  @Test
  void theSettingsCheckRefusesAZeroFairPoolAndWarnsOfNoOffHeapMemory() {
    SparkConf conf =
        new SparkConf(false)
            .set("spark.memory.offHeap.enabled", "true")
            .set("spark.memory.offHeap.size", "1g");
    assertEquals(java.util.List.of(), SettingsCheck.of(conf).warnings());
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> SettingsCheck.of(conf.clone().set("spark.nativepool.poolSize", "0")));
    assertTrue(
        e.getMessage().startsWith("nativepool: spark.nativepool.poolSize = '0': "), e::getMessage);
    SettingsCheck.of(
        conf.clone()
            .set("spark.nativepool.poolSize", "0")
            .set("spark.nativepool.pool", "greedy_unified"));
    java.util.List<String> w =
        SettingsCheck.of(new SparkConf(false).set("spark.nativepool.chunksize", "1m")).warnings();
    assertEquals(2, w.size(), w::toString);
    assertTrue(w.get(0).contains("did you mean spark.nativepool.chunkSize?"), w::toString);
    assertTrue(w.get(1).contains("every native grow will be refused"), w::toString);
    java.util.List<String> floor =
        SettingsCheck.of(conf.clone().set("spark.nativepool.guard.offHeapFloor", "2g")).warnings();
    assertEquals(1, floor.size(), floor::toString);
    assertTrue(floor.get(0).contains("will leave Spark's consumers all of it"), floor::toString);
  }
}
