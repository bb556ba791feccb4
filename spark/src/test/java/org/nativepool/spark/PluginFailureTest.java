package org.nativepool.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nativepool.spark.config.SparkLine;
import org.nativepool.spark.testing.LocalSpark;

/**
 * A library that does not load fails the application once, with one message naming the path and
 * the reason: on the driver at SparkContext start, or, with the driver check off (as for a path
 * only the executors see), in every task that asks for a native pool, while the executor plugin
 * itself starts. Each case in a fresh local[1] JVM ({@link PluginFailureProbe}), since the library
 * loads once per JVM. {@code make test-cluster} runs the same cases on a standalone cluster.
 */
@Tag("spark") // starts a SparkContext: the second group of tests
class PluginFailureTest {
  private static final String BAD = new File("/nonexistent/libnativepool.so").getAbsolutePath();
  private static final String MESSAGE =
      "nativepool: native library not loaded from "
          + BAD
          + " (spark.nativepool.library): UnsatisfiedLinkError: Can't load library: "
          + BAD;

  private static String probe(String library, String driverCheck, String... settings)
      throws Exception {
    return probeWith(null, library, driverCheck, settings);
  }

  private static String probeWith(
      Path first, String library, String driverCheck, String... settings) throws Exception {
    return probeIn(null, first, library, driverCheck, settings);
  }

  /**
   * Runs {@link PluginFailureProbe} in a fresh JVM, with {@code first} (a directory, or null)
   * ahead of this JVM's classpath, in the cgroup-v1 memory cgroup {@code cgroup} (or none) from
   * its first instruction.
   */
  private static String probeIn(
      Path cgroup, Path first, String library, String driverCheck, String... settings)
      throws Exception {
    List<String> cmd = new ArrayList<>();
    if (cgroup != null) {
      cmd.addAll(
          List.of("sh", "-c", "echo $$ > \"$0/cgroup.procs\" && exec \"$@\"", cgroup.toString()));
    }
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (a.startsWith("--add-opens")
          || a.startsWith("--add-modules")
          || a.startsWith("--enable-native-access")
          || a.startsWith("-XX:+IgnoreUnrecognizedVMOptions")
          || a.startsWith("-Djdk.reflect")
          || a.startsWith("-Dio.netty")) {
        cmd.add(a);
      }
    }
    cmd.add("-Xmx512m");
    cmd.add("-cp");
    String cp = System.getProperty("java.class.path");
    cmd.add(first == null ? cp : first + File.pathSeparator + cp);
    cmd.add(PluginFailureProbe.class.getName());
    cmd.add(library);
    cmd.add(driverCheck);
    cmd.addAll(List.of(settings));
    Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "probe JVM finished");
    assertEquals(0, p.exitValue(), "probe JVM exit status; stdout: " + out);
    for (String l : out.split("\n")) {
      if (l.startsWith("ok") || l.startsWith("context-failed ") || l.startsWith("task-failed ")) {
        return l;
      }
    }
    throw new AssertionError("no result line in the probe's output: " + out);
  }

  @Test
  void theDriverCheckFailsTheSparkContextWithTheMessage() throws Exception {
    assertEquals("context-failed " + MESSAGE, probe(BAD, "true"));
  }

  @Test
  void withoutTheDriverCheckTheExecutorStartsAndEveryTaskFailsWithTheMessage() throws Exception {
    assertEquals("task-failed " + MESSAGE, probe(BAD, "false"));
  }

  /**
   * A jar built for another Spark line fails the SparkContext at its start, naming both lines and
   * the artifact to deploy, never a task later with {@code NoClassDefFoundError}: here this build's
   * classes with the stamp of another line ahead of its own on the classpath, which is what such a
   * jar carries ({@code make test-cluster} deploys real jars of other lines).
   */
  @Test
  void aJarBuiltForAnotherSparkLineFailsTheSparkContextNamingBothLines(@TempDir Path dir)
      throws Exception {
    SparkLine running = SparkLine.current();
    boolean on35 = running.sparkVersion().startsWith("3.5.");
    Properties stamp = new Properties();
    try (InputStream in = getClass().getClassLoader().getResourceAsStream(SparkLine.STAMP)) {
      stamp.load(in);
    }
    stamp.setProperty("spark.line", on35 ? "4.1" : "3.5");
    stamp.setProperty("spark.version", on35 ? "4.1.3" : "3.5.9");
    stamp.setProperty("scala.binary.version", on35 ? "2.13" : "2.12");
    stamp.setProperty("arrow.version", on35 ? "18.3.0" : "12.0.1");
    Path file = dir.resolve(SparkLine.STAMP);
    Files.createDirectories(file.getParent());
    try (OutputStream out = Files.newOutputStream(file)) {
      stamp.store(out, "another line's stamp");
    }
    String other = on35 ? "nativepool-spark-spark4.1_2.13" : "nativepool-spark-spark3.5_2.12";
    String result = probeWith(dir, LocalSpark.library(), "true");
    String prefix = "context-failed nativepool: this plugin jar, " + other + ", is built for";
    assertTrue(result.startsWith(prefix), result);
    assertTrue(
        result.contains("cannot run on Spark " + running.sparkVersion() + " with Scala "), result);
    assertTrue(result.contains(": deploy " + running.artifact() + " instead"), result);
  }

  /**
   * What only an executor knows fails that executor's start: a pod guard reserve above the limit
   * of the executor's memory cgroup, which the driver cannot read, fails it loudly with the key,
   * the value and the limit, here the SparkContext, whose local executor starts inside it. Needs
   * a writable cgroup-v1 memory controller (root), else skipped.
   */
  @Test
  void aGuardReserveAboveTheExecutorsCgroupLimitFailsItsStart() throws Exception {
    Path memory = Paths.get("/sys/fs/cgroup/memory");
    assumeTrue(
        Files.isWritable(memory) && Files.exists(memory.resolve("cgroup.procs")),
        "no writable cgroup-v1 memory controller");
    Path cg = memory.resolve("nativepool-plugin-failure-" + ProcessHandle.current().pid());
    Files.createDirectory(cg);
    try {
      Files.writeString(cg.resolve("memory.limit_in_bytes"), (1536L << 20) + "\n");
      String result =
          probeIn(
              cg, null, LocalSpark.library(), "true", "spark.nativepool.guard.reserve=2g");
      assertTrue(
          result.startsWith(
              "context-failed nativepool: spark.nativepool.guard.reserve = 2.0 GiB: not below this"
                  + " executor's memory limit, 1.5 GiB (its memory cgroup's, read at its start)"),
          result);
    } finally {
      for (int i = 0; i < 50 && !Files.readString(cg.resolve("cgroup.procs")).isBlank(); i++) {
        Thread.sleep(100);
      }
      Files.delete(cg);
    }
  }

  /**
   * {@code spark.nativepool.autoOverhead} takes effect where Spark loads plugins before it builds
   * the default ResourceProfile (4.1 on: {@code DriverSideTest} checks the profile), and is refused
   * at startup elsewhere, naming the setting to use instead and its value; never ignored.
   */
  @Test
  void autoOverheadTakesEffectOrIsRefusedAtStartup() throws Exception {
    String result = probe(LocalSpark.library(), "true", "spark.nativepool.autoOverhead=true");
    SparkLine running = SparkLine.current();
    if (running.autoOverheadTakesEffect()) {
      assertEquals("ok", result);
      return;
    }
    // local[1], 1g, 16m off-heap: max(0.1 × 1024m, 384m) + 16m + 10% of 16m (rounded up) = 402m
    assertTrue(
        result.startsWith(
            "context-failed nativepool: spark.nativepool.autoOverhead=true cannot take effect on"
                + " Spark "
                + running.sparkVersion()
                + ": "),
        result);
    assertTrue(result.contains("Set spark.executor.memoryOverhead=402m instead"), result);
  }
}
