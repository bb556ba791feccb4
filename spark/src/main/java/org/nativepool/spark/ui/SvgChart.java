package org.nativepool.spark.ui;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import org.nativepool.spark.config.Bytes;

/**
 * Draws one executor's memory over time as a self-contained SVG element: the series stacked as
 * areas, horizontal lines for limits, vertical markers for events, shaded bands for episodes, and a
 * legend. A pure function of its {@link Chart}: no script, no stylesheet, no font or file from
 * elsewhere, so the page it sits in works offline and in the History Server alike. Stateless.
 */
public final class SvgChart {
  private static final int LEFT = 72;
  private static final int RIGHT = 16;
  private static final int TOP = 28;
  private static final int BOTTOM = 28;
  private static final int LEGEND_ROW = 18;
  private static final DateTimeFormatter CLOCK =
      DateTimeFormatter.ofPattern("HH:mm:ss", Locale.ROOT).withZone(ZoneOffset.UTC);

  private SvgChart() {}

  /**
   * A stacked series: one value per time of the chart ({@code values[i]} at {@code times[i]});
   * negative values count as 0. {@code color} is its fill, the caller's choice, so that a series
   * keeps its colour from chart to chart ({@link LedgerColors} for the ledger's parts).
   */
  public record Series(String name, long[] values, String color) {}

  /** A horizontal line at {@code value} bytes, e.g. the memory limit; drawn dashed. */
  public record Line(String name, long value, String color) {}

  /**
   * A vertical marker at {@code timeMillis}: {@code kind} chooses its colour ({@code crossing},
   * {@code growth}, {@code end}, anything else grey); {@code label} is its tooltip.
   */
  public record Marker(long timeMillis, String kind, String label) {}

  /** A shaded span of time, e.g. a pod guard episode; {@code label} is its tooltip. */
  public record Band(long startMillis, long endMillis, String label) {}

  /**
   * What to draw.
   *
   * @param title the chart's heading
   * @param times the sample times, ascending (epoch ms)
   * @param stacked the series, bottom first, each with one value per time
   * @param lines horizontal lines
   * @param markers vertical markers
   * @param bands shaded spans
   */
  public record Chart(
      String title,
      long[] times,
      List<Series> stacked,
      List<Line> lines,
      List<Marker> markers,
      List<Band> bands) {}

  /**
   * The chart as one {@code <svg>} element of {@code width} × (plot {@code height} + legend)
   * pixels, its attribute {@code data-samples} the number of times drawn. A chart with fewer than
   * two times has no span to draw over: it says so in words, in a small SVG of its own.
   */
  public static String render(Chart c, int width, int height) {
    int columns = legendColumns(c, width);
    int legendRows = (c.stacked().size() + c.lines().size() + columns - 1) / columns;
    // fewer than two times: a heading and a sentence, no plot
    int total = c.times().length < 2 ? TOP + 32 : height + legendRows * LEGEND_ROW + 8;
    StringBuilder b = new StringBuilder();
    b.append("<svg xmlns=\"http://www.w3.org/2000/svg\" data-samples=\"")
        .append(c.times().length)
        .append("\" width=\"")
        .append(width)
        .append("\" height=\"")
        .append(total)
        .append("\" viewBox=\"0 0 ")
        .append(width)
        .append(' ')
        .append(total)
        .append("\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\">");
    b.append("<title>").append(escape(c.title())).append("</title>");
    b.append("<text x=\"")
        .append(LEFT)
        .append("\" y=\"16\" font-size=\"13\" font-weight=\"bold\">")
        .append(escape(c.title()))
        .append("</text>");
    long[] t = c.times();
    if (t.length < 2) {
      b.append("<text class=\"few\" x=\"").append(LEFT).append("\" y=\"").append(TOP + 20);
      b.append("\">")
          .append(
              t.length == 0
                  ? "no samples yet: nothing to draw"
                  : "one sample so far, at "
                      + CLOCK.format(Instant.ofEpochMilli(t[0]))
                      + " UTC: a chart needs two")
          .append("</text></svg>");
      return b.toString();
    }
    int n = t.length;
    long[][] top = new long[c.stacked().size()][n];
    long max = 1;
    for (int i = 0; i < n; i++) {
      long sum = 0;
      for (int s = 0; s < c.stacked().size(); s++) {
        long[] v = c.stacked().get(s).values();
        sum += i < v.length ? Math.max(0, v[i]) : 0;
        top[s][i] = sum;
      }
      max = Math.max(max, sum);
    }
    for (Line l : c.lines()) {
      max = Math.max(max, l.value());
    }
    long t0 = t[0];
    long t1 = t[n - 1];
    for (Marker m : c.markers()) {
      t0 = Math.min(t0, m.timeMillis());
      t1 = Math.max(t1, m.timeMillis());
    }
    for (Band bd : c.bands()) {
      t0 = Math.min(t0, bd.startMillis());
      t1 = Math.max(t1, bd.endMillis());
    }
    if (t1 == t0) {
      t1 = t0 + 1000;
    }
    long step = niceStep(max);
    long yMax = ((max + max / 20) / step + 1) * step;
    Scale sc = new Scale(t0, t1, yMax, width, height);

    // grid and y axis
    for (long y = 0; y <= yMax; y += step) {
      double py = sc.y(y);
      b.append("<line x1=\"")
          .append(LEFT)
          .append("\" x2=\"")
          .append(width - RIGHT)
          .append("\" y1=\"")
          .append(fmt(py))
          .append("\" y2=\"")
          .append(fmt(py))
          .append("\" stroke=\"#dddddd\"/>");
      b.append("<text x=\"")
          .append(LEFT - 4)
          .append("\" y=\"")
          .append(fmt(py + 4))
          .append("\" text-anchor=\"end\">")
          .append(escape(axisLabel(y, step)))
          .append("</text>");
    }
    // x axis: five clock ticks, UTC, each label once (a span of a few seconds has fewer)
    String previous = null;
    for (int k = 0; k <= 4; k++) {
      long tt = t0 + (t1 - t0) * k / 4;
      String label = CLOCK.format(Instant.ofEpochMilli(tt));
      if (label.equals(previous)) {
        continue;
      }
      previous = label;
      b.append("<text x=\"")
          .append(fmt(sc.x(tt)))
          .append("\" y=\"")
          .append(height - 8)
          .append("\" text-anchor=\"")
          .append(k == 0 ? "start" : k == 4 ? "end" : "middle")
          .append("\">")
          .append(label)
          .append("</text>");
    }
    // bands under the areas' outlines
    for (Band bd : c.bands()) {
      double x0 = sc.x(bd.startMillis());
      double x1 = Math.max(sc.x(bd.endMillis()), x0 + 2);
      b.append("<rect class=\"band\" x=\"")
          .append(fmt(x0))
          .append("\" y=\"")
          .append(TOP)
          .append("\" width=\"")
          .append(fmt(x1 - x0))
          .append("\" height=\"")
          .append(height - TOP - BOTTOM)
          .append("\" fill=\"#e15759\" fill-opacity=\"0.15\"><title>")
          .append(escape(bd.label()))
          .append("</title></rect>");
    }
    // stacked areas, bottom first
    for (int s = 0; s < c.stacked().size(); s++) {
      StringBuilder pts = new StringBuilder();
      for (int i = 0; i < n; i++) {
        pts.append(fmt(sc.x(t[i]))).append(',').append(fmt(sc.y(top[s][i]))).append(' ');
      }
      for (int i = n - 1; i >= 0; i--) {
        long below = s == 0 ? 0 : top[s - 1][i];
        pts.append(fmt(sc.x(t[i]))).append(',').append(fmt(sc.y(below))).append(' ');
      }
      Series se = c.stacked().get(s);
      b.append("<polygon class=\"series\" points=\"")
          .append(pts.toString().trim())
          .append("\" fill=\"")
          .append(escape(se.color()))
          .append("\" fill-opacity=\"0.85\" stroke=\"none\"><title>")
          .append(escape(se.name()))
          .append("</title></polygon>");
    }
    // lines
    for (Line l : c.lines()) {
      double py = sc.y(l.value());
      b.append("<line class=\"limit\" x1=\"")
          .append(LEFT)
          .append("\" x2=\"")
          .append(width - RIGHT)
          .append("\" y1=\"")
          .append(fmt(py))
          .append("\" y2=\"")
          .append(fmt(py))
          .append("\" stroke=\"")
          .append(escape(l.color()))
          .append("\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"><title>")
          .append(escape(l.name() + ": " + Bytes.format(l.value())))
          .append("</title></line>");
    }
    // markers
    for (Marker m : c.markers()) {
      double px = sc.x(m.timeMillis());
      String col = markerColor(m.kind());
      b.append("<g class=\"marker ")
          .append(escape(m.kind()))
          .append("\"><title>")
          .append(escape(m.label()))
          .append("</title><line x1=\"")
          .append(fmt(px))
          .append("\" x2=\"")
          .append(fmt(px))
          .append("\" y1=\"")
          .append(TOP)
          .append("\" y2=\"")
          .append(height - BOTTOM)
          .append("\" stroke=\"")
          .append(col)
          .append("\" stroke-width=\"")
          .append(m.kind().equals("end") ? "2" : "1")
          .append("\"/><circle cx=\"")
          .append(fmt(px))
          .append("\" cy=\"")
          .append(TOP)
          .append("\" r=\"4\" fill=\"")
          .append(col)
          .append("\"/></g>");
    }
    // frame
    b.append("<rect x=\"")
        .append(LEFT)
        .append("\" y=\"")
        .append(TOP)
        .append("\" width=\"")
        .append(width - LEFT - RIGHT)
        .append("\" height=\"")
        .append(height - TOP - BOTTOM)
        .append("\" fill=\"none\" stroke=\"#888\"/>");
    // legend: the stacked series top first, as they are stacked, then the lines
    int item = 0;
    for (int s = c.stacked().size() - 1; s >= 0; s--, item++) {
      Series se = c.stacked().get(s);
      legend(b, item, columns, height, width, se.color(), false, se.name());
    }
    for (Line l : c.lines()) {
      legend(b, item++, columns, height, width, l.color(), true, l.name());
    }
    return b.append("</svg>").toString();
  }

  /**
   * How many legend items fit side by side: four, fewer where the longest name needs it (about
   * 6.5 pixels a character at the legend's 11 pixels, and 24 for the swatch and a gap).
   */
  static int legendColumns(Chart c, int width) {
    int longest = 1;
    for (Series se : c.stacked()) {
      longest = Math.max(longest, se.name().length());
    }
    for (Line l : c.lines()) {
      longest = Math.max(longest, l.name().length());
    }
    int fit = (int) ((width - LEFT - RIGHT) / (longest * 6.5 + 24));
    return Math.max(1, Math.min(4, fit));
  }

  private static void legend(
      StringBuilder b,
      int item,
      int columns,
      int height,
      int width,
      String color,
      boolean line,
      String name) {
    int colWidth = (width - LEFT - RIGHT) / columns;
    double x = LEFT + (item % columns) * colWidth;
    double y = height + 4 + (item / columns) * LEGEND_ROW;
    if (line) {
      b.append("<line class=\"legend\" x1=\"")
          .append(fmt(x))
          .append("\" x2=\"")
          .append(fmt(x + 12))
          .append("\" y1=\"")
          .append(fmt(y + 6))
          .append("\" y2=\"")
          .append(fmt(y + 6))
          .append("\" stroke=\"")
          .append(escape(color))
          .append("\" stroke-width=\"2\" stroke-dasharray=\"4 2\"/>");
    } else {
      b.append("<rect class=\"legend\" x=\"")
          .append(fmt(x))
          .append("\" y=\"")
          .append(fmt(y))
          .append("\" width=\"12\" height=\"12\" fill=\"")
          .append(escape(color))
          .append("\"/>");
    }
    b.append("<text class=\"legend\" x=\"")
        .append(fmt(x + 16))
        .append("\" y=\"")
        .append(fmt(y + 10))
        .append("\">")
        .append(escape(name))
        .append("</text>");
  }

  private static String markerColor(String kind) {
    return switch (kind) {
      case "crossing" -> "#b35806";
      case "growth" -> "#542788";
      case "end" -> "#000000";
      default -> "#888888";
    };
  }

  /**
   * The smallest step of 1, 2, 5, 10, 20, 50, 100, 200 or 500 bytes, KiB, MiB, GiB or TiB that
   * spans {@code max} in at most eight gridlines, so that the axis reads in round binary units.
   */
  static long niceStep(long max) {
    long[] multiples = {1, 2, 5, 10, 20, 50, 100, 200, 500};
    for (long unit = 1; unit <= (1L << 40); unit <<= 10) {
      for (long m : multiples) {
        if (max / (m * unit) <= 8 && max <= 8 * m * unit) {
          return m * unit;
        }
      }
    }
    return Math.max(1, max / 8);
  }

  /**
   * A gridline's label in the largest binary unit that divides the grid's step, so that the labels
   * of one axis share a unit and read exactly: {@code 2,500 MiB} for a 500 MiB step, {@code 3 GiB}
   * for a 1 GiB one.
   */
  static String axisLabel(long value, long step) {
    String[] units = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    long unit = 1;
    while (u < units.length - 1 && step % (unit << 10) == 0) {
      unit <<= 10;
      u++;
    }
    return String.format(Locale.ROOT, "%,d %s", value / unit, units[u]);
  }

  /** Text and attribute values for XML: {@code & < > " '} escaped. */
  static String escape(String s) {
    if (s == null) {
      return "";
    }
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char ch = s.charAt(i);
      switch (ch) {
        case '&' -> b.append("&amp;");
        case '<' -> b.append("&lt;");
        case '>' -> b.append("&gt;");
        case '"' -> b.append("&quot;");
        case '\'' -> b.append("&#39;");
        default -> {
          if (ch < 0x20 && ch != '\n' && ch != '\t') {
            b.append(' ');
          } else {
            b.append(ch);
          }
        }
      }
    }
    return b.toString();
  }

  private static String fmt(double v) {
    return String.format(Locale.ROOT, "%.1f", v);
  }

  /** Maps times and bytes to pixels of the plot area. */
  private record Scale(long t0, long t1, long yMax, int width, int height) {
    double x(long t) {
      return LEFT + (double) (t - t0) / (t1 - t0) * (width - LEFT - RIGHT);
    }

    double y(long v) {
      return height - BOTTOM - (double) v / yMax * (height - TOP - BOTTOM);
    }
  }
}
