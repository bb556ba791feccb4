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
 * The two copies of {@link NativeMemoryWebPage}, one per servlet API (src/main/servlet-jakarta for
 * Spark 4.x, src/main/servlet-javax for Spark 3.5), are the same class but for the servlet import:
 * a build compiles one of them, and this keeps the other from drifting. Reads the sources, on every
 * line.
 */
class NativeMemoryWebPageCopiesTest {
  private static final Path CLASS = Path.of("org", "nativepool", "spark", "ui", "NativeMemoryWebPage.java");

  /** The source's lines without its servlet import, after checking that it has exactly that one. */
  private static List<String> withoutServletImport(String api) throws IOException {
    Path f = Path.of("src", "main", "servlet-" + api).resolve(CLASS);
    List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
    String servletImport = "import " + api + ".servlet.http.HttpServletRequest;";
    assertEquals(
        List.of(servletImport),
        lines.stream().filter(l -> l.contains("servlet.")  && l.startsWith("import ")).toList(),
        f + ": its servlet imports");
    return lines.stream().filter(l -> !l.equals(servletImport)).collect(Collectors.toList());
  }

  @Test
  void theJakartaAndJavaxCopiesDifferOnlyInTheServletImport() throws IOException {
    assertEquals(withoutServletImport("jakarta"), withoutServletImport("javax"));
  }
}
