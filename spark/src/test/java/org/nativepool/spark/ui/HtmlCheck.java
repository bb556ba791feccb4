package org.nativepool.spark.ui;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A strict reader of the HTML the Native Memory page writes, for tests: it fails on anything the
 * page's own code does not write, so that input which reached the page unescaped shows. Checked:
 * every {@code <} opens or closes a tag of the page's vocabulary, with attributes of its
 * vocabulary, each quoted and free of {@code <}, {@code >} and quotes; every {@code &} starts an
 * entity; non-void elements are closed in order; no event handler attribute, no {@code
 * javascript:} URL, no {@code <script>}; the page's one {@code <style>} block holds no markup, no
 * imports and no URLs.
 */
final class HtmlCheck {
  private HtmlCheck() {}

  /** The elements the page writes (the document's own and inline SVG). */
  private static final Set<String> TAGS =
      Set.of(
          "html", "head", "meta", "title", "body", "h1", "h2", "h3", "h4", "p", "div", "span", "a",
          "b", "i", "em", "strong", "small", "code", "pre", "br", "ul", "ol", "li", "table",
          "thead", "tbody", "tr", "th", "td", "details", "summary", "svg", "g", "rect", "line",
          "polyline", "polygon", "path", "text", "tspan", "circle", "style");

  private static final Set<String> VOID = Set.of("meta", "br");

  /** The attributes the page writes. */
  private static final Set<String> ATTRIBUTES =
      Set.of(
          "charset", "style", "id", "class", "href", "title", "width", "height", "viewbox",
          "xmlns", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "points", "d", "fill",
          "stroke", "stroke-width", "stroke-dasharray", "opacity", "fill-opacity",
          "text-anchor", "font-size", "font-family", "dominant-baseline", "transform", "colspan",
          "rowspan", "align", "role", "aria-label", "open", "preserveaspectratio", "font-weight",
          "data-samples");

  private static final Pattern TAG =
      Pattern.compile("<(/?)([A-Za-z][A-Za-z0-9]*)((?:\\s+[A-Za-z][-A-Za-z0-9]*=\"[^\"<>]*\")*)\\s*(/?)>");
  private static final Pattern ATTR = Pattern.compile("([A-Za-z][-A-Za-z0-9]*)=\"([^\"<>]*)\"");
  private static final Pattern ENTITY = Pattern.compile("&(?:[a-z]+|#[0-9]+|#x[0-9a-fA-F]+);");

  /**
   * Checks {@code html}.
   *
   * @throws AssertionError naming the first offence and where it is
   */
  static void assertWellFormed(String html) {
    Deque<String> open = new ArrayDeque<>();
    int i = 0;
    while (i < html.length()) {
      char c = html.charAt(i);
      if (c == '<') {
        if (html.startsWith("<!DOCTYPE html>", i)) {
          i += "<!DOCTYPE html>".length();
          continue;
        }
        Matcher m = TAG.matcher(html).region(i, html.length());
        if (!m.lookingAt()) {
          fail("a '<' that opens no tag of the page", html, i);
        }
        String name = m.group(2).toLowerCase(java.util.Locale.ROOT);
        if (!TAGS.contains(name)) {
          fail("an element the page does not write: " + name, html, i);
        }
        Matcher a = ATTR.matcher(m.group(3));
        while (a.find()) {
          String attr = a.group(1).toLowerCase(java.util.Locale.ROOT);
          if (!ATTRIBUTES.contains(attr)) {
            fail("an attribute the page does not write: " + attr, html, i);
          }
          checkEntities(a.group(2), html, i);
          if (a.group(2).toLowerCase(java.util.Locale.ROOT).contains("javascript:")) {
            fail("a javascript: URL", html, i);
          }
        }
        boolean closing = !m.group(1).isEmpty();
        if (name.equals("style") && !closing) {
          int end = html.indexOf("</style>", m.end());
          if (end < 0) {
            fail("an unclosed <style>", html, i);
          }
          String css = html.substring(m.end(), end).toLowerCase(java.util.Locale.ROOT);
          if (css.contains("<") || css.contains("@import") || css.contains("url(")
              || css.contains("expression(")) {
            fail("markup, an import or a URL in the page's style", html, i);
          }
          i = end + "</style>".length();
          continue;
        }
        boolean selfClosing = !m.group(4).isEmpty();
        if (closing) {
          if (open.isEmpty() || !open.peek().equals(name)) {
            fail("</" + name + "> closes " + open.peek(), html, i);
          }
          open.pop();
        } else if (!selfClosing && !VOID.contains(name)) {
          open.push(name);
        }
        i = m.end();
      } else if (c == '>') {
        fail("a '>' outside a tag", html, i);
      } else if (c == '&') {
        Matcher e = ENTITY.matcher(html).region(i, html.length());
        if (!e.lookingAt()) {
          fail("a '&' that starts no entity", html, i);
        }
        i = e.end();
      } else {
        i++;
      }
    }
    if (!open.isEmpty()) {
      fail("unclosed elements " + open, html, html.length());
    }
  }

  private static void checkEntities(String value, String html, int at) {
    int amp = value.indexOf('&');
    while (amp >= 0) {
      if (!ENTITY.matcher(value).region(amp, value.length()).lookingAt()) {
        fail("a '&' in an attribute that starts no entity", html, at);
      }
      amp = value.indexOf('&', amp + 1);
    }
  }

  private static void fail(String what, String html, int at) {
    int from = Math.max(0, at - 80);
    int to = Math.min(html.length(), at + 80);
    throw new AssertionError(what + " at " + at + ": …" + html.substring(from, to) + "…");
  }
}
