package org.nativepool.spark.config;

import java.util.Locale;

/** What {@code spark.nativepool.guard.enabled} says: whether the pod guard runs, and where. */
public enum GuardMode {
  /** On where a limit is known: a cgroup's, or the container size on YARN and Kubernetes. */
  AUTO("auto"),
  /** On, with the container size as the limit wherever no cgroup limit is found. */
  ON("true"),
  /** Off. */
  OFF("false");

  private final String word;

  GuardMode(String word) {
    this.word = word;
  }

  /** The value as an operator writes it: {@code auto}, {@code true} or {@code false}. */
  public String word() {
    return word;
  }

  /**
   * Parses a value of {@code spark.nativepool.guard.enabled}, in any case.
   *
   * @throws IllegalArgumentException for anything but {@code auto}, {@code true} or {@code false}
   */
  public static GuardMode parse(String v) {
    String w = v == null ? "" : v.trim().toLowerCase(Locale.ROOT);
    for (GuardMode m : values()) {
      if (m.word.equals(w)) {
        return m;
      }
    }
    throw new IllegalArgumentException("not auto, true or false");
  }
}
