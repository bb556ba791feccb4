package org.nativepool.spark.ui;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/** {@link SvgChart} as a pure function: well-formed, self-contained SVG with what it was given. */
class SvgChartTest {
  private static final long MIB = 1L << 20;
  private static final long T0 = 1_700_000_000_000L;

  private static SvgChart.Chart chart() {
    long[] times = {T0, T0 + 1000, T0 + 2000, T0 + 3000};
    return new SvgChart.Chart(
        "executor 7 <killed>",
        times,
        List.of(
            new SvgChart.Series(
                "jvm.heap.resident",
                new long[] {500 * MIB, 500 * MIB, 600 * MIB, 600 * MIB},
                "#4e79a7"),
            new SvgChart.Series(
                "jvm.direct", new long[] {100 * MIB, 200 * MIB, 400 * MIB, -1}, "#b07aa1"),
            new SvgChart.Series("native.allocated", new long[] {50 * MIB, 50 * MIB}, "#e15759")),
        List.of(
            new SvgChart.Line("limit", 1200 * MIB, "#d62728"),
            new SvgChart.Line("off-heap budget", 256 * MIB, "#1f77b4")),
        List.of(
            new SvgChart.Marker(T0 + 1500, "crossing", "jvm.direct rose to 300 MiB & more"),
            new SvgChart.Marker(T0 + 3500, "end", "killed by its container's memory limit")),
        List.of(new SvgChart.Band(T0 + 2000, T0 + 2600, "pod guard episode 1")));
  }

  private static Document parse(String svg) throws Exception {
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setNamespaceAware(true);
    return f.newDocumentBuilder()
        .parse(new ByteArrayInputStream(svg.getBytes(StandardCharsets.UTF_8)));
  }

  private static List<Element> byClass(Document d, String tag, String cls) {
    NodeList l = d.getElementsByTagNameNS("*", tag);
    List<Element> out = new java.util.ArrayList<>();
    for (int i = 0; i < l.getLength(); i++) {
      Element e = (Element) l.item(i);
      if ((" " + e.getAttribute("class") + " ").contains(" " + cls + " ")) {
        out.add(e);
      }
    }
    return out;
  }

  @Test
  void drawsEverySeriesLineMarkerAndBandAsWellFormedSvg() throws Exception {
    String svg = SvgChart.render(chart(), 800, 300);
    Document d = parse(svg);
    Element root = d.getDocumentElement();
    assertEquals("svg", root.getLocalName());
    assertEquals("http://www.w3.org/2000/svg", root.getNamespaceURI());
    assertEquals(3, byClass(d, "polygon", "series").size());
    assertEquals(2, byClass(d, "line", "limit").size());
    assertEquals(2, byClass(d, "g", "marker").size());
    assertEquals(1, byClass(d, "g", "end").size());
    assertEquals(1, byClass(d, "rect", "band").size());
    assertTrue(svg.contains("<title>executor 7 &lt;killed&gt;</title>"), "escaped title");
    assertTrue(svg.contains("<title>jvm.direct rose to 300 MiB &amp; more</title>"));
    assertTrue(svg.contains("<title>limit: 1.2 GiB</title>"), svg);
    assertTrue(svg.contains(">off-heap budget</text>"), "in the legend");
    assertTrue(svg.contains(">22:13:20</text>"), "UTC clock ticks: " + svg);
  }

  @Test
  void needsNothingFromElsewhere() {
    String svg = SvgChart.render(chart(), 800, 300);
    assertFalse(svg.contains("<script"), "no script");
    assertFalse(svg.contains("href"), "no link");
    assertFalse(svg.replace("xmlns=\"http://www.w3.org/2000/svg\"", "").contains("http"), "no URL");
  }

  @Test
  void theStackTopsAreTheSumsAndTheScaleCoversTheHighestLine() throws Exception {
    String svg = SvgChart.render(chart(), 800, 300);
    Document d = parse(svg);
    List<Element> polys = byClass(d, "polygon", "series");
    // The top series' first point: the stack at T0 is 650 MiB; the y axis runs to above 1.2 GiB,
    // the limit, so the stack's top is below the middle of the plot.
    String[] first = polys.get(2).getAttribute("points").split(" ")[0].split(",");
    double x = Double.parseDouble(first[0]);
    double y = Double.parseDouble(first[1]);
    assertEquals(72.0, x, 0.01, "the first time is at the plot's left edge");
    assertTrue(y > (28 + 272) / 2.0 && y < 272, "650 MiB of a > 1.2 GiB axis: " + y);
    // a negative value counts as 0: at T0+3000 jvm.direct adds nothing over the heap
    String[] heapTop = polys.get(0).getAttribute("points").split(" ")[3].split(",");
    String[] directTop = polys.get(1).getAttribute("points").split(" ")[3].split(",");
    assertEquals(heapTop[1], directTop[1]);
  }

  @Test
  void aChartWithoutSamplesSaysSo() throws Exception {
    String svg =
        SvgChart.render(
            new SvgChart.Chart(
                "executor 9", new long[0], List.of(), List.of(), List.of(), List.of()),
            400,
            200);
    parse(svg);
    assertTrue(svg.contains(">no samples yet: nothing to draw</text>"), svg);
  }

  /** A short job's chart (two samples a second apart) names each second once on its time axis. */
  @Test
  void aSpanOfASecondLabelsEachClockTimeOnce() throws Exception {
    long t0 = 1_700_000_000_000L;
    String svg =
        SvgChart.render(
            new SvgChart.Chart(
                "executor 2",
                new long[] {t0, t0 + 1000},
                List.of(new SvgChart.Series("jvm.heap.resident", new long[] {1, 2}, "#4e79a7")),
                List.of(),
                List.of(),
                List.of()),
            400,
            200);
    parse(svg);
    assertTrue(svg.contains("data-samples=\"2\""), svg);
    assertEquals(1, svg.split(">22:13:20<", -1).length - 1, svg);
    assertEquals(1, svg.split(">22:13:21<", -1).length - 1, svg);
  }

  @Test
  void gridStepsAreRoundInBinaryUnits() {
    assertEquals(200L * MIB, SvgChart.niceStep(1200 * MIB));
    assertEquals(1L << 30, SvgChart.niceStep(5L << 30));
    assertEquals(5L << 10, SvgChart.niceStep(20L << 10));
    assertEquals(1L, SvgChart.niceStep(3));
    assertEquals("2,500 MiB", SvgChart.axisLabel(2500 * MIB, 500 * MIB));
    assertEquals("3 GiB", SvgChart.axisLabel(3L << 30, 1L << 30));
    assertEquals("0 KiB", SvgChart.axisLabel(0, 5L << 10));
    assertEquals(
        "a &amp; b &lt;c&gt; &quot;d&quot; &#39;e&#39;", SvgChart.escape("a & b <c> \"d\" 'e'"));
  }

  @Test
  void eachSeriesIsFilledWithItsOwnColourAndTheLegendListsTheStackTopFirst() throws Exception {
    Document d = parse(SvgChart.render(chart(), 800, 300));
    List<String> fills = new java.util.ArrayList<>();
    for (Element p : byClass(d, "polygon", "series")) {
      fills.add(p.getAttribute("fill"));
    }
    assertEquals(List.of("#4e79a7", "#b07aa1", "#e15759"), fills, "bottom first, as given");
    List<String> legend = new java.util.ArrayList<>();
    for (Element t : byClass(d, "text", "legend")) {
      legend.add(t.getTextContent());
    }
    assertEquals(
        List.of("native.allocated", "jvm.direct", "jvm.heap.resident", "limit", "off-heap budget"),
        legend);
    List<String> swatches = new java.util.ArrayList<>();
    for (Element r : byClass(d, "rect", "legend")) {
      swatches.add(r.getAttribute("fill"));
    }
    assertEquals(List.of("#e15759", "#b07aa1", "#4e79a7"), swatches);
  }
}
