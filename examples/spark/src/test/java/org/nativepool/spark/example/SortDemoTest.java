package org.nativepool.spark.example;


import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs {@link SortDemo} end to end on 200,000 rows with a budget small enough that memory is taken
 * back in both directions, and checks its report: correct output, Spark-requested native spills
 * and Spark spills both happened, {@code allocated ≤ reserved} held at every check, no leak, and
 * the executor memory ledger's section and {@code ledger.csv} add up.
 *
 * <p>The demo runs in a child JVM because it needs {@code libnativesort.so} (the Go sort plus every
 * nativepool native, one Go runtime), while the rest of this suite loads {@code libnativepool.so}
 * into the test JVM, and a JVM can hold only one of them. The library is built from the current
 * sources with {@code go build} (incremental: cheap when nothing changed) unless
 * {@code -Dnativesort.library} names one. The child gets this JVM's module options (and
 * {@code -Xcheck:jni} under {@code -Pcheckjni}).
 */
class SortDemoTest {

  private static final long TIMEOUT_S = 180;

  @Test
  void smallDemoIsCorrectSpillsBothWaysAndKeepsAllocatedWithinReserved(@TempDir Path out)
      throws Exception {
    Path lib = library(out);
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (a.startsWith("--add-opens")
          || a.startsWith("--add-modules")
          || a.startsWith("--enable-native-access")
          || a.startsWith("-XX:+IgnoreUnrecognizedVMOptions")
          || a.startsWith("-Djdk.reflect")
          || a.startsWith("-Dio.netty")
          || a.equals("-Xcheck:jni")) {
        cmd.add(a);
      }
    }
    // NMT summary, as run.sh runs the demo: the ledger then has the JVM's native parts.
    cmd.addAll(List.of("-Xms512m", "-Xmx512m", "-ea", "-XX:NativeMemoryTracking=summary"));
    cmd.add("-cp");
    cmd.add(System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")));
    cmd.add(SortDemo.class.getName());
    cmd.addAll(
        List.of(
            "--rows", "200000", "--warmup", "0", "--batch", "4096",
            "--budget", "8m", "--pool-size", "2m", "--chunk", "256k", "--groups", "20000",
            "--library", lib.toString(), "--out", out.toString()));
    Path log = out.resolve("demo.log");
    Process p =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .start();
    if (!p.waitFor(TIMEOUT_S, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("SortDemo did not finish in " + TIMEOUT_S + " s:\n" + tail(log));
    }
    assertEquals(0, p.exitValue(), () -> "SortDemo failed:\n" + tail(log));

    Properties r = new Properties();
    try (InputStream in = Files.newInputStream(out.resolve("report.properties"))) {
      r.load(in);
    }
    String report = r.getProperty("text");
    assertEquals("true", r.getProperty("correct"), report);
    assertEquals(200_000, num(r, "rowsIn"), report);
    assertEquals(200_000, num(r, "rowsOut"), report);
    assertTrue(num(r, "nativeRequestedSpills") > 0, "Spark made the native sort spill\n" + report);
    assertTrue(num(r, "sparkReclaimCalls") > 0, report);
    assertTrue(num(r, "sparkMemoryBytesSpilled") > 0, "the aggregation spilled\n" + report);
    // The Go sort reports its run files (jni.ReportSpill): they are in the sort tasks'
    // diskBytesSpilled, beside the aggregation's own spill files.
    assertTrue(num(r, "nativeSpilledBytes") > 0, report);
    assertTrue(
        num(r, "sparkDiskBytesSpilled") >= num(r, "nativeSpilledBytes"),
        "native run files in the tasks' diskBytesSpilled\n" + report);
    assertTrue(num(r, "checks") > 100, report);
    assertEquals(0, num(r, "violations"), report);
    assertEquals(0, num(r, "leaks"), report);
    assertTrue(num(r, "peakAllocated") <= num(r, "peakSorterReserved"), report);
    assertTrue(num(r, "peakSparkOffHeap") <= 8L << 20, "Spark's view stays within the budget");
    assertTrue(Files.size(out.resolve("samples.csv")) > 0);
    // The true peak is the kernel's: never below the baseline or what the sampler saw.
    assertTrue(num(r, "peakRssHwm") >= num(r, "baselineRss"), report);
    assertTrue(num(r, "peakRssHwm") >= num(r, "peakRss"), "VmHWM ≥ every sample\n" + report);
    assertTrue(num(r, "goRuntimePeak") > 0, report);
    assertTrue(num(r, "goRuntimeMapped") >= num(r, "goRuntimePeak"), report);
    assertEquals(
        Boolean.parseBoolean(r.getProperty("exceedsReserved")), report.contains("EXCEEDS"), report);
    assertEquals(
        num(r, "overReservedPlusBaseline") > num(r, "noise"),
        Boolean.parseBoolean(r.getProperty("exceedsReserved")),
        "an excess alarms only beyond the noise the report measured\n" + report);
    assertTrue(report.indexOf('\u001b') < 0, "no colour codes in the report file");
    checkLedger(r, out.resolve("ledger.csv"));
  }

  /**
   * The report's Ledger section and ledger.csv: the figures are there, at the RSS peak and at the
   * end the resident columns plus the unexplained remainder sum to RSS exactly (by construction),
   * and so does every row of the CSV, whose header is t_ms, rss, the resident columns, unexplained
   * and the accounting columns; NMT's parts are columns (the child runs with NMT summary).
   */
  private static void checkLedger(Properties r, Path csv) throws IOException {
    String report = r.getProperty("text");
    assertTrue(report.contains("Ledger: the executor memory ledger (ExecutorLedger.current())"), report);
    assertEquals("executor", r.getProperty("ledger.source"), report);
    assertEquals("true", r.getProperty("ledger.nmt"), report);
    List<String> columns = List.of(r.getProperty("ledger.columns").split(","));
    assertTrue(columns.contains("jvm.heap.resident"), report);
    assertTrue(columns.contains("jvm.threads"), report);
    assertTrue(columns.contains("go.heapInUse"), report);
    assertEquals(LedgerSampler.OTHER, columns.get(columns.size() - 1), report);
    List<String> accounting = List.of(r.getProperty("ledger.accounting").split(","));
    assertTrue(accounting.contains("native.reserved"), report);
    for (String at : List.of("peak", "end")) {
      long sum = num(r, "ledger." + at + ".unexplained");
      for (String c : columns) {
        sum += num(r, "ledger." + at + "." + c);
      }
      assertEquals(num(r, "ledger." + at + ".rss"), sum, at + ": parts + unexplained = RSS\n" + report);
      assertTrue(num(r, "ledger.hwm.rss") >= num(r, "ledger." + at + ".rss"), report);
    }
    assertTrue(num(r, "ledger.hwm.jvm.threads") > 0, report);
    assertTrue(num(r, "ledger.hwm.native.reserved") > 0, "the native pools reserved\n" + report);
    assertTrue(num(r, "ledger.taskPoolPeak") > 0, report);
    assertTrue(r.stringPropertyNames().stream().anyMatch(k -> k.startsWith("ledger.consumerPeak.")), report);

    List<String> lines = Files.readAllLines(csv);
    List<String> header = new ArrayList<>(List.of("t_ms", "rss"));
    header.addAll(columns);
    header.add("unexplained");
    for (String a : accounting) {
      header.add(LedgerSampler.ACCOUNTING_PREFIX + a);
    }
    assertEquals(String.join(",", header), lines.get(0));
    assertTrue(lines.size() >= 3, "ledger.csv has at least 2 rows: " + lines.size());
    assertEquals(num(r, "ledger.samples"), lines.size() - 1);
    for (String line : lines.subList(1, lines.size())) {
      String[] f = line.split(",");
      assertEquals(header.size(), f.length, line);
      long sum = 0;
      for (int i = 2; i < 2 + columns.size() + 1; i++) {
        sum += Long.parseLong(f[i]);
      }
      assertEquals(Long.parseLong(f[1]), sum, "parts + unexplained = RSS in " + line);
    }
  }

  private static long num(Properties r, String key) {
    return Long.parseLong(r.getProperty(key));
  }

  /** The library under test: -Dnativesort.library, else built from the sources into dir. */
  private static Path library(Path dir) throws IOException, InterruptedException {
    String given = System.getProperty("nativesort.library");
    if (given != null && !given.isEmpty()) {
      return Path.of(given);
    }
    Path root = Path.of(System.getProperty("user.dir")).resolve("../..").normalize();
    Path lib = dir.resolve("libnativesort.so");
    Path log = dir.resolve("go-build.log");
    String javaHome = Path.of(System.getProperty("java.home")).toString();
    ProcessBuilder pb =
        new ProcessBuilder(
                "go", "build", "-buildmode=c-shared", "-o", lib.toString(),
                "./examples/spark/native")
            .directory(root.toFile())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile());
    pb.environment().put("CGO_ENABLED", "1");
    pb.environment()
        .merge(
            "CGO_CFLAGS",
            "-I" + javaHome + "/include -I" + javaHome + "/include/linux",
            (a, b) -> a + " " + b);
    Process p = pb.start();
    if (!p.waitFor(TIMEOUT_S, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("go build did not finish in " + TIMEOUT_S + " s:\n" + tail(log));
    }
    assertEquals(0, p.exitValue(), () -> "go build of libnativesort.so failed:\n" + tail(log));
    return lib;
  }

  private static String tail(Path log) {
    try {
      List<String> lines = Files.readAllLines(log);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()));
    } catch (IOException e) {
      return "(no output: " + e + ")";
    }
  }
}
