package org.nativepool.spark.example;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.nativepool.spark.ledger.ExecutorLedger;
import org.nativepool.spark.ledger.LedgerReader;
import org.nativepool.spark.ledger.LedgerSnapshot;
import org.nativepool.spark.ledger.LedgerSnapshot.Kind;

/**
 * Reads the executor memory ledger every {@value #PERIOD_MS} ms (or a period of the caller's) on a
 * daemon thread and writes the
 * readings as {@code ledger.csv} for {@code examples/chart}'s stacked chart. A reading costs a few
 * ms (a Native Memory Tracking summary when NMT is on, a walk over netty's chunk lists), so it is
 * taken less often than {@link MemorySampler}'s 50 ms; {@link #readMillisAvg()} says what it cost.
 *
 * <p>The readings come from {@link ExecutorLedger#current()} (in local mode the executor plugin
 * runs in this JVM), so they also feed its gauges and high-water marks; without one, from a
 * {@link LedgerReader} of its own.
 *
 * <p>The CSV's columns, in bytes: {@code t_ms} (since the {@code startNanos} given to {@link
 * #start}, as in {@code samples.csv}), {@code rss}, one column per {@link Kind#RESIDENT} part of
 * the first reading (in the ledger's display order), {@value #OTHER} (resident parts that appear
 * only in later readings, e.g. a netty pool made mid-run; 0 while there are none), {@value
 * LedgerReader#UNEXPLAINED} (RSS less the resident parts; may be negative), then one column per
 * {@link Kind#ACCOUNTING} part of the first reading, named {@value #ACCOUNTING_PREFIX}{@code
 * <part>} so that the chart does not stack it. The set of columns is fixed at the first reading;
 * a part a later reading lacks is 0. In every row the resident columns, {@value #OTHER} and
 * {@value LedgerReader#UNEXPLAINED} sum to {@code rss} exactly. Detail parts are not written.
 *
 * <p>Started once, closed once; the figures are safe to read after {@link #close()}.
 */
final class LedgerSampler extends CsvSampler {
  /** Milliseconds between readings. */
  static final long PERIOD_MS = 250;

  /** The column of resident parts that are not columns of their own. */
  static final String OTHER = "other";

  /** The prefix of accounting columns (bookkeeping, not memory: never stacked). */
  static final String ACCOUNTING_PREFIX = "acct:";

  private final ExecutorLedger executor;
  private final LedgerReader own;
  private final long startNanos;
  private final List<String> resident;
  private final List<String> accounting;

  // Written by sample() (synchronized); read after close().
  private Map<String, Long> peakRow;
  private Map<String, Long> lastRow;
  private long samples;
  private long reads;
  private long readNanos;
  private long readNanosMax;

  private LedgerSampler(
      ExecutorLedger executor,
      LedgerReader own,
      long startNanos,
      Path csvPath,
      long periodMs,
      LedgerSnapshot first,
      long firstAtNanos,
      long firstReadNanos)
      throws IOException {
    super(
        csvPath,
        String.join(
            ",", header(first.partsOf(Kind.RESIDENT), first.partsOf(Kind.ACCOUNTING))),
        periodMs,
        "nativepool-demo-ledger",
        "the ledger");
    this.executor = executor;
    this.own = own;
    this.startNanos = startNanos;
    this.resident = first.partsOf(Kind.RESIDENT);
    this.accounting = first.partsOf(Kind.ACCOUNTING);
    note(firstReadNanos);
    write(first, firstAtNanos);
  }

  /**
   * Takes the first reading (which fixes the columns), writes it, and starts sampling. {@code
   * executor} may be null (then the readings come from a ledger of its own).
   */
  static LedgerSampler start(ExecutorLedger executor, long startNanos, Path csvPath)
      throws IOException {
    return start(executor, startNanos, csvPath, PERIOD_MS);
  }

  /** {@link #start(ExecutorLedger, long, Path)} with a reading every {@code periodMs} ms. */
  static LedgerSampler start(ExecutorLedger executor, long startNanos, Path csvPath, long periodMs)
      throws IOException {
    LedgerReader own = executor == null ? new LedgerReader() : null;
    long t0 = System.nanoTime();
    LedgerSnapshot first = executor != null ? executor.readNow() : own.read();
    LedgerSampler s =
        new LedgerSampler(
            executor, own, startNanos, csvPath, periodMs, first, t0, System.nanoTime() - t0);
    s.startThread();
    return s;
  }

  /** The CSV's header: see the class comment. */
  List<String> header() {
    return header(resident, accounting);
  }

  private static List<String> header(List<String> resident, List<String> accounting) {
    List<String> h = new ArrayList<>();
    h.add("t_ms");
    h.add(LedgerReader.RSS);
    h.addAll(resident);
    h.add(OTHER);
    h.add(LedgerReader.UNEXPLAINED);
    for (String a : accounting) {
      h.add(ACCOUNTING_PREFIX + a);
    }
    return h;
  }

  /** The resident columns, {@value #OTHER} last: with the unexplained remainder they sum to RSS. */
  List<String> residentColumns() {
    List<String> c = new ArrayList<>(resident);
    c.add(OTHER);
    return c;
  }

  /** The accounting parts, without their column prefix. */
  List<String> accountingParts() {
    return Collections.unmodifiableList(accounting);
  }

  /** Whether the readings come from the executor plugin's ledger. */
  boolean fromExecutor() {
    return executor != null;
  }

  private LedgerSnapshot read() {
    return executor != null ? executor.readNow() : own.read();
  }

  @Override
  void sample() {
    long t0 = System.nanoTime();
    LedgerSnapshot s = read();
    synchronized (this) {
      note(System.nanoTime() - t0);
      write(s, t0);
    }
  }

  private synchronized void note(long nanos) {
    reads++;
    readNanos += nanos;
    readNanosMax = Math.max(readNanosMax, nanos);
  }

  /** The reading as a row of the CSV (see the class comment); null if RSS is unknown. */
  Map<String, Long> row(LedgerSnapshot s) {
    if (s.rss() < 0) {
      return null;
    }
    Map<String, Long> row = new LinkedHashMap<>();
    row.put(LedgerReader.RSS, s.rss());
    for (String p : resident) {
      row.put(p, s.kind(p) == Kind.RESIDENT ? Math.max(0, s.get(p)) : 0L);
    }
    long other = 0;
    for (String p : s.partsOf(Kind.RESIDENT)) {
      if (!row.containsKey(p)) {
        other += Math.max(0, s.get(p)); // LedgerSnapshot.explained() clamps the same way
      }
    }
    row.put(OTHER, other);
    row.put(LedgerReader.UNEXPLAINED, s.unexplained());
    for (String p : accounting) {
      row.put(p, Math.max(0, s.get(p)));
    }
    return row;
  }

  private synchronized void write(LedgerSnapshot s, long readAtNanos) {
    if (failed()) {
      return;
    }
    Map<String, Long> row = row(s);
    if (row == null) {
      return; // no RSS, nothing to split
    }
    long t = Math.max(0, (readAtNanos - startNanos) / 1_000_000);
    row.put("t_ms", t);
    samples++;
    lastRow = row;
    if (peakRow == null || row.get(LedgerReader.RSS) > peakRow.get(LedgerReader.RSS)) {
      peakRow = row;
    }
    StringBuilder b = new StringBuilder().append(t);
    for (Map.Entry<String, Long> e : row.entrySet()) {
      if (!e.getKey().equals("t_ms")) {
        b.append(',').append(e.getValue());
      }
    }
    writeRow(b.toString());
  }

  /** Rows written. */
  synchronized long samples() {
    return samples;
  }

  /**
   * The row with the highest RSS: the CSV's figures by name (accounting parts without their
   * prefix), {@code t_ms} last; null if none.
   */
  synchronized Map<String, Long> peakRow() {
    return peakRow;
  }

  /** The last row (the reading at {@link #close()}); null if none. */
  synchronized Map<String, Long> lastRow() {
    return lastRow;
  }

  /** The mean cost of a reading, ms. */
  synchronized double readMillisAvg() {
    return readNanos / 1e6 / Math.max(1, reads);
  }

  /** The highest cost of a reading, ms. */
  synchronized double readMillisMax() {
    return readNanosMax / 1e6;
  }
}
