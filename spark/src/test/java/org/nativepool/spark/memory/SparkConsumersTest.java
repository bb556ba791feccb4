package org.nativepool.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

class SparkConsumersTest {
  @Test
  void aConsumerBelongsToTheEngineItsClassComesFrom() {
    assertNull(
        SparkConsumers.engineOf(
            "org.nativepool.spark.memory.SparkTaskUpstream$NativeMemoryConsumer"),
        "nativepool's own: the ledger's native parts count it");
    assertEquals(
        "comet", SparkConsumers.engineOf("org.apache.spark.CometTaskMemoryManager$NativeMemoryConsumer"));
    assertEquals("comet", SparkConsumers.engineOf("org.apache.comet.CometExecIterator$X"));
    assertEquals(
        "comet",
        SparkConsumers.engineOf("org.apache.spark.shuffle.comet.CometShuffleMemoryAllocator"));
    assertEquals("gluten", SparkConsumers.engineOf("org.apache.gluten.memory.memtarget.Spillers"));
    assertEquals("gluten", SparkConsumers.engineOf("io.glutenproject.memory.NativeMemoryConsumer"));
    assertEquals(
        "spark",
        SparkConsumers.engineOf(
            "org.apache.spark.util.collection.unsafe.sort.UnsafeExternalSorter"));
    assertEquals("spark", SparkConsumers.engineOf("org.apache.spark.unsafe.map.BytesToBytesMap"));
    assertEquals("other", SparkConsumers.engineOf("com.example.engine.PoolConsumer"));
  }

  @Test
  void nothingIsSplitBeforeAnyTaskRan() {
    SparkConsumers c = new SparkConsumers();
    assertEquals(0, c.tasks());
    assertEquals(java.util.Map.of(), c.offHeapByEngine());
  }
}
