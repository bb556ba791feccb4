package org.nativepool.spark.config;

import java.util.Locale;

/** The unified pool kinds a task can open, with their native codes and configuration names. */
public enum PoolKind {
  /**
   * Comet's default {@code fair_unified}: a fair-share check per consumer against a pool size,
   * then Spark.
   */
  FAIR_UNIFIED(0, "fair_unified"),
  /** Comet's {@code greedy_unified}: no ceiling of its own, Spark decides; the size is ignored. */
  GREEDY_UNIFIED(1, "greedy_unified");

  private final int code;
  private final String configName;

  PoolKind(int code, String configName) {
    this.code = code;
    this.configName = configName;
  }

  /** The {@code kind} argument of {@code openPool0}. */
  public int code() {
    return code;
  }

  /** The name used in {@code spark.nativepool.pool}. */
  public String configName() {
    return configName;
  }

  /**
   * Parses a configuration name ({@code fair_unified} or {@code greedy_unified}, case and
   * surrounding blanks ignored).
   *
   * @throws IllegalArgumentException for any other value, naming it and the accepted ones
   */
  public static PoolKind parse(String name) {
    if (name != null) {
      String n = name.trim().toLowerCase(Locale.ROOT);
      for (PoolKind k : values()) {
        if (k.configName.equals(n)) {
          return k;
        }
      }
    }
    throw new IllegalArgumentException(
        "nativepool: unknown pool kind '" + name + "' (expected fair_unified or greedy_unified)");
  }

  @Override
  public String toString() {
    return configName;
  }
}
