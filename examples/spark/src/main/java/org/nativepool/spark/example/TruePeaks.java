package org.nativepool.spark.example;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The process's true peaks, kept by the kernel rather than sampled: {@code VmHWM} of {@code
 * /proc/self/status} (reset to the current RSS by {@link #resetHighWaterMark}, through {@code
 * /proc/self/clear_refs}), and, when the JVM is in a memory cgroup of its own, the cgroup's peak
 * ({@code memory.max_usage_in_bytes} on cgroup v1, {@code memory.peak} on v2) with its anonymous
 * memory ({@code total_rss} of v1's {@code memory.stat}, {@code anon} of v2's; current figures,
 * which the demo's sampler keeps the highest of).
 *
 * <p>A cgroup's usage counts the page cache of the files its processes write (Spark's and the
 * sorter's spill files), so its peak is an upper bound of what the JVM itself held; its anonymous
 * memory is not. A cgroup shared with other processes than the JVM's own ({@link Cgroup#others})
 * is not reported, nor is the root cgroup ({@code /}): it is the whole machine or the
 * container, shared with other processes.
 */
final class TruePeaks {
  private TruePeaks() {}

  /** A memory cgroup the process is in. */
  record Cgroup(Path dir, String path, boolean v2) {
    /** The kernel's peak usage (page cache included) since creation or the last reset, or -1. */
    long peak() {
      return readLong(dir.resolve(v2 ? "memory.peak" : "memory.max_usage_in_bytes"));
    }

    /** Usage now, page cache included, or -1. */
    long usage() {
      return readLong(dir.resolve(v2 ? "memory.current" : "memory.usage_in_bytes"));
    }

    /** Anonymous memory now (v1 {@code total_rss}, v2 {@code anon}), or -1. */
    long anon() {
      return statField(dir.resolve("memory.stat"), v2 ? "anon" : "total_rss");
    }

    /** The limit, or -1 when there is none ("max", or v1's page-counter maximum). */
    long limit() {
      long l = readLong(dir.resolve(v2 ? "memory.max" : "memory.limit_in_bytes"));
      return l >= (1L << 60) ? -1 : l;
    }

    /**
     * Processes in the cgroup now that are not this JVM, one of its ancestors (the shell or init
     * that launched it) or one of its descendants, or -1 if unreadable: a cgroup holding any is
     * shared with other processes, and its peak says nothing of this JVM (the plugin's {@code
     * cgroupPeak} gauge follows the same rule).
     */
    int others() {
      java.util.Set<Long> own = new java.util.HashSet<>();
      ProcessHandle self = ProcessHandle.current();
      own.add(self.pid());
      for (ProcessHandle p = self.parent().orElse(null); p != null; p = p.parent().orElse(null)) {
        own.add(p.pid());
      }
      self.descendants().forEach(d -> own.add(d.pid()));
      try {
        return (int)
            Files.readAllLines(dir.resolve("cgroup.procs")).stream()
                .filter(l -> !l.isBlank())
                .filter(l -> !own.contains(Long.parseLong(l.trim())))
                .count();
      } catch (IOException | NumberFormatException e) {
        return -1;
      }
    }

    /**
     * Resets the peak to the current usage (v1: writing 0 to {@code memory.max_usage_in_bytes};
     * v2: writing to {@code memory.peak}, kernel 6.12 or later); false if not allowed.
     */
    boolean resetPeak() {
      try {
        Files.writeString(dir.resolve(v2 ? "memory.peak" : "memory.max_usage_in_bytes"), v2 ? "reset\n" : "0\n");
        return true;
      } catch (IOException | RuntimeException e) {
        return false;
      }
    }
  }

  /**
   * Resets {@code VmHWM} to the current RSS ({@code echo 5 > /proc/self/clear_refs}); false if
   * the kernel does not allow it, and then {@code VmHWM} is the process's lifetime peak.
   */
  static boolean resetHighWaterMark() {
    try {
      Files.writeString(Path.of("/proc/self/clear_refs"), "5\n");
      return true;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /** {@code VmHWM} of {@code /proc/self/status} in bytes, or -1. */
  static long highWaterMark() {
    return statusField("VmHWM:");
  }

  /** {@code VmRSS} of {@code /proc/self/status} in bytes, or -1. */
  static long rss() {
    return statusField("VmRSS:");
  }

  /** {@code RssAnon} of {@code /proc/self/status} in bytes, or -1. */
  static long rssAnon() {
    return statusField("RssAnon:");
  }

  private static long statusField(String name) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith(name)) {
          String[] f = line.substring(name.length()).trim().split("\\s+");
          return Long.parseLong(f[0]) * 1024; // "kB"
        }
      }
    } catch (IOException | NumberFormatException e) {
      return -1;
    }
    return -1;
  }

  /**
   * The memory cgroup of this process, or null: none, the root, or not readable. cgroup v1's
   * {@code memory} controller line of {@code /proc/self/cgroup} wins over v2's {@code 0::}.
   */
  static Cgroup cgroup() {
    return cgroup(Path.of("/proc/self/cgroup"), Path.of("/sys/fs/cgroup"));
  }

  /** {@link #cgroup()} over the given files (for tests). */
  static Cgroup cgroup(Path procCgroup, Path mount) {
    List<String> lines;
    try {
      lines = Files.readAllLines(procCgroup, StandardCharsets.UTF_8);
    } catch (IOException e) {
      return null;
    }
    String v1 = null, v2 = null;
    for (String line : lines) {
      String[] f = line.split(":", 3);
      if (f.length < 3) {
        continue;
      }
      if (List.of(f[1].split(",")).contains("memory")) {
        v1 = f[2];
      } else if (f[0].equals("0") && f[1].isEmpty()) {
        v2 = f[2];
      }
    }
    if (v1 != null) {
      return usable(mount.resolve("memory"), v1, false);
    }
    return v2 == null ? null : usable(mount, v2, true);
  }

  private static Cgroup usable(Path root, String path, boolean v2) {
    if (path.equals("/") || path.isEmpty()) {
      return null;
    }
    Path dir = root.resolve(path.substring(1));
    Cgroup c = new Cgroup(dir, path, v2);
    return c.peak() >= 0 ? c : null;
  }

  static long readLong(Path p) {
    try {
      String s = Files.readString(p).trim();
      return s.equals("max") ? Long.MAX_VALUE : Long.parseLong(s);
    } catch (IOException | NumberFormatException e) {
      return -1;
    }
  }

  static long statField(Path p, String name) {
    try {
      for (String line : Files.readAllLines(p)) {
        String[] f = line.split("\\s+");
        if (f.length == 2 && f[0].equals(name)) {
          return Long.parseLong(f[1]);
        }
      }
    } catch (IOException | NumberFormatException e) {
      return -1;
    }
    return -1;
  }
}
