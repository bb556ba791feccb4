package org.nativepool.spark.ui;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One colour per part of the executor memory ledger, and one order, for every chart that draws the
 * ledger: each executor's chart on the Native Memory page (live and in the History Server) and the
 * demo's {@code ledger.png}, whose Go copy of this table ({@code examples/chart/colors.go}) a Go
 * test checks against this file. An operator comparing two executors reads colour first: a part
 * keeps its colour whatever its size, and whichever other parts a chart shows.
 *
 * <p>The order is the stacking order, bottom first: the parts of {@link #PARTS} in the ledger's
 * display order (the JVM, Spark's transport, Arrow Java, native memory, the Go runtime, the C
 * allocator, Spark's off-heap memory held by other engines' consumers), {@code
 * netty.<pool>.resident} parts at the place of the transport, parts the table does not name by
 * name after them, then {@value #OTHER} (small parts summed), then {@value #UNEXPLAINED} on top.
 * Legends list the series top first, as they are stacked. Stateless.
 */
final class LedgerColors {
  /** The series of small parts summed. */
  static final String OTHER = "other";

  /** The ledger's remainder: the resident set less the resident parts. */
  static final String UNEXPLAINED = "unexplained";

  /** The prefix of the parts netty's pools make, one per pool ({@code netty.<pool>.resident}). */
  static final String NETTY_PREFIX = "netty.";

  /** Part → colour, in stacking order. The Go copy is partColors in examples/chart/colors.go. */
  static final Map<String, String> PARTS =
      table(
          "jvm.heap.resident", "#4e79a7",
          "jvm.heap.committed", "#a0cbe8",
          "jvm.metaspace", "#499894",
          "jvm.codeCache", "#86bcb6",
          "jvm.threads", "#9467bd",
          "jvm.gc", "#c5b0d5",
          "jvm.native", "#9d7660",
          "jvm.unsafe", "#d7b5a6",
          "jvm.direct", "#b07aa1",
          "jvm.mapped", "#d4a6c8",
          "arrow.java", "#f28e2b",
          "native.allocated", "#e15759",
          "go.heapInUse", "#59a14f",
          "go.heapIdle", "#8cd17d",
          "go.stacks", "#637939",
          "go.gcMeta", "#b5cf6b",
          "go.other", "#cedb9c",
          "malloc.retained", "#edc948",
          "offHeap.spark", "#bab0ac",
          "offHeap.comet", "#ff9d9a",
          "offHeap.gluten", "#f1ce63",
          "offHeap.other", "#79706e",
          "python.workers", "#76b7b2",
          "process.others", "#9c755f");

  /**
   * The colours of netty's pools ({@code netty.<pool>.resident}), whose names are known only at run
   * time: a part takes {@code NETTY_COLORS[sum of its name's UTF-8 bytes % size]}, so a pool keeps
   * its colour everywhere. The Go copy is nettyColors in examples/chart/colors.go.
   */
  static final List<String> NETTY_COLORS = List.of("#d37295", "#fabfd2");

  /** The colours of parts this table does not know, chosen like {@link #NETTY_COLORS}'. */
  static final List<String> UNKNOWN_COLORS = List.of("#17becf", "#bcbd22");

  /** The colour of {@value #OTHER}. The Go copy is otherColor in examples/chart/colors.go. */
  static final String OTHER_COLOR = "#7f7f7f";

  /** The colour of {@value #UNEXPLAINED}. The Go copy is unexplainedColor. */
  static final String UNEXPLAINED_COLOR = "#c8c8c8";

  /**
   * The colours of the Native Memory page's off-heap chart, which stacks accounting figures, not
   * ledger parts: what nativepool's pools hold of Spark's off-heap memory, what Spark's and other
   * engines' consumers and cached blocks hold, and the pod guard's ballast. No other chart uses
   * them, so no Go copy.
   */
  static final String OFF_HEAP_POOLS_COLOR = "#c44e52";

  static final String OFF_HEAP_OTHERS_COLOR = "#9c9ede";

  static final String OFF_HEAP_BALLAST_COLOR = "#6b6ecf";

  private static final List<String> KNOWN = List.copyOf(PARTS.keySet());

  /** Where netty's pools stack: after the JVM's parts, before Arrow Java. */
  private static final int NETTY_RANK = KNOWN.indexOf("arrow.java");

  /** Bottom first, as {@link LedgerColors} orders the parts; ties by name. */
  static final Comparator<String> ORDER =
      Comparator.comparingInt(LedgerColors::rank).thenComparing(Comparator.naturalOrder());

  private LedgerColors() {}

  /** The colour of {@code part} on every chart. */
  static String color(String part) {
    String c = PARTS.get(part);
    if (c != null) {
      return c;
    }
    return switch (part) {
      case OTHER -> OTHER_COLOR;
      case UNEXPLAINED -> UNEXPLAINED_COLOR;
      default -> pick(part.startsWith(NETTY_PREFIX) ? NETTY_COLORS : UNKNOWN_COLORS, part);
    };
  }

  /**
   * {@code part}'s place in the stack: its index in {@link #PARTS}; netty's pools between the JVM
   * and Arrow Java (ties broken by name); unknown parts after the table; {@value #OTHER}, then
   * {@value #UNEXPLAINED}, last.
   */
  private static int rank(String part) {
    int i = KNOWN.indexOf(part);
    if (i >= 0) {
      return 2 * i + 1; // odd: netty's pools fit between two known parts
    }
    return switch (part) {
      case OTHER -> 2 * KNOWN.size() + 3;
      case UNEXPLAINED -> 2 * KNOWN.size() + 4;
      default -> part.startsWith(NETTY_PREFIX) ? 2 * NETTY_RANK : 2 * KNOWN.size() + 2;
    };
  }

  /** {@code colors[sum of name's UTF-8 bytes % size]}: a colour that depends on the name only. */
  static String pick(List<String> colors, String name) {
    int sum = 0;
    for (byte b : name.getBytes(StandardCharsets.UTF_8)) {
      sum += b & 0xff;
    }
    return colors.get(sum % colors.size());
  }

  private static Map<String, String> table(String... partThenColor) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < partThenColor.length; i += 2) {
      m.put(partThenColor[i], partThenColor[i + 1]);
    }
    return Collections.unmodifiableMap(m);
  }
}
