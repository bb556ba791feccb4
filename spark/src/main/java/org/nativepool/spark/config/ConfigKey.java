package org.nativepool.spark.config;

import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.apache.spark.SparkConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One configuration key, declared once in {@link NativePoolConf}: its name, its default as an
 * operator writes it, its unit, what it does, which side reads it, and the parser that turns a
 * value into {@code T}. The settings views ({@link PoolSettings}, {@link ReportingSettings},
 * {@link LedgerSettings}) read every key through {@link #read}, and the table of
 * docs/CONFIGURATION.md is rendered from the same declarations ({@link
 * NativePoolConf#markdownTable()}), so a key, its default and its documentation cannot disagree.
 *
 * <p>Immutable and safe for concurrent use.
 *
 * @param <T> what the value parses to
 */
public final class ConfigKey<T> {
  private static final Logger LOG = LoggerFactory.getLogger(ConfigKey.class);

  /** Deprecated keys already warned about in this JVM: one warning each. */
  private static final java.util.Set<String> WARNED = ConcurrentHashMap.newKeySet();

  /** Which side of the plugin reads a key. */
  public enum Side {
    /** Read by every executor's plugin (in local mode, the driver's JVM is the executor). */
    EXECUTOR,
    /** Read by the driver's plugin only. */
    DRIVER,
    /** Read by both sides. */
    BOTH
  }

  private final String key;
  private final String defaultText;
  private final String defaultDoc;
  private final String unit;
  private final String doc;
  private final Side side;
  private final Function<String, T> parser;
  private final String deprecatedKey;

  /**
   * @param key the full key, {@code spark.nativepool.…}
   * @param defaultText the value used when the key is unset, as an operator would write it ({@code
   *     null}: the parser is given {@code null} and derives the default itself)
   * @param defaultDoc the default as the configuration table states it (e.g. "unset: derived")
   * @param unit what a value is (e.g. "size", "boolean")
   * @param doc what the key does, one paragraph of Markdown
   * @param side which plugin side reads it
   * @param parser turns a trimmed value (or {@code null} when unset and {@code defaultText} is
   *     null) into {@code T}; throws {@link IllegalArgumentException} with the reason
   */
  ConfigKey(
      String key,
      String defaultText,
      String defaultDoc,
      String unit,
      String doc,
      Side side,
      Function<String, T> parser,
      String deprecatedKey) {
    this.deprecatedKey = deprecatedKey;
    this.key = Objects.requireNonNull(key, "key");
    this.defaultText = defaultText;
    this.defaultDoc = Objects.requireNonNull(defaultDoc, "defaultDoc");
    this.unit = Objects.requireNonNull(unit, "unit");
    this.doc = Objects.requireNonNull(doc, "doc");
    this.side = Objects.requireNonNull(side, "side");
    this.parser = Objects.requireNonNull(parser, "parser");
  }

  /** The full key, e.g. {@code spark.nativepool.chunkSize}. */
  public String key() {
    return key;
  }

  /** The default as an operator writes it, or null when the default is derived. */
  public String defaultText() {
    return defaultText;
  }

  /** The default as the documentation states it. */
  public String defaultDoc() {
    return defaultDoc;
  }

  /** What a value is: size, boolean, duration, … */
  public String unit() {
    return unit;
  }

  /** What the key does (Markdown). */
  public String doc() {
    return doc;
  }

  /** Which side of the plugin reads the key. */
  public Side side() {
    return side;
  }

  /**
   * The key this one replaced, still read (with a warning) when this one is unset; null if none.
   */
  public String deprecatedKey() {
    return deprecatedKey;
  }

  /**
   * The value of this key in {@code conf}, else of its {@link #deprecatedKey()} (logged once as
   * deprecated), else its default.
   *
   * @throws IllegalArgumentException naming the key and the value, when the value does not parse
   *     or is out of range
   */
  public T read(SparkConf conf) {
    String raw = conf.getOption(key).getOrElse(() -> null);
    if (raw == null && deprecatedKey != null && conf.contains(deprecatedKey)) {
      String old = conf.get(deprecatedKey);
      if (WARNED.add(deprecatedKey + "->" + key)) {
        LOG.warn(
            "nativepool: {} is deprecated; its value {} is read as {}, set that instead",
            deprecatedKey,
            old,
            key);
      }
      try {
        return parse(old);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            e.getMessage().replace(key, deprecatedKey + " (read as " + key + ")"), e);
      }
    }
    return parse(raw);
  }

  /**
   * Parses {@code raw} as a value of this key ({@code null}: unset, the default applies).
   *
   * @throws IllegalArgumentException naming the key and the value, when it does not parse or is
   *     out of range
   */
  public T parse(String raw) {
    String v = raw == null ? defaultText : raw.trim();
    try {
      return parser.apply(v);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "nativepool: " + key + " = '" + (raw == null ? defaultText : raw) + "': " + e.getMessage(),
          e);
    }
  }

  @Override
  public String toString() {
    return key;
  }
}
