package org.nativepool.spark.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/**
 * The pod guard's keys ({@code spark.nativepool.guard.*}) resolved into {@code configureGuard}'s
 * arguments, and the container size they fall back on; no native library needed.
 */
class GuardSettingsTest {
  private static final long MIB = 1L << 20;

  private static SparkConf conf(String master) {
    return new SparkConf(false).set("spark.master", master);
  }

  @Test
  void byDefaultTheGuardIsOnWithTheGoSidesReserveAndAutoLimit() {
    GuardSettings g = GuardSettings.fromConf(conf("yarn"));
    assertEquals(GuardMode.AUTO, g.mode());
    assertTrue(g.enabled());
    assertEquals(0, g.reserve(), "0: the Go side's 2% of the limit, at least 32 MiB");
    assertEquals((1024 + 384) * MIB, g.limit(), "1g executor + Spark's 384m minimum overhead");
    assertFalse(g.limitExplicit());
  }

  @Test
  void besideCometTheGuardHoldsNoneOfSparksOffHeapMemory() {
    // Comet 1.2 fails a task whose unspillable reservation Spark grants short: a hold there
    // fails tasks instead of making them spill.
    GuardSettings plugins =
        GuardSettings.fromConf(
            conf("yarn")
                .set(
                    "spark.plugins",
                    " org.apache.spark.CometPlugin , org.nativepool.spark.NativePoolPlugin"));
    assertFalse(plugins.offHeap());
    assertEquals("spark.plugins names org.apache.spark.CometPlugin", plugins.besideComet());
    assertTrue(plugins.toString().contains("native memory only (beside Comet"), plugins.toString());

    GuardSettings extensions =
        GuardSettings.fromConf(
            conf("yarn").set("spark.sql.extensions", "org.apache.comet.CometSparkSessionExtensions"));
    assertFalse(extensions.offHeap());
    assertEquals(
        "spark.sql.extensions names org.apache.comet.CometSparkSessionExtensions",
        extensions.besideComet());

    GuardSettings other =
        GuardSettings.fromConf(
            conf("yarn")
                .set("spark.plugins", "org.apache.spark.CometPluginOfSomeoneElse")
                .set("spark.sql.extensions", "org.example.CometSparkSessionExtensions"));
    assertTrue(other.offHeap(), "only Comet's own class names count");
    assertNull(other.besideComet());
    assertTrue(GuardSettings.fromConf(conf("yarn")).offHeap(), "on by default");
  }

  /** On YARN the limit is held against the container's process tree, as the NodeManager counts. */
  @Test
  void onYarnTheLimitIsHeldAgainstTheContainersProcessTreeOnly() {
    GuardSettings yarn = GuardSettings.fromConf(conf("yarn"));
    assertTrue(yarn.processTree());
    assertTrue(yarn.toString().contains("process tree"), yarn::toString);
    for (String master : new String[] {"k8s://https://api.example:6443", "local[2]", ""}) {
      assertFalse(GuardSettings.fromConf(conf(master)).processTree(), master);
    }
  }

  /**
   * auto: the container size where Spark sizes executors' containers (YARN, Kubernetes), and no
   * limit of its own in local mode and standalone, where only a cgroup limit counts.
   */
  @Test
  void autoKeepsTheContainerSizeOnlyWhereSparkSizesContainers() {
    long container = (4096 + 409) * MIB; // 4g + max(0.10 × 4096m, 384m)
    for (String master : new String[] {"yarn", "k8s://https://api.example:6443"}) {
      GuardSettings g = GuardSettings.fromConf(conf(master).set("spark.executor.memory", "4g"));
      assertTrue(g.enabled(), master);
      assertEquals(container, g.limit(), master);
      assertTrue(g.toString().contains("the container size: executor memory 4.0 GiB"), g::toString);
    }
    for (String master : new String[] {"local", "local[2]", "spark://host:7077", ""}) {
      GuardSettings g = GuardSettings.fromConf(conf(master).set("spark.executor.memory", "4g"));
      assertTrue(g.enabled(), "on, under a cgroup limit: " + master);
      assertEquals(0, g.limit(), master);
      assertFalse(g.limitExplicit());
      assertTrue(g.toString().contains("only a cgroup limit counts"), g::toString);
    }
  }

  @Test
  void trueKeepsTheContainerSizeEverywhereAndFalseTurnsItOff() {
    GuardSettings on =
        GuardSettings.fromConf(
            conf("spark://host:7077")
                .set("spark.nativepool.guard.enabled", "TRUE")
                .set("spark.executor.memory", "2g"));
    assertEquals(GuardMode.ON, on.mode());
    assertEquals((2048 + 384) * MIB, on.limit());
    // In local mode the executor is the driver's JVM: the driver's memory and overhead.
    GuardSettings local =
        GuardSettings.fromConf(
            conf("local[2]")
                .set("spark.nativepool.guard.enabled", "true")
                .set("spark.driver.memory", "3g")
                .set("spark.executor.memory", "8g"));
    assertEquals((3072 + 384) * MIB, local.limit());
    GuardSettings off =
        GuardSettings.fromConf(conf("yarn").set("spark.nativepool.guard.enabled", "false"));
    assertFalse(off.enabled());
    assertEquals(0, off.limit());
    assertEquals("pod guard off (spark.nativepool.guard.enabled=false)", off.toString());
  }

  @Test
  void anExplicitLimitAppliesOnEveryMasterAndUnderACgroupLimitToo() {
    for (String master : new String[] {"local[2]", "yarn", "spark://host:7077"}) {
      GuardSettings g =
          GuardSettings.fromConf(
              conf(master)
                  .set("spark.nativepool.guard.limit", "6g")
                  .set("spark.nativepool.guard.reserve", "64m"));
      assertEquals(6L << 30, g.limit(), master);
      assertTrue(g.limitExplicit(), master);
      assertEquals(64 * MIB, g.reserve());
      assertTrue(g.toString().contains("reserve 64.0 MiB"), g::toString);
      assertTrue(g.toString().contains("limit 6.0 GiB (spark.nativepool.guard.limit"), g::toString);
    }
  }

  /** Spark's container: memory + off-heap when enabled + overhead + PySpark memory when set. */
  @Test
  void theContainerSizeIsSparksSum() {
    SparkConf c =
        conf("k8s://https://api")
            .set("spark.executor.memory", "8g")
            .set("spark.memory.offHeap.size", "2g");
    assertEquals((8192 + 819) * MIB, ContainerSize.bytes(c), "off-heap disabled: not counted");
    c.set("spark.memory.offHeap.enabled", "true");
    assertEquals((8192 + 819 + 2048) * MIB, ContainerSize.bytes(c));
    c.set("spark.executor.pyspark.memory", "512"); // MiB without a unit, as in Spark
    c.set("spark.executor.memoryOverhead", "1g");
    assertEquals((8192 + 1024 + 2048 + 512) * MIB, ContainerSize.bytes(c));
    assertEquals(
        "executor memory 8.0 GiB + off-heap 2.0 GiB + memoryOverhead 1.0 GiB + PySpark memory"
            + " 512.0 MiB = 11.5 GiB",
        ContainerSize.describe(c));
  }

  @Test
  void badValuesAreRefusedNamingTheKeyAndTheValue() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                GuardSettings.fromConf(
                    conf("yarn").set("spark.nativepool.guard.enabled", "maybe")));
    assertEquals(
        "nativepool: spark.nativepool.guard.enabled = 'maybe': not auto, true or false",
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                GuardSettings.fromConf(conf("yarn").set("spark.nativepool.guard.reserve", "lots")));
    assertEquals(
        "nativepool: spark.nativepool.guard.reserve = 'lots': not a size (e.g. 512k, 64m, 2g)",
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> GuardSettings.fromConf(conf("yarn").set("spark.nativepool.guard.limit", "0")));
    assertEquals(
        "nativepool: spark.nativepool.guard.limit = '0': must be > 0 (unset it for the container"
            + " size)",
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> GuardSettings.fromConf(conf("yarn").set("spark.nativepool.guard.limit", "-1g")));
    assertTrue(
        e.getMessage().startsWith("nativepool: spark.nativepool.guard.limit = '-1g': "),
        e::getMessage);
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                GuardSettings.fromConf(
                    conf("yarn")
                        .set("spark.executor.memory", "1g")
                        .set("spark.nativepool.guard.reserve", "2g")));
    assertTrue(
        e.getMessage()
            .startsWith(
                "nativepool: spark.nativepool.guard.reserve = '2g': not below the guard's limit"
                    + " 1.4 GiB"),
        e::getMessage);
  }
}
