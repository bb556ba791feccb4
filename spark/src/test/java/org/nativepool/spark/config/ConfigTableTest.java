package org.nativepool.spark.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/**
 * The registry is the one declaration of every key: the configuration table of
 * docs/CONFIGURATION.md is rendered from it, and no code names a {@code spark.nativepool.*} key the
 * registry does not declare. No native library needed. To rewrite the table after changing a key,
 * run {@code make config-table} (this test with {@code -Dnativepool.updateReadme=true}).
 */
class ConfigTableTest {
  /** The generated table sits between these two lines of docs/CONFIGURATION.md. */
  static final String BEGIN = "<!-- spark.nativepool.* keys: rendered from NativePoolConf -->";

  static final String END = "<!-- end of the rendered table -->";

  private static final Path README = Path.of("..", "docs", "CONFIGURATION.md");

  private static final Pattern KEY_LITERAL = Pattern.compile("\"(spark\\.nativepool\\.[A-Za-z0-9.]+)\"");

  @Test
  void theReadmeTableIsRenderedFromTheRegistry() throws IOException {
    String readme = Files.readString(README, StandardCharsets.UTF_8);
    int b = readme.indexOf(BEGIN);
    int e = readme.indexOf(END);
    assertTrue(b >= 0 && e > b, "docs/CONFIGURATION.md has no rendered configuration table between the markers");
    String listed = readme.substring(b + BEGIN.length() + 1, e);
    String rendered = NativePoolConf.markdownTable();
    if (!listed.equals(rendered)) {
      if (Boolean.getBoolean("nativepool.updateReadme")) {
        Files.writeString(
            README,
            readme.substring(0, b + BEGIN.length() + 1) + rendered + readme.substring(e),
            StandardCharsets.UTF_8);
        return;
      }
      fail(
          "docs/CONFIGURATION.md's configuration table differs from NativePoolConf: run make"
              + " config-table."
              + " Expected:\n"
              + rendered);
    }
  }

  @Test
  void everyKeyIsDeclaredOnceWithADefaultAUnitAndAMeaning() {
    Set<String> seen = new HashSet<>();
    for (ConfigKey<?> k : NativePoolConf.all()) {
      assertTrue(k.key().startsWith("spark.nativepool."), k::key);
      assertTrue(seen.add(k.key()), "declared twice: " + k);
      assertFalse(k.doc().isBlank(), k::key);
      assertFalse(k.unit().isBlank(), k::key);
      assertFalse(k.defaultDoc().isBlank(), k::key);
      if (k.deprecatedKey() != null) {
        assertFalse(seen.contains(k.deprecatedKey()), "a key is its own predecessor: " + k);
      }
    }
  }

  /** Each key's default, as declared, parses: an unset key never fails a start. */
  @Test
  void everyDefaultParses() {
    SparkConf empty = new SparkConf(false);
    for (ConfigKey<?> k : NativePoolConf.all()) {
      k.read(empty);
    }
  }

  /**
   * Every {@code spark.nativepool.*} key the plugin's code names is declared in the registry (or
   * listed as removed, to refuse it): no key can be read past the registry and its table.
   */
  @Test
  void theCodeNamesNoKeyTheRegistryDoesNotDeclare() throws IOException {
    Set<String> declared =
        NativePoolConf.all().stream().map(ConfigKey::key).collect(Collectors.toSet());
    NativePoolConf.all().stream()
        .map(ConfigKey::deprecatedKey)
        .filter(java.util.Objects::nonNull)
        .forEach(declared::add);
    TreeSet<String> stray = new TreeSet<>();
    try (Stream<Path> files = Files.walk(Path.of("src", "main", "java"))) {
      for (Path p : files.filter(f -> f.toString().endsWith(".java")).collect(Collectors.toList())) {
        Matcher m = KEY_LITERAL.matcher(Files.readString(p, StandardCharsets.UTF_8));
        while (m.find()) {
          if (!declared.contains(m.group(1))) {
            stray.add(m.group(1) + " in " + p);
          }
        }
      }
    }
    assertEquals(List.of(), List.copyOf(stray));
  }
}
