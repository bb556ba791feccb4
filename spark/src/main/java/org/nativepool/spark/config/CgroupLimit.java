package org.nativepool.spark.config;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The memory limit of this JVM's memory cgroup, read from {@code /proc/self/cgroup} and the cgroup
 * file system: the tightest of its group's and its ancestors' ({@code memory.limit_in_bytes} on
 * cgroup v1, {@code memory.max} on v2), the limit the pod guard keeps where there is one. The
 * executor checks its guard's reserve against it before it starts the guard (only the executor
 * can read it), and the driver's startup line names it in local mode, whose JVM is the executor.
 * Stateless.
 */
public final class CgroupLimit {
  /** Where the cgroup hierarchies are mounted. */
  static final Path ROOT = Path.of("/sys/fs/cgroup");

  /** A limit at or above this is none (v1's page-counter maximum). */
  private static final long NONE = 1L << 60;

  private CgroupLimit() {}

  /** The limit in bytes, or -1 when there is none or it cannot be read. */
  public static long of() {
    String self;
    try {
      self = Files.readString(Path.of("/proc/self/cgroup"), StandardCharsets.UTF_8);
    } catch (IOException | RuntimeException e) {
      return -1;
    }
    String v1 = null;
    String v2 = null;
    for (String line : self.split("\n")) {
      String[] f = line.split(":", 3); // id:controllers:path
      if (f.length != 3) {
        continue;
      }
      if (f[0].equals("0") && f[1].isEmpty()) {
        v2 = f[2];
      }
      for (String c : f[1].split(",")) {
        if (c.equals("memory")) {
          v1 = f[2];
        }
      }
    }
    if (v1 != null) {
      return tightest(ROOT.resolve("memory"), v1, "memory.limit_in_bytes");
    }
    return v2 == null ? -1 : tightest(ROOT, v2, "memory.max");
  }

  /** The least limit in {@code file} of the group at {@code path} under {@code mount} and up. */
  static long tightest(Path mount, String path, String file) {
    long least = -1;
    Path dir = mount.resolve(path.startsWith("/") ? path.substring(1) : path).normalize();
    while (dir.startsWith(mount)) {
      long l = read(dir.resolve(file));
      if (l > 0 && l < NONE && (least < 0 || l < least)) {
        least = l;
      }
      if (dir.equals(mount)) {
        break;
      }
      dir = dir.getParent();
    }
    return least;
  }

  private static long read(Path f) {
    try {
      String v = Files.readString(f, StandardCharsets.UTF_8).trim();
      return v.equals("max") ? -1 : Long.parseLong(v);
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }
}
