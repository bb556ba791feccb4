package org.nativepool.spark.ledger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nativepool.spark.events.HeapHolder;
import org.nativepool.spark.events.HeapHoldersEvent;

/**
 * The heap holders against the real JDK Flight Recorder of the test JVM: objects kept in a static
 * collection are named with their type and a path that ends at the static field, objects
 * allocated before the growth began are not blamed, a second analysis waits or is refused, and
 * nothing is left on disk.
 */
class HeapHoldersTest {
  /** The leak: chunks kept for ever in a static list. */
  static List<Object> leaked = new ArrayList<>();

  /** One leaked element: 64 KiB of longs. */
  static final class LeakedChunk {
    final long[] data = new long[8 * 1024];
  }

  @TempDir Path dir;

  private HeapHolders holders;

  @AfterEach
  void release() {
    if (holders != null) {
      holders.release();
    }
    leaked = new ArrayList<>();
  }

  /** Allocates {@code n} leaked chunks, with garbage between them so that collections happen. */
  static void leak(int n) {
    List<byte[]> garbage = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      leaked.add(new LeakedChunk());
      for (int j = 0; j < 64; j++) {
        garbage.add(new byte[4096]);
      }
      if (garbage.size() > 4096) {
        garbage = new ArrayList<>();
      }
    }
    System.gc(); // the samples the JVM writes are those that lived through a collection
  }

  private static HeapHolder leakHolder(HeapHoldersEvent e) {
    for (HeapHolder h : e.getHolders()) {
      if (h.getChain().stream().anyMatch(l -> l.contains("LeakedChunk"))) {
        return h;
      }
    }
    return null;
  }

  @Test
  void aStaticCollectionIsNamedWithItsElementTypeAndAPathEndingAtTheStaticField() {
    holders = HeapHolders.start(5_000, dir);
    assertNotNull(holders, "JFR starts");
    leak(3000);
    HeapHoldersEvent e = holders.analyze("driver", "test", 0);
    System.out.println("nativepool heap holders of a static collection: " + e.describe());
    HeapHolder h = leakHolder(e);
    assertNotNull(h, "the leak's holder: " + e.describe());
    assertEquals("long[]", h.getType());
    assertEquals(8 * 1024, h.getArrayLength());
    assertEquals(LeakedChunk.class.getName() + ".data", h.getChain().get(0), h.path());
    assertTrue(h.getChain().contains("java.lang.Object[] element"), h.path());
    assertTrue(
        h.getChain().stream().anyMatch(l -> l.startsWith("java.util.ArrayList.elementData")),
        h.path());
    assertEquals(
        "static " + HeapHoldersTest.class.getName() + ".leaked",
        h.getChain().get(h.getChain().size() - 1),
        h.path());
    assertNotNull(h.getRoot());
    assertTrue(h.getBytes() >= 64L * 1024 * h.getSamples(), h::describe);
    assertTrue(
        h.getFrames().get(0).startsWith(LeakedChunk.class.getName() + ".<init>"),
        h.getFrames().toString());
    assertTrue(e.getNote().contains(" of them live ("), e.getNote());
    assertTrue(e.getNote().contains("path search"), e.getNote());
  }

  @Test
  void samplesAllocatedBeforeTheGrowthBeganAreNotBlamed() throws Exception {
    holders = HeapHolders.start(5_000, dir);
    assertNotNull(holders);
    leak(2000);
    Thread.sleep(20);
    long since = System.currentTimeMillis();
    HeapHoldersEvent e = holders.analyze("driver", "test", since);
    assertTrue(
        e.getHolders().stream().allMatch(h -> h.getFirstAllocatedMillis() >= since), e::describe);
    assertTrue(leakHolder(e) == null, e::describe);
  }

  @Test
  void anOnDemandAnalysisSoonerThanTheIntervalIsRefused() {
    holders = HeapHolders.start(5_000, dir);
    assertNotNull(holders);
    HeapHoldersEvent first = holders.tryAnalyze("driver", "on demand", 60_000);
    assertFalse(first.getNote().startsWith("refused"), first.getNote());
    HeapHoldersEvent second = holders.tryAnalyze("driver", "on demand", 60_000);
    assertTrue(second.getNote().startsWith("refused: one analysis per 60 s"), second.getNote());
    assertTrue(second.getHolders().isEmpty());
  }

  @Test
  void theDumpIsDeletedAndTheDirectoryRemovedAtTheLastRelease() throws Exception {
    HeapHolders a = HeapHolders.start(5_000, dir);
    HeapHolders b = HeapHolders.start(5_000, dir);
    assertTrue(a == b, "one recording per JVM");
    a.analyze("driver", "test", 0);
    try (var files = Files.list(a.directory())) {
      assertTrue(files.noneMatch(p -> p.getFileName().toString().endsWith(".jfr")), "no dump left");
    }
    a.release();
    assertTrue(Files.isDirectory(b.directory()), "still used by the other side");
    b.release();
    assertFalse(Files.exists(b.directory()), "removed with the last release");
  }
}
