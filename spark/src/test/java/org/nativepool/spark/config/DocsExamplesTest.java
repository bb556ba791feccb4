package org.nativepool.spark.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/**
 * The documentation's examples, held to the code: every {@code spark-submit} line of the README
 * and of docs/ passes the driver's settings check ({@link SettingsCheck}) with current keys only,
 * and the README's cluster line, which {@code make test-cluster} runs (spark/cluster-test/run.sh),
 * is the one docs/DEPLOYING.md gives. The README reads in five minutes: no machine's path, no
 * table row or paragraph line of a thousand characters. No native library needed.
 */
class DocsExamplesTest {
  /** The line before the README's cluster line; spark/cluster-test/run.sh finds it by it. */
  static final String SUBMIT_MARK = "<!-- spark-submit: run by spark/cluster-test/run.sh -->";

  private static final Path ROOT = Path.of("..");

  private static final Pattern FENCE = Pattern.compile("(?s)```[a-z]*\n(.*?)```");

  private static final Pattern CONF =
      Pattern.compile("--conf\\s+'?([A-Za-z0-9_.*]+)=([^'\\s]*)'?");

  private static String read(String file) throws IOException {
    return Files.readString(ROOT.resolve(file), StandardCharsets.UTF_8);
  }

  /** The code block that follows {@link #SUBMIT_MARK} in {@code text}. */
  private static String submitBlock(String text, String file) {
    int at = text.indexOf(SUBMIT_MARK);
    assertTrue(at >= 0, file + " has no " + SUBMIT_MARK);
    Matcher m = FENCE.matcher(text);
    assertTrue(m.find(at), file + ": no code block after the mark");
    return m.group(1);
  }

  @Test
  void theReadmesClusterLineIsDeployingsAndHasWhatTheClusterTestReplaces() throws IOException {
    String readme = submitBlock(read("README.md"), "README.md");
    assertEquals(readme, submitBlock(read("docs/DEPLOYING.md"), "docs/DEPLOYING.md"));
    assertTrue(readme.startsWith("spark-submit \\\n"), readme);
    assertTrue(readme.contains("--master spark://MASTER-HOST:7077 "), readme);
    assertTrue(readme.contains("--jars nativepool-spark-spark"), readme);
    assertTrue(readme.strip().endsWith("--class your.App your-app.jar"), readme);
  }

  /**
   * Each {@code spark-submit} example's settings are checked as the driver checks them: they
   * parse, none is unknown to the registry, none is a deprecated key.
   */
  @Test
  void everySparkSubmitExamplePassesTheDriversCheckWithCurrentKeys() throws IOException {
    List<String> files = new ArrayList<>(List.of("README.md", "spark/README.md"));
    try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md"))
          .forEach(p -> files.add("docs/" + p.getFileName()));
    }
    List<String> deprecated =
        NativePoolConf.all().stream()
            .map(ConfigKey::deprecatedKey)
            .filter(Objects::nonNull)
            .toList();
    int examples = 0;
    for (String file : files) {
      Matcher block = FENCE.matcher(read(file));
      while (block.find()) {
        if (!block.group(1).contains("spark-submit")) {
          continue;
        }
        examples++;
        SparkConf conf = new SparkConf(false);
        Matcher c = CONF.matcher(block.group(1));
        while (c.find()) {
          conf.set(c.group(1), c.group(2));
          assertFalse(deprecated.contains(c.group(1)), file + ": deprecated " + c.group(1));
        }
        SettingsCheck check = SettingsCheck.of(conf); // throws for a bad value
        for (String w : check.warnings()) {
          assertFalse(w.contains("is not a setting of the plugin"), file + ": " + w);
        }
      }
    }
    assertTrue(examples >= 3, "standalone, YARN and Kubernetes at least: " + examples);
  }

  /** The README names no path of the machine it was written on, and no line runs on and on. */
  @Test
  void theReadmeHasNoMachinesPathAndShortLinesOutsideCode() throws IOException {
    String readme = read("README.md");
    Matcher path =
        Pattern.compile("(?<![\\w.])/(work|home|root|Users|process_api|tmp)/").matcher(readme);
    assertFalse(path.find(), () -> "a machine's path: " + readme.substring(path.start()));
    boolean code = false;
    for (String line : readme.split("\n")) {
      if (line.startsWith("```")) {
        code = !code;
      } else if (!code) {
        assertTrue(line.length() <= 100, "a long line: " + line);
      }
    }
    assertTrue(readme.split("\n").length < 200, "a README that reads in five minutes");
  }
}
