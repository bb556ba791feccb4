package org.nativepool.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The loader in fresh JVMs (it loads once per JVM, so each scenario needs its own): where the
 * library comes from, and failures that keep their cause.
 */
class NativeLoaderTest {

  private static List<String> probe(List<String> jvmArgs, String... calls)
      throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.addAll(jvmArgs);
    cmd.add(LoaderProbe.class.getName());
    cmd.addAll(Arrays.asList(calls));
    Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "probe JVM finished");
    assertEquals(0, p.exitValue(), "probe JVM exit status; stdout: " + out);
    List<String> lines = new ArrayList<>();
    for (String l : out.split("\n")) {
      if (l.startsWith("ok ") || l.startsWith("fail ")) {
        lines.add(l);
      }
    }
    return lines;
  }

  @Test
  void missingLibraryFailsWithIllegalStateCausedByUnsatisfiedLinkErrorEveryTime() throws Exception {
    String bogus = new File("/nonexistent/libnativepool.so").getAbsolutePath();
    List<String> lines = probe(List.of("-Dnativepool.library=" + bogus), "-", "-");
    String expected =
        "fail java.lang.IllegalStateException|nativepool: native library not loaded from "
            + bogus
            + " (system property nativepool.library)|java.lang.UnsatisfiedLinkError|"
            + "Can't load library: "
            + bogus;
    assertEquals(List.of(expected, expected), lines);
  }

  @Test
  void explicitPathWinsOverJavaLibraryPathAndALaterDifferentPathIsIgnored() throws Exception {
    String lib = System.getProperty("nativepool.test.library");
    File real = new File(lib).getCanonicalFile();
    List<String> lines =
        probe(
            List.of("-Djava.library.path=/nonexistent"),
            real.getPath(),
            "/elsewhere/lib.so",
            "-");
    String ok = "ok " + real.getPath() + " (spark.nativepool.library)";
    assertEquals(List.of(ok, ok, ok), lines);
  }

  @Test
  void javaLibraryPathIsUsedWithoutAnExplicitPath() throws Exception {
    String dir = new File(System.getProperty("nativepool.test.library")).getParent();
    List<String> lines = probe(List.of("-Djava.library.path=" + dir), "-");
    assertEquals(List.of("ok libnativepool.so on java.library.path=" + dir), lines);
  }
}
