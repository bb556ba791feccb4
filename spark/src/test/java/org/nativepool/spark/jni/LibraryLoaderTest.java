package org.nativepool.spark.jni;


import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nativepool.spark.testing.LocalSpark;

/**
 * The loader in fresh JVMs (it loads once per JVM, so each scenario needs its own): where the
 * library comes from, and failures that keep their cause.
 */
class LibraryLoaderTest {

  private static List<String> probe(List<String> jvmArgs, String... calls)
      throws IOException, InterruptedException {
    return probe(null, jvmArgs, calls);
  }

  /** As above, with {@code classpathFirst} (if not null) ahead of the test classpath. */
  private static List<String> probe(Path classpathFirst, List<String> jvmArgs, String... calls)
      throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-cp");
    String cp = System.getProperty("java.class.path");
    cmd.add(classpathFirst == null ? cp : classpathFirst + File.pathSeparator + cp);
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
    List<String> lines = probe(List.of(), bogus, "-");
    String expected =
        "fail java.lang.IllegalStateException|nativepool: native library not loaded from "
            + bogus
            + " (spark.nativepool.library): UnsatisfiedLinkError: Can't load library: "
            + bogus
            + "|java.lang.UnsatisfiedLinkError|"
            + "Can't load library: "
            + bogus;
    assertEquals(List.of(expected, expected), lines, "the failure is kept for every later call");
  }

  @Test
  void explicitPathWinsOverJavaLibraryPathAndALaterDifferentPathIsIgnored() throws Exception {
    File real = new File(LocalSpark.library()).getCanonicalFile();
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
  void withoutAnExplicitPathTheJarsCopyIsExtractedLoadedAndDeletedAtExit() throws Exception {
    List<String> lines = probe(List.of("-Djava.library.path=/nonexistent"), "-", "-");
    assertEquals(2, lines.size(), lines::toString);
    assertEquals(lines.get(0), lines.get(1), "one load, the same source twice");
    String line = lines.get(0);
    String suffix =
        " extracted from "
            + LibraryLoader.bundledLibrary()
            + " (the plugin jar's "
            + LibraryLoader.platform()
            + " library)";
    assertTrue(line.startsWith("ok ") && line.endsWith(suffix), line);
    File extracted = new File(line.substring(3, line.length() - suffix.length()));
    assertEquals("libnativepool.so", extracted.getName(), line);
    assertTrue(
        extracted.getParentFile().getName().startsWith("nativepool-"), "per-process directory");
    assertFalse(extracted.exists(), "deleted at exit: " + extracted);
    assertFalse(extracted.getParentFile().exists(), "deleted at exit: " + extracted.getParent());
  }

  @Test
  void aLibraryOfAnotherVersionIsRefusedBeforeInitWhateverItsSource(@TempDir Path stamp)
      throws Exception {
    Path props = stamp.resolve(LibraryLoader.RESOURCE_DIR).resolve("version.properties");
    Files.createDirectories(props.getParent());
    Files.writeString(props, "version=0.0.0-other\n");
    String reason =
        "version mismatch: the library is nativepool "
            + LibraryLoader.jarVersion()
            + ", the plugin jar is 0.0.0-other";
    List<String> bundled = probe(stamp, List.of(), "-");
    assertEquals(1, bundled.size(), bundled::toString);
    assertTrue(bundled.get(0).startsWith("fail java.lang.IllegalStateException|"), bundled::toString);
    assertTrue(
        bundled.get(0).endsWith(": " + reason + "|java.io.IOException|" + reason),
        bundled::toString);
    File real = new File(LocalSpark.library()).getCanonicalFile();
    List<String> explicit = probe(stamp, List.of(), real.getPath());
    assertEquals(
        List.of(
            "fail java.lang.IllegalStateException|nativepool: native library not loaded from "
                + real.getPath()
                + " (spark.nativepool.library): "
                + reason
                + "|java.io.IOException|"
                + reason),
        explicit);
  }
}
