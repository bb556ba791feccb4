package org.nativepool.spark.ledger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.config.LedgerSettings;
import org.nativepool.spark.config.LedgerThreshold;
import org.nativepool.spark.config.NativePoolConf;

/**
 * The ledger's pure parts, without Spark or the library: a snapshot's sums, the NMT report parser,
 * and the settings' parsing and refusals.
 */
class LedgerPartsTest {
  private static final long MIB = 1L << 20;

  /** A JDK 17 {@code VM.native_memory summary scale=b} report, abridged. */
  static final String NMT =
      "\nNative Memory Tracking:\n\n"
          + "Total: reserved=8022450915, committed=483853027\n"
          + "       malloc: 7324387 #3689\n"
          + "-                 Java Heap (reserved=6320816128, committed=406847488)\n"
          + "                            (mmap: reserved=6320816128, committed=406847488) \n"
          + "-                     Class (reserved=1073812207, committed=135919)\n"
          + "-                    Thread (reserved=14725608, committed=610792)\n"
          + "                            (stack: reserved=14680064, committed=565248)\n"
          + "-                      Code (reserved=253665704, committed=7762344)\n"
          + "-                        GC (reserved=273550641, committed=54086961)\n"
          + "-                     Other (reserved=3000000, committed=3000000)\n"
          + "-    Native Memory Tracking (reserved=64360, committed=64360)\n";

  /**
   * The JIT's code cache is read under each of the names JDK 17 gives its pools: a segmented
   * cache's three {@code CodeHeap} pools, or an unsegmented cache's one {@code CodeCache} (C1 only,
   * or a small cache), which the ledger missed before, leaving the code cache in unexplained.
   */
  @Test
  void everyNameOfTheCodeCacheIsTheCodeCache() {
    assertTrue(LedgerReader.codeCachePool("CodeHeap 'non-nmethods'"));
    assertTrue(LedgerReader.codeCachePool("CodeHeap 'profiled nmethods'"));
    assertTrue(LedgerReader.codeCachePool("CodeCache"));
    assertTrue(LedgerReader.codeCachePool("Code Cache"));
    assertEquals(false, LedgerReader.codeCachePool("Metaspace"));
    assertEquals(false, LedgerReader.codeCachePool("Compressed Class Space"));
  }

  @Test
  void nmtReportsParseToCommittedBytesByCategory() {
    Map<String, Long> m = LedgerReader.parseNmt(NMT);
    assertEquals(483853027L, m.get("Total"));
    assertEquals(406847488L, m.get("Java Heap"));
    assertEquals(610792L, m.get("Thread"));
    assertEquals(3000000L, m.get("Other"));
    assertEquals(64360L, m.get("Native Memory Tracking"));
    assertNull(LedgerReader.parseNmt("Native memory tracking is not enabled\n"));
    assertNull(LedgerReader.parseNmt(null));
  }

  /** One smaps entry: header, size and Rss in KiB. */
  private static String smaps(long start, long end, String perms, String path, long rssKib) {
    return String.format(
        "%x-%x %s 00000000 00:00 0 %s%nSize: %d kB%nRss: %d kB%nPss: %d kB%n",
        start, end, perms, path, (end - start) >> 10, rssKib, rssKib);
  }

  @Test
  void theHeapIsTheAnonymousRunOfAboutMaxWhoseReadWritePartIsTheCommittedHeap() throws Exception {
    long g = 1L << 30;
    String text =
        smaps(0x400000, 0x500000, "r-xp", "/usr/bin/java", 100)
            // The heap: 256 MiB committed (60 MiB touched), the rest reserved.
            + smaps(0x80000000L, 0x90000000L, "rw-p", "", 60 << 10)
            + smaps(0x90000000L, 0xffe00000L, "---p", "", 0)
            // The compressed class space: 1 GiB, 1 MiB of it read-write.
            + smaps(0x7f0000000000L, 0x7f0000100000L, "rw-p", "", 900)
            + smaps(0x7f0000100000L, 0x7f0040000000L, "---p", "", 0)
            + smaps(0x7f1000000000L, 0x7f1000400000L, "r--s", "/usr/lib/jvm/lib/modules", 2000);
    assertEquals(
        60L << 20, HeapResidency.locate(new java.io.StringReader(text), 2 * g, 256L << 20)[0]);
    // A 1 GiB heap: the class space's run has the right length but not the read-write part.
    String small =
        smaps(0xc0000000L, 0xcfc00000L, "rw-p", "", 200 << 10)
            + smaps(0xcfc00000L, 0x100000000L, "---p", "", 0)
            + smaps(0x7f0000000000L, 0x7f0000100000L, "rw-p", "", 900)
            + smaps(0x7f0000100000L, 0x7f0040000000L, "---p", "", 0);
    assertEquals(
        200L << 20, HeapResidency.locate(new java.io.StringReader(small), g, 252L << 20)[0]);
    assertEquals(-1, HeapResidency.locate(new java.io.StringReader(small), 4 * g, 252L << 20)[0]);
    assertTrue(new HeapResidency().residentNow(-1, 1) < 0);
    long[] at = HeapResidency.locate(new java.io.StringReader(text), 2 * g, 256L << 20);
    assertEquals(0x80000000L, at[1]);
    assertEquals(0xffe00000L, at[2]);
    // Later readings sum the range only (a region committed since included), and stop after it.
    String later =
        smaps(0x80000000L, 0x88000000L, "rw-p", "", 100 << 10)
            + smaps(0x88000000L, 0x90000000L, "rw-p", "", 20 << 10)
            + smaps(0x90000000L, 0xffe00000L, "---p", "", 0)
            + "ffe00000-fff00000 rw-p 00000000 00:00 0 \nRss: 999999 kB\n";
    assertEquals(120L << 20, HeapResidency.within(new java.io.StringReader(later), at[1], at[2]));
    assertEquals(-1, HeapResidency.within(new java.io.StringReader(later), 0x10, 0x20));
    // This JVM's own heap is found, and read again from its range.
    HeapResidency own = new HeapResidency();
    java.lang.management.MemoryUsage h =
        java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
    long first = own.residentNow(h.getMax(), h.getCommitted());
    assertTrue(first > 0 && first <= h.getCommitted() + (8 << 20), "heap resident " + first);
    assertTrue(own.residentNow(h.getMax(), h.getCommitted()) > 0);
  }

  @Test
  void theHeapsRangeIsTheOneTheJvmStatesForEachCollector() {
    String g1 =
        " garbage-first heap   total 389120K, used 4389K [0x0000000080000000, 0x0000000100000000)\n"
            + "  region size 1024K, 4 young (4096K), 0 survivors (0K)\n"
            + " Metaspace       used 2893K, committed 3072K, reserved 1114112K\n"
            + "  class space    used 324K, committed 384K, reserved 1048576K\n";
    assertArrayEquals(new long[] {0x80000000L, 0x100000000L}, HeapResidency.parseHeapInfo(g1));
    String parallel =
        " PSYoungGen      total 113152K, used 5836K [0x00000000d5580000, 0x00000000dd380000,"
            + " 0x0000000100000000)\n"
            + "  eden space 97280K, 6% used"
            + " [0x00000000d5580000,0x00000000d5b33390,0x00000000db480000)\n"
            + " ParOldGen       total 258048K, used 0K [0x0000000080000000, 0x000000008fc00000,"
            + " 0x00000000d5580000)\n"
            + " Metaspace       used 2901K, committed 3072K, reserved 1114112K\n";
    assertArrayEquals(
        new long[] {0x80000000L, 0x100000000L}, HeapResidency.parseHeapInfo(parallel));
    String shenandoah =
        "Shenandoah Heap\n 2048M max, 2048M soft max, 377M committed, 6144K used\n"
            + "Reserved region:\n - [0x0000000080000000, 0x0000000100000000) \n"
            + "Collection set:\n - map (vanilla): 0x0000000000010800\n"
            + " Metaspace       used 2934K, committed 3136K, reserved 1114112K\n";
    assertArrayEquals(
        new long[] {0x80000000L, 0x100000000L}, HeapResidency.parseHeapInfo(shenandoah));
    // ZGC states no range; the metaspace's lines never count.
    assertNull(
        HeapResidency.parseHeapInfo(
            " ZHeap           used 8M, capacity 378M, max capacity 2048M\n"
                + " Metaspace       used 2924K [0x0000000800000000, 0x0000000900000000)\n"));
    assertNull(HeapResidency.parseHeapInfo(null));
    assertNull(HeapResidency.parseHeapInfo("garbage [0x10, zz)"));
    // This JVM states its heap, and the stated range holds mappings.
    assertNotNull(HeapResidency.parseHeapInfo(HeapResidency.heapInfo()));
  }

  /**
   * Without the class-data-sharing archive, HotSpot reserves the compressed class space right after
   * the heap, so the heap's anonymous run in smaps is heap and class space together and no guess
   * from smaps alone fits; the range the JVM states still finds it.
   */
  @Test
  void theHeapIsFoundWhenTheClassSpaceFollowsItDirectly() throws Exception {
    long g = 1L << 30;
    String adjacent =
        smaps(0xc0000000L, 0xd0000000L, "rw-p", "", 90 << 10)
            + smaps(0xd0000000L, 0x100000000L, "---p", "", 0)
            + smaps(0x100000000L, 0x100010000L, "rw-p", "", 64)
            + smaps(0x100010000L, 0x140000000L, "---p", "", 0);
    assertEquals(-1, HeapResidency.locate(new java.io.StringReader(adjacent), g, 256L << 20)[0]);
    assertEquals(
        90L << 20,
        HeapResidency.within(new java.io.StringReader(adjacent), 0xc0000000L, 0x100000000L));
    Process p =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xshare:off",
                "-Xmx1g",
                "-cp",
                System.getProperty("java.class.path"),
                HeapResidencyProbe.class.getName())
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    assertEquals(0, p.exitValue(), out);
    String[] f = out.split(" ");
    long resident = Long.parseLong(f[0]);
    long committed = Long.parseLong(f[1]);
    assertTrue(resident > 0 && resident <= committed + (8 << 20), out);
  }

  private static LedgerSnapshot snapshot(long rss) {
    Map<String, Long> v = new LinkedHashMap<>();
    Map<String, LedgerSnapshot.Kind> k = new LinkedHashMap<>();
    v.put("jvm.heap.committed", 100 * MIB);
    k.put("jvm.heap.committed", LedgerSnapshot.Kind.RESIDENT);
    v.put("jvm.heap.used", 60 * MIB);
    k.put("jvm.heap.used", LedgerSnapshot.Kind.DETAIL);
    v.put("native.allocated", 30 * MIB);
    k.put("native.allocated", LedgerSnapshot.Kind.RESIDENT);
    v.put("native.reserved", 50 * MIB);
    k.put("native.reserved", LedgerSnapshot.Kind.ACCOUNTING);
    return new LedgerSnapshot(1, rss, v, k);
  }

  /**
   * The NMT hint is given only where it helps: unexplained above a tenth of RSS, and NMT off (no
   * jvm.threads part).
   */
  @Test
  void theNmtHintNeedsALargeRemainderAndNmtOff() {
    assertEquals(null, LedgerSnapshot.nmtHint(1000 * MIB, 100 * MIB, false), "a tenth: no hint");
    assertTrue(LedgerSnapshot.nmtHint(1000 * MIB, 101 * MIB, false).contains("10% of RSS"));
    assertEquals(null, LedgerSnapshot.nmtHint(1000 * MIB, 500 * MIB, true), "NMT on: no hint");
  }

  @Test
  void onlyResidentPartsAreSummedAndTheRestIsUnexplained() {
    LedgerSnapshot s = snapshot(150 * MIB);
    assertEquals(130 * MIB, s.explained());
    assertEquals(20 * MIB, s.unexplained());
    assertEquals(20 * MIB, s.get(LedgerReader.UNEXPLAINED));
    assertEquals(150 * MIB, s.get(LedgerReader.RSS));
    assertEquals(-1, s.get("jvm.threads"), "absent part");
    assertEquals(
        List.of("jvm.heap.committed", "native.allocated"), s.partsOf(LedgerSnapshot.Kind.RESIDENT));
    assertEquals(
        "RSS 150.0 MiB = jvm.heap.committed 100.0 MiB + native.allocated 30.0 MiB"
            + " + unexplained 20.0 MiB (native.reserved 50.0 MiB); unexplained is 13% of RSS"
            + " with Native Memory Tracking off: "
            + LedgerSnapshot.NMT_HINT,
        s.line(),
        "a large unexplained remainder without NMT says what NMT would split, and its cost");
    assertEquals(-10 * MIB, snapshot(120 * MIB).unexplained(), "committed is not resident");
    assertTrue(snapshot(120 * MIB).line().contains("unexplained -10.0 MiB"));
    assertEquals(-1, snapshot(-1).get(LedgerReader.UNEXPLAINED), "RSS unknown");
  }

  @Test
  void theDetectorWatchesTheRemainderWithTheHeapCountedAsCommitted() {
    Map<String, Long> v = new LinkedHashMap<>();
    Map<String, LedgerSnapshot.Kind> k = new LinkedHashMap<>();
    v.put(LedgerReader.JVM_HEAP_RESIDENT, 60 * MIB);
    k.put(LedgerReader.JVM_HEAP_RESIDENT, LedgerSnapshot.Kind.RESIDENT);
    v.put(LedgerReader.JVM_HEAP_COMMITTED, 100 * MIB);
    k.put(LedgerReader.JVM_HEAP_COMMITTED, LedgerSnapshot.Kind.DETAIL);
    LedgerSnapshot s = new LedgerSnapshot(1, 90 * MIB, v, k);
    assertEquals(30 * MIB, s.unexplained());
    // Heap pages touched since the heap was last read are in the 30 MiB; not in this one.
    assertEquals(-10 * MIB, ExecutorLedger.conservativeUnexplained(s));
    assertEquals(20 * MIB, ExecutorLedger.conservativeUnexplained(snapshot(150 * MIB)));
  }

  @Test
  void aPartWithoutAKindOrNamedLikeATotalIsRefused() {
    assertThrows(
        IllegalArgumentException.class, () -> new LedgerSnapshot(1, 1, Map.of("x", 1L), Map.of()));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            new LedgerSnapshot(
                1, 1, Map.of("rss", 1L), Map.of("rss", LedgerSnapshot.Kind.RESIDENT)));
  }

  @Test
  void settingsParseThresholdsWithTotalAsTheRss() {
    SparkConf c =
        new SparkConf(false)
            .set(
                NativePoolConf.LEDGER_THRESHOLDS.key(),
                "total=6g, unexplained=512m,native.allocated=1048576")
            .set(NativePoolConf.LEDGER_HYSTERESIS.key(), "0.25")
            .set(NativePoolConf.GROWTH_WINDOW.key(), "10");
    LedgerSettings s = LedgerSettings.fromConf(c);
    assertEquals(
        List.of(
            new LedgerThreshold("total", 6L << 30),
            new LedgerThreshold("unexplained", 512 * MIB),
            new LedgerThreshold("native.allocated", MIB)),
        s.thresholds());
    assertEquals(0.25, s.hysteresis());
    assertEquals(10, s.growthWindow());
    assertEquals(LedgerSettings.defaults().growthWindows(), s.growthWindows());
    assertEquals(16 * MIB, s.growthMinBytes());
  }

  @Test
  void badSettingsAreRefusedNamingTheKey() {
    for (String[] bad :
        new String[][] {
          {NativePoolConf.LEDGER_THRESHOLDS.key(), "total"},
          {NativePoolConf.LEDGER_THRESHOLDS.key(), "total=lots"},
          {NativePoolConf.LEDGER_THRESHOLDS.key(), "rss=0"},
          {NativePoolConf.LEDGER_HYSTERESIS.key(), "1"},
          {NativePoolConf.LEDGER_HYSTERESIS.key(), "-0.1"},
          {NativePoolConf.LEDGER_HYSTERESIS.key(), "a"},
          {NativePoolConf.GROWTH_WINDOW.key(), "0"},
          {NativePoolConf.GROWTH_MIN_BYTES.key(), "x"},
        }) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> LedgerSettings.fromConf(new SparkConf(false).set(bad[0], bad[1])),
              bad[0] + "=" + bad[1]);
      assertTrue(e.getMessage().contains(bad[0]), e.getMessage());
    }
  }
}
