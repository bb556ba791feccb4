package org.nativepool.spark.ui;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The copies of {@link NativeMemoryWebPage}, one per Spark line where Spark's web UI API differs
 * (src/main/webui-spark3.5: javax.servlet; webui-spark4.0, for 4.0 and 4.1: jakarta.servlet;
 * webui-spark4.2: jakarta.servlet and headerSparkPage's useTimeline), are the same class but for
 * those: a build compiles one of them, and this keeps the others from drifting. Reads the sources,
 * on every line.
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
    String pom = Files.readString(Path.of("..", "pom.xml"), StandardCharsets.UTF_8);
    for (String dir : List.of("webui-spark3.5", "webui-spark4.0", "webui-spark4.2")) {
      assertEquals(
          1,
          pom.split("<nativepool.webui.src>" + dir + "</nativepool.webui.src>", -1).length - 1,
          "../pom.xml sets nativepool.webui.src to " + dir + " once");
    }
  }
}
