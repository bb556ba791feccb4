package org.nativepool.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

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

  private static String probe(String library, String driverCheck) throws Exception {
    List<String> cmd = new ArrayList<>();
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
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(PluginFailureProbe.class.getName());
    cmd.add(library);
    cmd.add(driverCheck);
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
}
