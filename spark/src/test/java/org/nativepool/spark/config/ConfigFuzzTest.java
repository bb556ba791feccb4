package org.nativepool.spark.config;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.junit.FuzzTest;
import java.math.BigInteger;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/**
 * Fuzzes the parser of every {@code spark.nativepool.*} key ({@link NativePoolConf#all()}): sizes,
 * lists, thresholds, fractions, durations, counts and modes. The properties, for every key and
 * every value, through {@link ConfigKey#parse} and through {@link ConfigKey#read} of a {@link
 * SparkConf} (the key or its deprecated one):
 *
 * <ul>
 *   <li>a value is parsed or refused with an {@link IllegalArgumentException} naming the key and
 *       the value, never another exception;
 *   <li>a parsed value round-trips through its printer (a size through {@link Bytes#spec}, a list
 *       item by item, a number or mode as its text): printed and parsed again it is the same
 *       value;
 *   <li>a size is the number Spark's byte-string grammar gives, computed exactly ({@link
 *       #sparkBytes}): no overflow wraps, no suffix is misread.
 * </ul>
 *
 * Seeds: every key's default and the values of the README's examples and of the plugin's tests
 * (src/test/resources/.../ConfigFuzzTestInputs).
 */
class ConfigFuzzTest {
  private static final Pattern SPARK_BYTES =
      Pattern.compile("([0-9]+)([a-z]+)?", Pattern.CASE_INSENSITIVE);

  /**
   * The bytes Spark's grammar ({@code JavaUtils.byteStringAsBytes}: digits and an optional suffix
   * b, k, kb, m, mb, g, gb, t, tb, p, pb in any case) gives {@code s}, exactly; null when it is not
   * one, or does not fit in a long.
   */
  static BigInteger sparkBytes(String s) {
    Matcher m = SPARK_BYTES.matcher(s.trim().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      return null;
    }
    String unit = m.group(2) == null ? "b" : m.group(2);
    int shift =
        switch (unit) {
          case "b" -> 0;
          case "k", "kb" -> 10;
          case "m", "mb" -> 20;
          case "g", "gb" -> 30;
          case "t", "tb" -> 40;
          case "p", "pb" -> 50;
          default -> -1;
        };
    if (shift < 0) {
      return null;
    }
    BigInteger v = new BigInteger(m.group(1)).shiftLeft(shift);
    return v.bitLength() < 64 ? v : null;
  }

  /** A parsed value as the text of a setting that holds it. */
  static String print(ConfigKey<?> key, Object v) {
    if (v instanceof Long n && n < 0) {
      return ""; // a sentinel of the empty value (goMemoryLimit's "derived")
    }
    if (v instanceof Long n && key.unit().startsWith("size")) {
      return Bytes.spec(n);
    }
    if (v instanceof Long n && key.unit().equals("duration")) {
      return n + "ms";
    }
    if (v instanceof long[] sizes) {
      return java.util.Arrays.stream(sizes).mapToObj(Bytes::spec).collect(Collectors.joining(","));
    }
    if (v instanceof List<?> l) {
      return l.stream()
          .map(
              o ->
                  o instanceof LedgerThreshold t
                      ? t.part() + "=" + Bytes.spec(t.level())
                      : String.valueOf(o))
          .collect(Collectors.joining(","));
    }
    if (v instanceof GuardMode g) {
      return g.word();
    }
    return String.valueOf(v);
  }

  /** Checks one key's parse of {@code raw}, and returns what it parsed (or null if refused). */
  static Object check(ConfigKey<?> key, String raw) {
    Object v;
    try {
      v = key.parse(raw);
    } catch (IllegalArgumentException e) {
      String want = "nativepool: " + key.key() + " = '" + raw + "': ";
      assertTrue(e.getMessage().startsWith(want), () -> "message " + e.getMessage());
      if (key.unit().equals("size") && !raw.trim().equalsIgnoreCase("off")) {
        BigInteger b = sparkBytes(raw);
        // A size Spark reads may still be out of the key's range; one it cannot read is refused.
        assertTrue(
            b == null || e.getMessage().contains("must be") || e.getMessage().contains("above"),
            () -> "'" + raw + "' is " + b + " bytes, refused: " + e.getMessage());
      }
      return null;
    } catch (RuntimeException e) {
      throw new AssertionError(key.key() + " = '" + raw + "': " + e, e);
    }
    if (v == null) {
      return null; // unset: the key's own default applies
    }
    BigInteger bytes = sparkBytes(raw);
    if (v instanceof Long n && key.unit().startsWith("size") && bytes != null) {
      assertEquals(bytes.longValueExact(), n, () -> key.key() + " = '" + raw + "'");
    }
    if (v instanceof Integer n && !raw.isBlank()) {
      assertEquals(new BigInteger(raw.trim()), BigInteger.valueOf(n), () -> key.key() + " = '" + raw + "'");
    }
    String printed = print(key, v);
    Object again;
    try {
      again = key.parse(printed);
    } catch (IllegalArgumentException e) {
      throw new AssertionError(
          key.key() + " = '" + raw + "' parsed as " + printed + ", which is refused: " + e, e);
    }
    if (v instanceof long[] a) {
      assertArrayEquals(a, (long[]) again, () -> key.key() + " = '" + raw + "' → " + printed);
    } else {
      assertEquals(v, again, () -> key.key() + " = '" + raw + "' → " + printed);
    }
    return v;
  }

  @FuzzTest(maxDuration = "2m")
  @DictionaryEntries({
    "k", "kb", "m", "mb", "g", "gb", "t", "tb", "p", "pb", "ms", "s", "min", "h", "d", "true",
    "false", "auto", "off", "fair_unified", "greedy_unified", "total=", "jvm.direct=", ",", "=",
    "0.5", "-1", "9223372036854775807", "4294967296", "NaN", "Infinity"
  })
  void everyKeyParsesOrRefusesWithItsName(FuzzedDataProvider data) {
    List<ConfigKey<?>> keys = NativePoolConf.all();
    ConfigKey<?> key = keys.get(data.consumeInt(0, keys.size() - 1));
    boolean deprecated = data.consumeBoolean();
    String raw = data.consumeRemainingAsString();
    Object parsed = check(key, raw);
    SparkConf conf = new SparkConf(false);
    if (deprecated && key.deprecatedKey() != null) {
      conf.set(key.deprecatedKey(), raw);
    } else {
      conf.set(key.key(), raw);
    }
    try {
      Object read = key.read(conf);
      if (parsed instanceof long[] a) {
        assertArrayEquals(a, (long[]) read);
      } else if (parsed != null) {
        assertEquals(parsed, read);
      }
    } catch (IllegalArgumentException e) {
      if (parsed != null) {
        fail(key.key() + " = '" + raw + "' parses, but read refuses it: " + e);
      }
    } catch (RuntimeException e) {
      throw new AssertionError(key.key() + " = '" + raw + "': read: " + e, e);
    }
  }

  @Test
  void theSizePrinterWritesWhatTheParserReadsBack() {
    for (long n : new long[] {0, 1, 1000, 1024, 1536, 64L << 20, 1L << 30, 3L << 40, 5L << 50, Long.MAX_VALUE}) {
      assertEquals(n, Bytes.parse(Bytes.spec(n)), Bytes.spec(n));
    }
    assertEquals("64m", Bytes.spec(64L << 20));
    assertEquals("1536k", Bytes.spec(1536L << 10));
    assertEquals("0b", Bytes.spec(0));
  }
}
