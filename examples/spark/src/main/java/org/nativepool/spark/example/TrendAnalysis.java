package org.nativepool.spark.example;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The soak's verdict on a memory ledger series ({@code ledger.csv} of {@link LedgerSampler}): does
 * any part keep growing after the warm-up?
 *
 * <p>The readings after the warm-up are cut into windows of equal length (a last, incomplete
 * window is dropped); each part's value in a window is its least reading there, its floor, which
 * transient memory (a task's working set, garbage not yet collected) does not move. A part
 * <b>fails</b> when its floor rises from one window to the next in more than half of the window
 * transitions; a rise is a step up by more than the tolerance, so that a floor which wanders by a
 * few pages up and down is flat. For each part the analysis also gives the floor of the first and
 * the last window and the total rise between them.
 *
 * <p>Every column but the time is judged: the RSS, each resident part, {@code other}, {@code
 * unexplained} and the accounting parts ({@code acct:…}).
 */
final class TrendAnalysis {
  /** One part's trend. */
  record Part(String name, long[] floors, int rises, boolean failed) {
    /** The first window's floor. */
    long first() {
      return floors[0];
    }

    /** The last window's floor. */
    long last() {
      return floors[floors.length - 1];
    }

    /** {@link #last()} less {@link #first()}. */
    long rise() {
      return last() - first();
    }
  }

  /** The analysis of a series: its windows, each part's trend, and whether it passed. */
  record Result(long warmupMs, long windowMs, long toleranceBytes, int windows, List<Part> parts, String problem) {
    /** Whether the series is long enough and no part failed. */
    boolean passed() {
      return problem == null && parts.stream().noneMatch(Part::failed);
    }

    /** The names of the parts that failed. */
    List<String> failed() {
      return parts.stream().filter(Part::failed).map(Part::name).toList();
    }

    /** The part named {@code name}, or null. */
    Part part(String name) {
      return parts.stream().filter(p -> p.name().equals(name)).findFirst().orElse(null);
    }

    /** The trend table in Markdown, preceded by a line saying how it was cut. */
    String table() {
      StringBuilder b = new StringBuilder();
      b.append(
          String.format(
              Locale.ROOT,
              "%d windows of %s after a warm-up of %s; a rise is a window floor above the one before"
                  + " by more than %s; a part fails when it rises in more than half of the %d"
                  + " transitions%n%n",
              windows,
              duration(windowMs),
              duration(warmupMs),
              SortDemo.size(toleranceBytes),
              Math.max(0, windows - 1)));
      if (problem != null) {
        b.append("**").append(problem).append("**\n");
        return b.toString();
      }
      b.append("| part | floor per window (MiB) | first → last | rise | rising | verdict |\n");
      b.append("|---|---|---|---|---|---|\n");
      for (Part p : parts) {
        StringBuilder f = new StringBuilder();
        for (long v : p.floors()) {
          if (f.length() > 0) {
            f.append(' ');
          }
          f.append(mib(v));
        }
        b.append(
            String.format(
                Locale.ROOT,
                "| %s | %s | %s → %s | %s | %d/%d | %s |%n",
                p.name(),
                f,
                mib(p.first()),
                mib(p.last()),
                (p.rise() > 0 ? "+" : "") + mib(p.rise()),
                p.rises(),
                windows - 1,
                p.failed() ? "**FAIL**" : "flat"));
      }
      return b.toString();
    }
  }

  private TrendAnalysis() {}

  /**
   * Judges a series: {@code columns} names each row's values (the first is {@code t_ms}, ms since
   * the start), {@code rows} are in time order.
   */
  static Result analyze(
      List<String> columns, List<long[]> rows, long warmupMs, long windowMs, long toleranceBytes) {
    if (windowMs <= 0 || warmupMs < 0 || toleranceBytes < 0) {
      throw new IllegalArgumentException("soak: window > 0, warm-up and tolerance >= 0");
    }
    long end = rows.isEmpty() ? 0 : rows.get(rows.size() - 1)[0];
    int windows = (int) Math.max(0, (end - warmupMs) / windowMs);
    if (windows < 3) {
      return new Result(
          warmupMs, windowMs, toleranceBytes, windows, List.of(),
          "too short to judge: " + windows + " whole windows of " + duration(windowMs)
              + " after the warm-up, 3 needed (" + duration(end) + " of readings)");
    }
    int cols = columns.size();
    long[][] floors = new long[cols][windows];
    boolean[][] any = new boolean[cols][windows];
    for (long[] r : rows) {
      long t = r[0] - warmupMs;
      if (t < 0) {
        continue;
      }
      int w = (int) (t / windowMs);
      if (w >= windows) {
        continue;
      }
      for (int c = 1; c < cols; c++) {
        if (!any[c][w] || r[c] < floors[c][w]) {
          floors[c][w] = r[c];
          any[c][w] = true;
        }
      }
    }
    for (int w = 0; w < windows; w++) {
      if (!any[1][w]) {
        return new Result(
            warmupMs, windowMs, toleranceBytes, windows, List.of(),
            "window " + (w + 1) + " has no reading");
      }
    }
    List<Part> parts = new ArrayList<>();
    for (int c = 1; c < cols; c++) {
      long[] f = floors[c];
      int rises = 0;
      for (int w = 1; w < windows; w++) {
        if (f[w] - f[w - 1] > toleranceBytes) {
          rises++;
        }
      }
      parts.add(new Part(columns.get(c), f, rises, 2 * rises > windows - 1));
    }
    return new Result(warmupMs, windowMs, toleranceBytes, windows, parts, null);
  }

  /** Reads a ledger CSV (header, then numbers) and judges it. */
  static Result analyzeCsv(Path csv, long warmupMs, long windowMs, long toleranceBytes)
      throws IOException {
    List<String> lines = Files.readAllLines(csv, StandardCharsets.UTF_8);
    if (lines.isEmpty()) {
      throw new IOException(csv + ": empty");
    }
    List<String> columns = Arrays.asList(lines.get(0).split(","));
    if (!columns.get(0).equals("t_ms")) {
      throw new IOException(csv + ": the first column is " + columns.get(0) + ", not t_ms");
    }
    List<long[]> rows = new ArrayList<>();
    for (int i = 1; i < lines.size(); i++) {
      String line = lines.get(i);
      if (line.isBlank()) {
        continue;
      }
      String[] f = line.split(",");
      if (f.length != columns.size()) {
        throw new IOException(csv + ":" + (i + 1) + ": " + f.length + " fields, expected " + columns.size());
      }
      long[] r = new long[f.length];
      for (int c = 0; c < f.length; c++) {
        r[c] = Long.parseLong(f[c].trim());
      }
      rows.add(r);
    }
    return analyze(columns, rows, warmupMs, windowMs, toleranceBytes);
  }

  /** Bytes in MiB with one decimal. */
  static String mib(long bytes) {
    return String.format(Locale.ROOT, "%.1f", bytes / 1048576.0);
  }

  /** A duration as the soak prints it: 30 s, 5 min, 1 min 30 s. */
  static String duration(long ms) {
    long s = ms / 1000;
    if (s < 60 || ms % 1000 != 0) {
      return ms % 1000 == 0 ? s + " s" : String.format(Locale.ROOT, "%.1f s", ms / 1000.0);
    }
    return s % 60 == 0 ? (s / 60) + " min" : (s / 60) + " min " + (s % 60) + " s";
  }
}
