package org.nativepool.spark.ui;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The copies of {@link NativeMemoryWebPage}, one per Spark line where Spark's web UI API differs
 * (src/main/webui-spark3.5: javax.servlet; webui-spark4.0, for 4.0 and 4.1: jakarta.servlet;
 * webui-spark4.2, for 4.2 and 4.3: jakarta.servlet and headerSparkPage's useTimeline), are the same
 * class but for those: a build compiles one of them (the one its module, lines/<line>/pom.xml,
 * names), and this keeps the others from drifting. Reads the sources, on every line.
 */
class NativeMemoryWebPageCopiesTest {
  private static final Path CLASS =
      Path.of("org", "nativepool", "spark", "ui", "NativeMemoryWebPage.java");

  /**
   * The copy's lines without its servlet import (after checking it is {@code api}'s, and the only
   * one) and with {@code flags} as the 4.0 copy's headerSparkPage flags.
   */
  private static List<String> normalized(String dir, String api, String flags) throws IOException {
    Path f = Path.of("src", "main", dir).resolve(CLASS);
    List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
    String servletImport = "import " + api + ".servlet.http.HttpServletRequest;";
    assertEquals(
        List.of(servletImport),
        lines.stream().filter(l -> l.startsWith("import ") && l.contains("servlet.")).toList(),
        f + ": its servlet import");
    String call = "noHelp, " + flags + "));";
    assertEquals(1, lines.stream().filter(l -> l.endsWith(call)).count(), f + ": " + call);
    return lines.stream()
        .filter(l -> !l.equals(servletImport))
        .map(l -> l.endsWith(call) ? l.replace(call, "noHelp, false, false));") : l)
        .collect(Collectors.toList());
  }

  @Test
  void theCopiesDifferOnlyInTheServletImportAndHeaderSparkPagesFlags() throws IOException {
    List<String> spark40 = normalized("webui-spark4.0", "jakarta", "false, false");
    assertEquals(spark40, normalized("webui-spark3.5", "javax", "false, false"), "3.5");
    assertEquals(spark40, normalized("webui-spark4.2", "jakarta", "false, false, false"), "4.2");
  }

  @Test
  void eachCopyIsInTheSourcesOfItsLines() throws IOException {
    Map<String, String> chosen = new TreeMap<>();
    try (DirectoryStream<Path> lines = Files.newDirectoryStream(Path.of("lines"))) {
      for (Path line : lines) {
        String pom = Files.readString(line.resolve("pom.xml"), StandardCharsets.UTF_8);
        Matcher m =
            Pattern.compile("<nativepool.webui.src>([^<]+)</nativepool.webui.src>").matcher(pom);
        assertTrue(m.find(), line + "/pom.xml sets nativepool.webui.src");
        chosen.put(line.getFileName().toString(), m.group(1));
        assertTrue(Files.isDirectory(Path.of("src", "main", m.group(1))), line + ": " + m.group(1));
      }
    }
    for (String dir : List.of("webui-spark3.5", "webui-spark4.0", "webui-spark4.2")) {
      assertTrue(chosen.containsValue(dir), "a line builds " + dir + ": " + chosen);
    }
    assertEquals("webui-spark3.5", chosen.get("spark3.5_2.12"), chosen::toString);
    assertEquals("webui-spark4.0", chosen.get("spark4.1_2.13"), chosen::toString);
    assertEquals("webui-spark4.2", chosen.get("spark4.3_2.13"), chosen::toString);
  }
}
