package org.nativepool.spark.jni;

import java.util.ArrayList;
import java.util.List;

/**
 * The text records some natives return ({@code recentLeaks0}, {@code liveNative0}, {@code
 * consumerPeaks0}; jni/API.md): one record per line, its fields separated by tabs. The Go side
 * turns tabs and line breaks inside a field into spaces, so neither needs escaping.
 */
public final class Records {
  private Records() {}

  /**
   * The records of {@code text} (null or empty: none), each split into exactly {@code fields}
   * fields.
   *
   * @throws IllegalStateException naming {@code what} and the line, for a line with another number
   *     of fields
   */
  public static List<String[]> parse(String text, int fields, String what) {
    List<String[]> out = new ArrayList<>();
    if (text == null) {
      return out;
    }
    for (String line : text.split("\n")) {
      if (line.isEmpty()) {
        continue;
      }
      String[] f = line.split("\t", -1);
      if (f.length != fields) {
        throw new IllegalStateException("nativepool: " + what + ": malformed line '" + line + "'");
      }
      out.add(f);
    }
    return out;
  }
}
