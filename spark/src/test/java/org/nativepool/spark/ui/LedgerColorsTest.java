package org.nativepool.spark.ui;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.ledger.LedgerReader;

/** One colour per ledger part, and one order, for every chart ({@link LedgerColors}). */
class LedgerColorsTest {

  /** The parts the ledger names that a chart stacks: its resident parts and the remainder. */
  private static List<String> stackedParts() throws IllegalAccessException {
    List<String> out = new ArrayList<>();
    for (Field f : LedgerReader.class.getFields()) {
      if (Modifier.isStatic(f.getModifiers())
          && f.getType() == String.class
          && !f.getName().endsWith("_PREFIX")) {
        String part = (String) f.get(null);
        if (LedgerReader.adds(part, true) || LedgerReader.adds(part, false)) {
          out.add(part);
        }
      }
    }
    return out;
  }

  @Test
  void everyPartTheLedgerStacksHasAColourOfItsOwn() throws Exception {
    List<String> parts = stackedParts();
    assertTrue(
        parts.contains("jvm.heap.resident") && parts.contains("unexplained"), parts::toString);
    Set<String> seen = new HashSet<>();
    for (String part : parts) {
      String c = LedgerColors.color(part);
      assertTrue(
          part.equals(LedgerColors.UNEXPLAINED) || LedgerColors.PARTS.containsKey(part),
          part + " is in the table");
      assertTrue(seen.add(c), part + "'s colour " + c + " is another part's");
    }
    List<String> all = new ArrayList<>(LedgerColors.PARTS.values());
    all.addAll(LedgerColors.NETTY_COLORS);
    all.addAll(LedgerColors.UNKNOWN_COLORS);
    all.add(LedgerColors.OTHER_COLOR);
    all.add(LedgerColors.UNEXPLAINED_COLOR);
    all.add(LedgerColors.OFF_HEAP_POOLS_COLOR);
    all.add(LedgerColors.OFF_HEAP_OTHERS_COLOR);
    all.add(LedgerColors.OFF_HEAP_BALLAST_COLOR);
    all.addAll(List.of("#d62728", "#08306b", "#b35806", "#542788", "#000000", "#888888"));
    assertEquals(all.size(), new HashSet<>(all).size(), "no colour means two things: " + all);
  }

  /** A few parts' colours, pinned: the Native Memory page and ledger.png must not drift. */
  @Test
  void thePartsKeepTheirColours() {
    assertEquals("#4e79a7", LedgerColors.color("jvm.heap.resident"));
    assertEquals("#b07aa1", LedgerColors.color("jvm.direct"));
    assertEquals("#e15759", LedgerColors.color("native.allocated"));
    assertEquals("#59a14f", LedgerColors.color("go.heapInUse"));
    assertEquals("#7f7f7f", LedgerColors.color("other"));
    assertEquals("#c8c8c8", LedgerColors.color("unexplained"));
    // netty's pools and unknown parts: a colour by name, the same on every call
    assertEquals(
        LedgerColors.color("netty.shared.direct"), LedgerColors.color("netty.shared.direct"));
    assertTrue(LedgerColors.NETTY_COLORS.contains(LedgerColors.color("netty.rpc.direct")));
    assertTrue(LedgerColors.UNKNOWN_COLORS.contains(LedgerColors.color("some.new.part")));
  }

  @Test
  void theOrderIsTheLedgersWithNettyInPlaceAndOtherThenUnexplainedOnTop() {
    List<String> want =
        List.of(
            "jvm.heap.resident",
            "jvm.metaspace",
            "jvm.direct",
            "jvm.mapped",
            "netty.rpc.direct",
            "netty.shared.direct",
            "arrow.java",
            "native.allocated",
            "go.heapInUse",
            "go.other",
            "malloc.retained",
            "a.part.the.table.lacks",
            "other",
            "unexplained");
    List<String> shuffled = new ArrayList<>(want);
    Collections.reverse(shuffled);
    shuffled.sort(LedgerColors.ORDER);
    assertEquals(want, shuffled);
  }
}
