package org.nativepool.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The plugin's packages are layers: each depends only on layers below it, so none can form a cycle.
 * Read from the main sources' code (imports and fully qualified names; comments do not count),
 * those of every Spark line (src/main/java and each src/main/webui-*), no native library needed:
 *
 * <pre>
 *   config  ←  jni, events  ←  memory  ←  arrow  ←  ledger  ←  ui  ←  executor, driver  ←  (root)
 * </pre>
 *
 * <p>{@code jni} and {@code events} sit side by side and do not depend on each other; nor do {@code
 * executor} and {@code driver}. Only the root ({@code NativePoolPlugin}, the class users name in
 * {@code spark.plugins}) depends on {@code executor} and {@code driver}, and nothing depends on the
 * root. {@code ui} (the Native Memory page, live and in the History Server) sits under the plugin
 * sides, so that the driver side can serve it.
 */
class LayersTest {
  private static final String BASE = "org.nativepool.spark";

  /** Each package's layer: a package may depend only on packages of a lower layer. */
  private static final Map<String, Integer> LAYER =
      Map.of(
          "config", 0,
          "jni", 1,
          "events", 1,
          "memory", 2,
          "arrow", 3,
          "ledger", 4,
          "ui", 5,
          "executor", 6,
          "driver", 6,
          "", 7);

  private static final Pattern REF =
      Pattern.compile("\\borg\\.nativepool\\.spark(?:\\.(\\w+))?\\.[A-Z]");

  /** Package → the project packages its code names. */
  static Map<String, Set<String>> dependencies() throws IOException {
    Map<String, Set<String>> deps = new TreeMap<>();
    for (Path dir : sourceDirectories()) {
      Path root = dir.resolve(Path.of("org", "nativepool", "spark"));
      List<Path> files;
      try (Stream<Path> s = Files.walk(root)) {
        files = s.filter(p -> p.toString().endsWith(".java")).collect(Collectors.toList());
      }
      for (Path f : files) {
        add(deps, root, f);
      }
    }
    return deps;
  }

  /**
   * The main source directories: src/main/java, and the per-line ones (src/main/webui-*, of which a
   * build compiles the one of its Spark line).
   */
  static List<Path> sourceDirectories() throws IOException {
    List<Path> dirs = new ArrayList<>();
    dirs.add(Path.of("src", "main", "java"));
    try (Stream<Path> s = Files.list(Path.of("src", "main"))) {
      s.filter(p -> p.getFileName().toString().startsWith("webui-")).sorted().forEach(dirs::add);
    }
    return dirs;
  }

  /** Adds the project packages the source file {@code f} names to its package's. */
  private static void add(Map<String, Set<String>> deps, Path root, Path f) throws IOException {
    String rel = root.relativize(f.getParent()).toString().replace('/', '.');
    Set<String> mine = deps.computeIfAbsent(rel, k -> new TreeSet<>());
    Matcher m = REF.matcher(code(Files.readString(f, StandardCharsets.UTF_8)));
    while (m.find()) {
      String other = m.group(1) == null ? "" : m.group(1);
      if (!other.equals(rel)) {
        mine.add(other);
      }
    }
  }

  /** The source without comments, string and character literals, and its package line. */
  static String code(String src) {
    StringBuilder out = new StringBuilder(src.length());
    int i = 0;
    int n = src.length();
    while (i < n) {
      char c = src.charAt(i);
      if (c == '/' && i + 1 < n && src.charAt(i + 1) == '/') {
        while (i < n && src.charAt(i) != '\n') {
          i++;
        }
      } else if (c == '/' && i + 1 < n && src.charAt(i + 1) == '*') {
        int end = src.indexOf("*/", i + 2);
        i = end < 0 ? n : end + 2;
        out.append(' ');
      } else if (c == '"' || c == '\'') {
        if (c == '"' && src.startsWith("\"\"\"", i)) {
          int end = src.indexOf("\"\"\"", i + 3);
          i = end < 0 ? n : end + 3;
        } else {
          i++;
          while (i < n && src.charAt(i) != c) {
            i += src.charAt(i) == '\\' ? 2 : 1;
          }
          i++;
        }
        out.append("\"\"");
      } else {
        out.append(c);
        i++;
      }
    }
    return out.toString().replaceFirst("package [\\w.]+;", "");
  }

  @Test
  void everyPackageIsALayer() throws IOException {
    assertEquals(LAYER.keySet(), dependencies().keySet(), "packages of " + BASE);
  }

  @Test
  void eachLayerDependsOnlyOnLayersBelowIt() throws IOException {
    List<String> up = new ArrayList<>();
    for (Map.Entry<String, Set<String>> e : dependencies().entrySet()) {
      for (String other : e.getValue()) {
        if (LAYER.get(other) >= LAYER.get(e.getKey())) {
          up.add(name(e.getKey()) + " -> " + name(other));
        }
      }
    }
    assertEquals(List.of(), up, "dependencies that do not point down the layers");
  }

  @Test
  void onlyTheRootDependsOnTheTwoPluginSidesAndNothingOnTheRoot() throws IOException {
    for (Map.Entry<String, Set<String>> e : dependencies().entrySet()) {
      if (e.getKey().isEmpty()) {
        assertEquals(Set.of("executor", "driver"), e.getValue(), "the root");
        continue;
      }
      assertTrue(!e.getValue().contains(""), name(e.getKey()) + " depends on the root");
      assertTrue(
          !e.getValue().contains("executor") && !e.getValue().contains("driver"),
          name(e.getKey()) + " depends on a plugin side: " + e.getValue());
    }
  }

  private static String name(String pkg) {
    return pkg.isEmpty() ? BASE : BASE + "." + pkg;
  }
}
