package org.nativepool.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.spark.memory.TaskMemoryManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.testing.SparkMemory;
import org.nativepool.spark.testing.SparkTestConsumer;

/**
 * The Java side of the upstream against Spark's real memory managers; no native library needed
 * (no pool is attached, so Spark's spill of our consumer frees nothing).
 */
class SparkTaskUpstreamTest {
  private static final long MIB = SparkMemory.MIB;
  private static final long TASK = 7;

  private SparkMemory spark;
  private TaskMemoryManager tmm;
  private SparkTaskUpstream up;

  @BeforeEach
  void setUp() {
    spark = new SparkMemory(64 * MIB, 1);
    tmm = spark.task(TASK);
    up = new SparkTaskUpstream(tmm, TASK);
  }

  @AfterEach
  void tearDown() {
    up.close();
    spark.cleanUp();
  }

  @Test
  void acquireGrantsFromSparkAndMirrorsTheGrant() {
    assertEquals(3 * MIB, up.acquireMemory(3 * MIB));
    assertEquals(3 * MIB, up.used());
    assertEquals(3 * MIB, tmm.getMemoryConsumptionForThisTask());
    up.releaseMemory(MIB);
    assertEquals(2 * MIB, up.used());
    assertEquals(2 * MIB, tmm.getMemoryConsumptionForThisTask());
    up.releaseMemory(2 * MIB);
    assertEquals(0, up.used());
    assertEquals(0, tmm.getMemoryConsumptionForThisTask());
  }

  @Test
  void shortGrantIsMirroredAsGranted() {
    assertEquals(64 * MIB, up.acquireMemory(64 * MIB));
    assertEquals(0, up.acquireMemory(MIB));
    assertEquals(64 * MIB, up.used());
    assertEquals(64 * MIB, tmm.getMemoryConsumptionForThisTask());
    up.releaseMemory(64 * MIB);
  }

  @Test
  void acquireOfZeroBytesIsRejectedWithoutAskingSpark() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> up.acquireMemory(0));
    assertEquals("nativepool: task 7 acquire of 0 bytes; must be > 0", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> up.releaseMemory(-1));
    assertEquals("nativepool: task 7 release of -1 bytes; must be > 0", e.getMessage());
    assertEquals(0, tmm.getMemoryConsumptionForThisTask());
  }

  @Test
  void releaseBeyondTheMirrorIsRejectedBeforeSparkHearsOfIt() {
    up.acquireMemory(MIB);
    IllegalStateException e =
        assertThrows(IllegalStateException.class, () -> up.releaseMemory(2 * MIB));
    assertEquals(
        "nativepool: task 7 releases 2097152 bytes but holds only 1048576 from Spark;"
            + " release refused",
        e.getMessage());
    assertEquals(MIB, up.used());
    assertEquals(MIB, tmm.getMemoryConsumptionForThisTask());
    up.releaseMemory(MIB);
  }

  @Test
  void acquireAfterCloseIsRefusedWithoutAskingSpark() {
    up.close();
    IllegalStateException e =
        assertThrows(IllegalStateException.class, () -> up.acquireMemory(MIB));
    assertEquals("nativepool: task 7 completed; acquire refused", e.getMessage());
    assertEquals(0, tmm.getMemoryConsumptionForThisTask());
  }

  @Test
  void lateReleaseIsCountedAndNeverForwardedToSpark() {
    up.acquireMemory(MIB);
    up.close();
    up.releaseMemory(MIB);
    assertEquals(1, up.lateReleases());
    assertEquals(MIB, up.lateReleasedBytes());
    // Spark still counts the bytes: its own end-of-task cleanup releases them.
    assertEquals(MIB, tmm.getMemoryConsumptionForThisTask());
    assertEquals(MIB, tmm.cleanUpAllAllocatedMemory());
  }

  @Test
  void sparkSeesTheMirrorAsTheConsumersUsageAndItsSpillFreesNothingWithoutAPool() {
    up.acquireMemory(48 * MIB);
    SparkTestConsumer other = new SparkTestConsumer(tmm, "other", true);
    // Spark can grant 16 MiB, then asks our consumer (48 MiB used) to spill: no pool, so 0.
    assertEquals(16 * MIB, other.take(32 * MIB));
    assertEquals(48 * MIB, up.memoryConsumer().getUsed());
    assertEquals(64 * MIB, tmm.getMemoryConsumptionForThisTask());
    other.giveAll();
    up.releaseMemory(48 * MIB);
  }

  @Test
  void toStringNamesTheTask() {
    up.acquireMemory(MIB);
    assertEquals("SparkTaskUpstream(task=7, used=1048576)", up.toString());
    assertTrue(up.memoryConsumer().toString().startsWith("NativePoolConsumer(task=7"));
    up.releaseMemory(MIB);
  }
}
