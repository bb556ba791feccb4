package org.nativepool.spark.ledger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.junit.FuzzTest;
import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Fuzzes the ledger's readers of the texts the JVM and the kernel write about the heap: {@code
 * GC.heap_info} ({@link HeapResidency#parseHeapInfo}) and {@code /proc/self/smaps} ({@link
 * HeapResidency#locate}, {@link HeapResidency#within}). An input's first line says which:
 * {@code heap_info}, or {@code smaps MAX COMMITTED START END} (hex: the heap's maximum and committed
 * sizes, and a range to sum). The properties:
 *
 * <ul>
 *   <li>no reader throws on any text (the ledger would lose its heap figure for the executor's
 *       life);
 *   <li>a heap range read from {@code GC.heap_info} is two addresses the text writes, the lower
 *       first;
 *   <li>{@code within} sums exactly the {@code Rss} of the mappings inside the range, as the
 *       kernel's grammar reads ({@link #withinReference}): header lines of ASCII hex addresses,
 *       {@code Rss:} lines of ASCII decimal kB;
 *   <li>{@code locate}'s run, when it finds one in a text whose mappings are in the kernel's
 *       order, is a range of the text's mappings whose resident bytes are what {@code within} sums
 *       over it.
 * </ul>
 *
 * Seeds: {@code GC.heap_info} of JVMs with G1, Parallel and Serial, and the part of each one's
 * smaps around its heap, taken on this project's test machine.
 */
class HeapTextFuzzTest {
  private static final Pattern HEADER =
      Pattern.compile("^([0-9a-fA-F]{1,16})-([0-9a-fA-F]{1,16}) .*", Pattern.DOTALL);
  private static final Pattern RSS =
      Pattern.compile("^Rss: *([0-9]{1,15}) .*|^Rss: *([0-9]{1,15})", Pattern.DOTALL);

  /**
   * {@link HeapResidency#within} as the kernel's grammar reads smaps (lines as a {@code
   * BufferedReader} reads them: a bare CR ends one too): the Rss of the mappings
   * wholly inside [start, end), stopping at the first mapping at or past end; -1 if none is inside.
   */
  static long withinReference(String text, long start, long end) {
    long rss = 0;
    boolean inside = false;
    boolean any = false;
    for (String line : text.split("\r\n|\r|\n", -1)) {
      Matcher h = HEADER.matcher(line);
      if (h.matches()) {
        long s = Long.parseUnsignedLong(h.group(1), 16);
        long e = Long.parseUnsignedLong(h.group(2), 16);
        if (Long.compareUnsigned(s, end) >= 0) {
          break;
        }
        inside = Long.compareUnsigned(s, start) >= 0 && Long.compareUnsigned(e, end) <= 0;
        any |= inside;
        continue;
      }
      Matcher r = RSS.matcher(line);
      if (inside && r.matches()) {
        rss += Long.parseLong(r.group(1) != null ? r.group(1) : r.group(2)) * 1024;
      }
    }
    return any ? rss : -1;
  }

  /**
   * Whether the text's mappings are in address order and do not overlap, as the kernel lists them
   * (only then is a run of adjacent mappings the same as the mappings within its range).
   */
  static boolean asTheKernelOrders(String text) {
    long prevEnd = 0;
    for (String line : text.split("\r\n|\r|\n", -1)) {
      Matcher h = HEADER.matcher(line);
      if (h.matches()) {
        long s = Long.parseUnsignedLong(h.group(1), 16);
        long e = Long.parseUnsignedLong(h.group(2), 16);
        if (Long.compareUnsigned(s, prevEnd) < 0 || Long.compareUnsigned(e, s) <= 0) {
          return false;
        }
        prevEnd = e;
      }
    }
    return true;
  }

  private static long hex(String[] words, int i) {
    try {
      return i < words.length ? Long.parseUnsignedLong(words[i], 16) : 0;
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  // (libFuzzer's dictionary holds no line breaks: an entry with one stops it at start.)
  @FuzzTest(maxDuration = "2m")
  @DictionaryEntries({
    "heap_info", "smaps ", " garbage-first heap   total ", "K, used ", " [0x", ", 0x", ")",
    " Metaspace", " def new generation", " PSYoungGen", " rw-p 00000000 00:00 0 ", "Rss:", " kB",
    "Size:", " ---p ", "ffffffffffffffff"
  })
  void heapInfoAndSmapsParseAsTheKernelAndJvmWriteThem(byte[] input) throws IOException {
    String all = new String(input, StandardCharsets.UTF_8);
    int nl = all.indexOf('\n');
    String first = nl < 0 ? all : all.substring(0, nl);
    String text = nl < 0 ? "" : all.substring(nl + 1);
    if (!first.startsWith("smaps")) {
      long[] range = HeapResidency.parseHeapInfo(text);
      if (range != null) {
        assertTrue(Long.compareUnsigned(range[0], range[1]) < 0, "the range's ends in order");
        String lower = text.toLowerCase(Locale.ROOT);
        for (long a : range) {
          assertTrue(lower.contains(Long.toHexString(a)), () -> "0x" + Long.toHexString(a) + " is not in the text");
        }
      }
      return;
    }
    String[] w = first.trim().split(" +");
    long max = hex(w, 1);
    long committed = hex(w, 2);
    long start = hex(w, 3);
    long end = hex(w, 4);
    assertEquals(
        withinReference(text, start, end),
        HeapResidency.within(new StringReader(text), start, end),
        () -> String.format("within(%x, %x)", start, end));
    long[] run = HeapResidency.locate(new StringReader(text), max, committed);
    if (run[0] >= 0 && asTheKernelOrders(text)) {
      assertTrue(Long.compareUnsigned(run[1], run[2]) < 0, "the run's ends in order");
      assertEquals(run[0], Math.max(0, withinReference(text, run[1], run[2])), "the run's resident bytes");
    }
  }
}
