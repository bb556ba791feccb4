package org.nativepool.spark.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** {@code run.sh}, the demo's script, as a newcomer first calls it. */
class RunScriptTest {
  /**
   * {@code run.sh --help} prints the script's words and every option of SortDemo, builds nothing
   * (a build takes seconds to minutes), and exits 0: asking for help is no error.
   */
  @Test
  void helpPrintsEveryOptionWithoutBuildingAndExitsZero() throws Exception {
    Path script = Path.of("run.sh").toAbsolutePath();
    long t0 = System.nanoTime();
    Process p =
        new ProcessBuilder("bash", script.toString(), "--help").redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(30, TimeUnit.SECONDS), "run.sh --help finished");
    assertEquals(0, p.exitValue(), out);
    assertTrue((System.nanoTime() - t0) / 1_000_000 < 10_000, "no build: " + out);
    assertFalse(out.contains("run.sh: building"), "build.sh did not run: " + out);
    assertTrue(out.contains("DEMO_HEAP"), "the environment it reads: " + out);
    Matcher m = Pattern.compile("(?m)^  (--[a-z-]+)").matcher(DemoConfig.USAGE);
    int options = 0;
    while (m.find()) {
      options++;
      assertTrue(out.contains("  " + m.group(1) + " "), m.group(1) + " in " + out);
    }
    assertTrue(options >= 15, "SortDemo's options: " + DemoConfig.USAGE);
  }
}
