package org.nativepool.spark.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.ledger.LedgerReader;
import org.nativepool.spark.ledger.LedgerSnapshot;

/**
 * What the executor's reporter reads each poll period, side by side in one JVM, rounds
 * interleaved: a {@code processStats0} read alone, the poll without the ledger; and a whole {@link
 * LedgerReader} reading, the poll the reporter makes (that read, the Arrow stats, the JVM's beans, an NMT summary when the JVM runs with
 * {@code -XX:NativeMemoryTracking=summary} as surefire's does, netty's pools, the heap's smaps
 * range). Printed and written to {@code target/bench-ledger.txt}; see bench/RESULTS.md.
 */
@Tag("bench")
class LedgerReadBenchTest {
  private static final int WARMUP = 200;
  private static final int READS = Integer.getInteger("nativepool.bench.ledgerReads", 100);
  private static final int ROUNDS = Integer.getInteger("nativepool.bench.rounds", 7);

  private static double median(List<Double> xs) {
    List<Double> s = new ArrayList<>(xs);
    Collections.sort(s);
    return s.get(s.size() / 2);
  }

  @Test
  void aLedgerReadingAgainstTheProcessStatsReadItReplaced() throws IOException {
    Natives.ensureLoaded();
    LedgerReader ledger = new LedgerReader();
    long sink = 0;
    for (int i = 0; i < WARMUP; i++) {
      sink += Natives.processStats().reserved();
      sink += ledger.read().rss();
    }
    List<Double> stats = new ArrayList<>();
    List<Double> reading = new ArrayList<>();
    LedgerSnapshot last = null;
    for (int r = 0; r < ROUNDS; r++) {
      long t0 = System.nanoTime();
      for (int i = 0; i < READS; i++) {
        sink += Natives.processStats().reserved();
      }
      long t1 = System.nanoTime();
      for (int i = 0; i < READS; i++) {
        last = ledger.read();
      }
      long t2 = System.nanoTime();
      stats.add((t1 - t0) / 1e3 / READS);
      reading.add((t2 - t1) / 1e3 / READS);
    }
    String out =
        String.format(
            Locale.ROOT,
            "ledger read bench: %d reads x %d rounds each, interleaved; median (min..max) us per read%n"
                + "  processStats0 (the poll without ledger)   %.1f (%.1f..%.1f)%n"
                + "  LedgerReader.read (the poll now)          %.1f (%.1f..%.1f)%n"
                + "  ratio                                     %.1fx%n"
                + "  parts of the last reading: %d (NMT %s); sink %d%n",
            READS,
            ROUNDS,
            median(stats),
            Collections.min(stats),
            Collections.max(stats),
            median(reading),
            Collections.min(reading),
            Collections.max(reading),
            median(reading) / median(stats),
            last.parts().size(),
            last.has(LedgerReader.JVM_THREADS) ? "on" : "off",
            sink);
    System.out.print(out);
    Path target =
        Paths.get(System.getProperty("nativepool.bench.ledgerOut", "target/bench-ledger.txt"));
    Files.write(target, out.getBytes(StandardCharsets.UTF_8));
  }
}
