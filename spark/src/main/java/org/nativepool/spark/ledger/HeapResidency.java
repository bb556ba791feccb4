package org.nativepool.spark.ledger;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.LongSupplier;
import javax.management.JMException;
import javax.management.ObjectName;

/**
 * How much of the JVM heap is resident: the {@code Rss} of the heap's own mappings in {@code
 * /proc/self/smaps}. Committed is not resident: a heap committed at startup ({@code -Xms}) or grown
 * by the collector is only backed by memory where it was touched, so summing committed bytes would
 * make the ledger's unexplained remainder negative by the untouched part and hide real unexplained
 * memory behind it.
 *
 * <p>The heap's address range is the one the JVM states itself: the {@code GC.heap_info} diagnostic
 * command (what {@code jcmd <pid> GC.heap_info} prints, through the platform's {@code
 * DiagnosticCommand} MBean) gives the reserved range of G1's and Shenandoah's heap and of each
 * generation of the Parallel and Serial collectors. Where it gives none (ZGC maps its heap several
 * times, so its resident bytes cannot be summed this way), the heap is guessed from smaps alone:
 * HotSpot reserves it as one contiguous range of anonymous mappings (committed regions read-write,
 * the rest {@code ---p}) whose length is about the maximum heap size and whose read-write part is
 * the committed heap. The guess fails when another anonymous reservation follows the heap directly,
 * as the compressed class space does when the class-data-sharing archive is not mapped, which is
 * why the JVM's statement comes first. {@link #residentNow} returns -1 when neither finds the heap:
 * then the ledger counts committed bytes. An instance finds the heap once and then reads only its
 * range.
 */
final class HeapResidency {
  /** The heap's address range once found (guarded by this); 0, 0 until then. */
  private long start;

  private long end;

  /** Walks the heap's page tables: {@code (max, committed) -> resident bytes or -1}. */
  interface Walk {
    long resident(long max, long committed);
  }

  private final Walk walk;
  private final LongSupplier nanoTime;

  /** A reader that finds the heap once, then reads only its range. */
  HeapResidency() {
    this.walk = this::readNow;
    this.nanoTime = System::nanoTime;
  }

  /** A reader whose walks and clock are the caller's, for tests of when it walks. */
  HeapResidency(Walk walk, LongSupplier nanoTime) {
    this.walk = walk;
    this.nanoTime = nanoTime;
  }

  /**
   * The resident bytes of the heap's mappings, or -1: the first call (and any call after the range
   * held no mapping) finds the heap ({@link #parseHeapInfo}, else {@link #locate}); later calls
   * read its range only. A call returns the last reading instead of walking again
   *
   * <ul>
   *   <li>within {@link #COST_FACTOR} times that reading's cost (heap pages touched since count as
   *       unexplained until the next), or
   *   <li>while the heap is steady ({@link #steady}): the last reading found it all resident and
   *       the committed heap has not changed since. Resident pages of a committed heap stay
   *       resident (the collector gives pages back by uncommitting them, which changes the
   *       committed size), so a walk could find no more; a heap pre-touched at startup ({@code
   *       -XX:+AlwaysPreTouch}) is walked once.
   * </ul>
   *
   * In both cases a reading is reused for at most {@link #MAX_AGE_NANOS}, and never once the
   * committed heap is smaller than when it was taken, nor when it found the heap being given back
   * ({@link #givingBack}): pages the collector gave back would still be counted, and the ledger's
   * unexplained remainder would go negative by them. The collector unmaps within a moment, so the
   * walks at every reading last only that long.
   */
  synchronized long residentNow(long max, long committed) {
    if (max <= 0 || committed <= 0) {
      return -1;
    }
    long now = nanoTime.getAsLong();
    if (readAt != 0
        && now - readAt < MAX_AGE_NANOS
        && committed >= lastCommitted
        && !givingBack(last, lastCommitted)) {
      if (now - readAt < COST_FACTOR * cost || steady(last, lastCommitted, committed)) {
        return last;
      }
    }
    last = walk.resident(max, committed);
    lastCommitted = committed;
    readAt = nanoTime.getAsLong();
    cost = readAt - now;
    return last;
  }

  /**
   * Whether a reading of {@code resident} bytes, taken with {@code thenCommitted} bytes committed,
   * still holds with {@code committed} committed now: the committed heap is the same and the
   * reading found all of it resident but for {@link #STEADY_SLACK_DIVISOR}th of it (pages the
   * collector has not touched yet), and no more than that share beyond it. More resident than
   * committed is a heap being given back: G1 lowers its committed size when it decides to shrink
   * and unmaps the regions afterwards on a thread of its own, so the pages go after the walk, with
   * no further change of the committed size to say so.
   */
  static boolean steady(long resident, long thenCommitted, long committed) {
    return resident >= 0
        && committed == thenCommitted
        && resident >= committed - committed / STEADY_SLACK_DIVISOR
        && !givingBack(resident, committed);
  }

  /**
   * Whether a reading of {@code resident} bytes, taken with {@code committed} bytes committed,
   * found more resident than committed beyond {@link #STEADY_SLACK_DIVISOR}th of it: regions the
   * collector has uncommitted but not yet unmapped, whose pages are about to leave.
   */
  static boolean givingBack(long resident, long committed) {
    return resident > committed + committed / STEADY_SLACK_DIVISOR;
  }

  /** The untouched (or not yet unmapped) share a steady heap may have: 1/128 (8 MiB of 1 GiB). */
  static final long STEADY_SLACK_DIVISOR = 128;

  /**
   * A reading costs a walk over the page tables of the heap's mappings, so it grows with the
   * touched heap (the demo's ledger readings, with a touched 1 GiB heap, took 45.5 ms on average
   * with it at every reading, 8.0 ms without; bench/RESULTS.md): a reading is reused for up to this
   * many times its own cost (2% of a core), and at most {@link #MAX_AGE_NANOS}.
   */
  static final long COST_FACTOR = 50;

  /** The oldest a reused reading gets: 60 s. */
  static final long MAX_AGE_NANOS = 60_000_000_000L;

  private long last = -1;
  private long lastCommitted;
  private long readAt;
  private long cost;

  private long readNow(long max, long committed) {
    try {
      if (end != 0) {
        try (BufferedReader r = open()) {
          long rss = within(r, start, end);
          if (rss >= 0) {
            return rss;
          }
        }
      }
      long[] stated = parseHeapInfo(heapInfo());
      if (stated != null) {
        try (BufferedReader r = open()) {
          long rss = within(r, stated[0], stated[1]);
          if (rss >= 0) {
            start = stated[0];
            end = stated[1];
            return rss;
          }
        }
      }
      try (BufferedReader r = open()) {
        long[] found = locate(r, max, committed);
        start = found[1];
        end = found[2];
        return found[0];
      }
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /** The JVM's {@code GC.heap_info} text, or null where the platform does not serve it. */
  static String heapInfo() {
    try {
      Object text =
          ManagementFactory.getPlatformMBeanServer()
              .invoke(
                  new ObjectName("com.sun.management:type=DiagnosticCommand"),
                  "gcHeapInfo",
                  new Object[] {new String[0]},
                  new String[] {String[].class.getName()});
      return text instanceof String t ? t : null;
    } catch (JMException | RuntimeException e) {
      return null;
    }
  }

  /**
   * The heap's reserved range {@code {start, end}} in a {@code GC.heap_info} text, or null if it
   * states none: the lowest and highest address the heap's lines (those before the metaspace's)
   * give, which spans G1's or Shenandoah's one range and the Parallel and Serial collectors' two
   * adjacent generations (each {@code [bottom, top, end)}).
   */
  static long[] parseHeapInfo(String text) {
    if (text == null) {
      return null;
    }
    long lo = -1;
    long hi = -1;
    for (String line : text.split("\n")) {
      if (line.trim().startsWith("Metaspace")) {
        break;
      }
      int open = line.indexOf('[');
      int close = line.indexOf(')', open + 1);
      if (open < 0 || close < 0) {
        continue;
      }
      for (String a : line.substring(open + 1, close).split(",")) {
        a = a.trim();
        if (!a.startsWith("0x") || !isHex(a, 2, a.length())) {
          continue;
        }
        long v = Long.parseUnsignedLong(a.substring(2), 16);
        lo = lo < 0 || Long.compareUnsigned(v, lo) < 0 ? v : lo;
        hi = hi < 0 || Long.compareUnsigned(v, hi) > 0 ? v : hi;
      }
    }
    return lo >= 0 && Long.compareUnsigned(hi, lo) > 0 ? new long[] {lo, hi} : null;
  }

  private static BufferedReader open() throws IOException {
    return Files.newBufferedReader(Path.of("/proc/self/smaps"), StandardCharsets.US_ASCII);
  }

  /**
   * The heap's run in an smaps text: {@code {rss, start, end}}, or {@code {-1, 0, 0}} if no run
   * fits.
   */
  static long[] locate(Reader smaps, long max, long committed) throws IOException {
    BufferedReader r = smaps instanceof BufferedReader b ? b : new BufferedReader(smaps);
    long best = -1;
    long bestStart = 0;
    long bestEnd = 0;
    long bestDistance = Long.MAX_VALUE;
    // The run being built: contiguous anonymous mappings.
    long runStart = -1;
    long runEnd = -1;
    long runRw = 0;
    long runRss = 0;
    boolean inRun = false;
    String line;
    while ((line = r.readLine()) != null) {
      long[] header = header(line);
      if (header != null) {
        // A mapping's header: "start-end perms offset dev inode [path]".
        long start = header[0];
        long end = header[1];
        String[] f = line.trim().split("\\s+", 6);
        boolean anonymous = f.length < 6 || f[5].isBlank();
        boolean rw = f.length > 1 && f[1].startsWith("rw");
        if (inRun && (!anonymous || start != runEnd)) {
          long d = candidate(runEnd - runStart, runRw, runRss, max, committed);
          if (d >= 0 && d < bestDistance) {
            bestDistance = d;
            best = runRss;
            bestStart = runStart;
            bestEnd = runEnd;
          }
          inRun = false;
        }
        if (anonymous) {
          if (!inRun) {
            inRun = true;
            runStart = start;
            runRw = 0;
            runRss = 0;
          }
          runEnd = end;
          if (rw) {
            runRw += end - start;
          }
        }
      } else if (inRun && line.startsWith("Rss:")) {
        runRss += kib(line) * 1024;
      }
    }
    if (inRun) {
      long d = candidate(runEnd - runStart, runRw, runRss, max, committed);
      if (d >= 0 && d < bestDistance) {
        best = runRss;
        bestStart = runStart;
        bestEnd = runEnd;
      }
    }
    return new long[] {best, bestStart, bestEnd};
  }

  /**
   * The resident bytes of the mappings within [start, end) of an smaps text, reading no further
   * than the first mapping at or past {@code end} (smaps lists mappings by address, and the kernel
   * makes its text as it is read, so a heap at low addresses, as compressed oops place it, costs a
   * few entries); -1 if no mapping lies within.
   */
  static long within(Reader smaps, long start, long end) throws IOException {
    BufferedReader r = smaps instanceof BufferedReader b ? b : new BufferedReader(smaps);
    long rss = 0;
    boolean inside = false;
    boolean any = false;
    String line;
    while ((line = r.readLine()) != null) {
      long[] header = header(line);
      if (header != null) {
        long s = header[0];
        long e = header[1];
        if (Long.compareUnsigned(s, end) >= 0) {
          break;
        }
        inside = Long.compareUnsigned(s, start) >= 0 && Long.compareUnsigned(e, end) <= 0;
        any |= inside;
      } else if (inside && line.startsWith("Rss:")) {
        rss += kib(line) * 1024;
      }
    }
    return any ? rss : -1;
  }

  /**
   * How far a run's read-write bytes are from the committed heap, or -1 if the run cannot be the
   * heap: its length must be within 0.9–1.25 of the maximum and its read-write bytes within 10%
   * (and 8 MiB) of the committed heap.
   */
  private static long candidate(long length, long rw, long rss, long max, long committed) {
    if (length < max * 9 / 10 || length > max * 5 / 4) {
      return -1;
    }
    long d = Math.abs(rw - committed);
    if (d > committed / 10 + (8L << 20)) {
      return -1;
    }
    return d;
  }

  /**
   * The {@code {start, end}} of an smaps mapping's header line ("start-end perms …"), or null if
   * the line is not one: two addresses of 1 to 16 ASCII hex digits, as the kernel writes them (no
   * other digit, no overflow: a text that is not the kernel's is skipped, never thrown on).
   */
  private static long[] header(String line) {
    int dash = line.indexOf('-');
    int space = line.indexOf(' ');
    if (dash <= 0 || space <= dash || !isHex(line, 0, dash) || !isHex(line, dash + 1, space)) {
      return null;
    }
    return new long[] {
      Long.parseUnsignedLong(line.substring(0, dash), 16),
      Long.parseUnsignedLong(line.substring(dash + 1, space), 16)
    };
  }

  /** Whether {@code s[from, to)} is 1 to 16 ASCII hex digits: an address that fits in a long. */
  private static boolean isHex(String s, int from, int to) {
    if (to <= from || to - from > 16) {
      return false;
    }
    for (int i = from; i < to; i++) {
      char c = s.charAt(i);
      if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')) {
        return false;
      }
    }
    return true;
  }

  /**
   * The number of "Rss: 1234 kB": 1 to 15 ASCII digits after the spaces, then a space or the end;
   * 0 for anything else.
   */
  private static long kib(String line) {
    int i = 4;
    while (i < line.length() && line.charAt(i) == ' ') {
      i++;
    }
    int j = i;
    while (j < line.length() && line.charAt(j) >= '0' && line.charAt(j) <= '9') {
      j++;
    }
    if (j == i || j - i > 15 || j < line.length() && line.charAt(j) != ' ') {
      return 0;
    }
    return Long.parseLong(line.substring(i, j));
  }
}
