package org.nativepool.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The README's configuration table cannot rot: it lists exactly the {@code spark.nativepool.*}
 * keys the plugin's settings classes declare ({@link NativePoolSettings} and {@link
 * ReportingSettings}: their String constants), each once, with a default, a unit and a meaning. No
 * native library needed.
 */
class NativeSettingsReadmeTest {
  private static final String PREFIX = "spark.nativepool.";
  private static final Pattern ROW = Pattern.compile("^\\| `(spark\\.nativepool\\.[A-Za-z0-9.]+)` \\|(.*)$");

  /** The classes that declare the plugin's {@code spark.nativepool.*} keys. */
  private static final List<Class<?>> SETTINGS =
      List.of(NativePoolSettings.class, ReportingSettings.class, LedgerSettings.class);

  /** The keys the settings classes declare: their static final String constants named so. */
  static TreeSet<String> declaredKeys() throws IllegalAccessException {
    TreeSet<String> keys = new TreeSet<>();
    for (Class<?> c : SETTINGS) {
      for (Field f : c.getDeclaredFields()) {
        addKey(keys, f);
      }
    }
    return keys;
  }

  private static void addKey(TreeSet<String> keys, Field f) throws IllegalAccessException {
    int m = f.getModifiers();
    if (Modifier.isStatic(m) && Modifier.isFinal(m) && f.getType() == String.class) {
      f.setAccessible(true);
      String v = (String) f.get(null);
      if (v.startsWith(PREFIX)) {
        keys.add(v);
      }
    }
  }

  /** The rows of the README's "Configuration" section whose first cell is a nativepool key. */
  static List<String[]> readmeRows() throws IOException {
    Path readme = Path.of("..", "README.md");
    List<String> lines = Files.readAllLines(readme, StandardCharsets.UTF_8);
    List<String[]> rows = new ArrayList<>();
    boolean inSection = false;
    for (String line : lines) {
      if (line.startsWith("## ")) {
        inSection = line.startsWith("## Configuration");
        continue;
      }
      Matcher m = ROW.matcher(line);
      if (inSection && m.matches()) {
        rows.add(new String[] {m.group(1), m.group(2)});
      }
    }
    return rows;
  }

  @Test
  void theReadmeTableListsExactlyTheKeysThePluginReads() throws Exception {
    TreeSet<String> declared = declaredKeys();
    assertTrue(declared.contains(NativePoolSettings.RESERVATION_SLACK), declared::toString);
    TreeSet<String> listed = new TreeSet<>();
    for (String[] row : readmeRows()) {
      assertTrue(listed.add(row[0]), "README lists " + row[0] + " twice");
    }
    TreeSet<String> missing = new TreeSet<>(declared);
    missing.removeAll(listed);
    TreeSet<String> unknown = new TreeSet<>(listed);
    unknown.removeAll(declared);
    assertEquals(
        "",
        (missing.isEmpty() ? "" : "missing from README.md's configuration table: " + missing)
            + (unknown.isEmpty() ? "" : " not declared by the plugin's settings: " + unknown));
  }

  @Test
  void everyRowHasADefaultAUnitAndAMeaning() throws Exception {
    List<String[]> rows = readmeRows();
    assertFalse(rows.isEmpty(), "no spark.nativepool rows found in README.md");
    for (String[] row : rows) {
      String[] cells = row[1].split("(?<!\\\\)\\|");
      assertTrue(cells.length >= 3, row[0] + ": expected default | unit | meaning, got " + row[1]);
      for (int i = 0; i < 3; i++) {
        assertFalse(cells[i].isBlank(), row[0] + ": empty cell " + (i + 2));
      }
    }
  }
}
