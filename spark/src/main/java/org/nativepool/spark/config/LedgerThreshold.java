package org.nativepool.spark.config;

import java.util.ArrayList;
import java.util.List;

/**
 * One threshold on the executor memory ledger ({@link NativePoolConf#LEDGER_THRESHOLDS}): a part,
 * as the ledger names it ({@value LedgerSettings#TOTAL} for the whole resident set), and a level
 * in bytes.
 *
 * @param part the part watched
 * @param level the level, in bytes, {@code > 0}
 */
public record LedgerThreshold(String part, long level) {
  /** Parses {@link NativePoolConf#LEDGER_THRESHOLDS}: {@code part=size,…}. */
  static List<LedgerThreshold> parse(String spec) {
    List<LedgerThreshold> out = new ArrayList<>();
    for (String item : spec.split(",")) {
      if (item.isBlank()) {
        continue;
      }
      int eq = item.indexOf('=');
      if (eq < 0) {
        throw new IllegalArgumentException("'" + item.trim() + "' is not part=size");
      }
      String part = item.substring(0, eq).trim();
      String size = item.substring(eq + 1).trim();
      if (part.isEmpty() || size.isEmpty()) {
        throw new IllegalArgumentException("'" + item.trim() + "' is not part=size");
      }
      long level;
      try {
        level = Bytes.parse(size);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("'" + size + "' " + e.getMessage(), e);
      }
      if (level <= 0) {
        throw new IllegalArgumentException("level of " + part + " must be > 0");
      }
      out.add(new LedgerThreshold(part, level));
    }
    return List.copyOf(out);
  }
}
