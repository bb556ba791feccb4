package org.nativepool.spark.example;



import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.nativepool.spark.ledger.ExecutorLedger;
import org.nativepool.spark.ledger.LedgerReader;

/**
 * The report's "Ledger" section: the executor memory ledger at the highest-RSS reading of {@link
 * LedgerSampler} and at the end of the measured run, each resident part, the unexplained
 * remainder and the accounting parts, with each part's high-water mark ({@link
 * ExecutorLedger#peaks()}, every reading of the run, the plugin's own included), the highest task
 * pool peak and the largest consumer peaks. The same figures go to report.properties:
 *
 * <ul>
 *   <li>{@code ledger.peak.<figure>} and {@code ledger.end.<figure>}: {@code rss}, every resident
 *       column of {@code ledger.csv} ({@code ledger.columns}, {@value LedgerSampler#OTHER} last),
 *       {@code unexplained}, the accounting parts ({@code ledger.accounting}) and {@code t_ms}; the
 *       resident columns and {@code unexplained} sum to {@code rss} exactly;
 *   <li>{@code ledger.hwm.<figure>}: every figure's high-water mark, detail parts included;
 *   <li>{@code ledger.taskPoolPeak}, {@code ledger.taskPoolPeakTask}, {@code
 *       ledger.consumerPeak.<consumer>} (the {@value #TOP_CONSUMERS} largest);
 *   <li>{@code ledger.samples}, {@code ledger.periodMs}, {@code ledger.readMsAvg}, {@code
 *       ledger.readMsMax} (the cost of a reading), {@code ledger.nmt} (whether the Native Memory
 *       Tracking parts are there), {@code ledger.source} ({@code executor} or {@code own}).
 * </ul>
 *
 * <p>Without an executor plugin's ledger there are no high-water marks or consumer peaks.
 */
final class LedgerReport {
  /** Consumer peaks the report names. */
  static final int TOP_CONSUMERS = 5;

  private LedgerReport() {}

  /**
   * Appends the section to {@code b} and puts its figures in {@code r}. {@code executor} may be
   * null; {@code csv} is where the sampler wrote.
   */
  static void add(
      SortDemo.Result r, StringBuilder b, LedgerSampler smp, ExecutorLedger executor, String csv) {
    Map<String, Long> peak = smp.peakRow();
    Map<String, Long> end = smp.lastRow();
    Map<String, Long> hwm = executor == null ? Map.of() : executor.peaks();
    List<String> columns = smp.residentColumns();
    List<String> accounting = smp.accountingParts();
    boolean nmt = columns.contains(LedgerReader.JVM_THREADS);

    r.put("ledger.columns", String.join(",", columns));
    r.put("ledger.accounting", String.join(",", accounting));
    r.put("ledger.samples", smp.samples());
    r.put("ledger.periodMs", LedgerSampler.PERIOD_MS);
    r.put("ledger.readMsAvg", String.format(Locale.ROOT, "%.2f", smp.readMillisAvg()));
    r.put("ledger.readMsMax", String.format(Locale.ROOT, "%.2f", smp.readMillisMax()));
    r.put("ledger.nmt", nmt);
    r.put("ledger.source", smp.fromExecutor() ? "executor" : "own");
    putAll(r, "ledger.peak.", peak);
    putAll(r, "ledger.end.", end);
    putAll(r, "ledger.hwm.", hwm);

    b.append(
        String.format(
            Locale.ROOT,
            "Ledger: the executor memory ledger (%s), read every %d ms: %d readings in %s;"
                + " a reading took %.1f ms on average, %.1f ms at most; Native Memory Tracking %s%n",
            smp.fromExecutor() ? "ExecutorLedger.current()" : "a LedgerReader of the demo's own",
            LedgerSampler.PERIOD_MS,
            smp.samples(),
            csv,
            smp.readMillisAvg(),
            smp.readMillisMax(),
            nmt
                ? "on (jvm.threads, jvm.native, jvm.unsafe)"
                : "off (the JVM's own native memory is in unexplained)"));
    if (peak == null) {
      b.append("  no reading with a known RSS\n");
      return;
    }
    int w = "unexplained".length();
    for (String p : columns) {
      w = Math.max(w, p.length());
    }
    for (String p : accounting) {
      w = Math.max(w, p.length() + " (acct.)".length());
    }
    String fmt = "  %-" + w + "s %22s %14s %14s%n";
    b.append(
        String.format(
            Locale.ROOT,
            fmt,
            "",
            String.format(Locale.ROOT, "at RSS peak (%.1f s)", peak.get("t_ms") / 1000.0),
            "at the end",
            "high-water"));
    row(b, fmt, LedgerReader.RSS, LedgerReader.RSS, peak, end, hwm);
    for (String p : columns) {
      row(b, fmt, p, p, peak, end, hwm);
    }
    row(b, fmt, LedgerReader.UNEXPLAINED, LedgerReader.UNEXPLAINED, peak, end, hwm);
    for (String p : accounting) {
      row(b, fmt, p + " (acct.)", p, peak, end, hwm);
    }

    if (executor == null) {
      b.append("  no executor plugin ledger: no task pool or consumer peaks\n");
      return;
    }
    long poolPeak = executor.taskPoolPeak();
    r.put("ledger.taskPoolPeak", poolPeak);
    r.put("ledger.taskPoolPeakTask", executor.taskPoolPeakTask());
    StringBuilder consumers = new StringBuilder();
    executor.consumerPeaks().entrySet().stream()
        .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
        .limit(TOP_CONSUMERS)
        .forEach(
            e -> {
              r.put("ledger.consumerPeak." + e.getKey(), e.getValue());
              consumers
                  .append(consumers.length() > 0 ? ", " : "")
                  .append(e.getKey())
                  .append(' ')
                  .append(SortDemo.size(e.getValue()));
            });
    b.append(
        String.format(
            Locale.ROOT,
            "  %-" + w + "s %s%n",
            "task pool peak",
            poolPeak > 0
                ? SortDemo.size(poolPeak) + " (task " + executor.taskPoolPeakTask() + ")"
                : "none closed"));
    b.append(
        String.format(
            Locale.ROOT,
            "  %-" + w + "s %s%n",
            "consumer peaks",
            consumers.length() > 0 ? consumers : "none"));
  }

  private static void row(
      StringBuilder b,
      String fmt,
      String label,
      String part,
      Map<String, Long> peak,
      Map<String, Long> end,
      Map<String, Long> hwm) {
    b.append(
        String.format(
            Locale.ROOT, fmt, label, figure(peak.get(part)), figure(end.get(part)),
            figure(hwm.get(part))));
  }

  /** Bytes in MiB (negative ones too); "–" for none. */
  private static String figure(Long v) {
    return v == null ? "–" : SortDemo.mib(v);
  }

  private static void putAll(SortDemo.Result r, String prefix, Map<String, Long> figures) {
    if (figures == null) {
      return;
    }
    for (Map.Entry<String, Long> e : figures.entrySet()) {
      r.put(prefix + e.getKey(), e.getValue());
    }
  }
}
