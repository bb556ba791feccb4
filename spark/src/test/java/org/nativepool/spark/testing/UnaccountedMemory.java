package org.nativepool.spark.testing;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Memory nobody accounts for, for the pod guard's tests: blocks of {@code
 * Unsafe.allocateMemory} with every page touched, as a JVM's unaccounted native memory grows in
 * an executor (no budget sees it, the memory cgroup does); and the figure the guard holds against
 * its limit. {@code sun.misc.Unsafe} is taken by reflection (no compile-time reference to an
 * internal API). Not thread-safe: one test thread takes and frees.
 */
public final class UnaccountedMemory {
  private final Object unsafe;
  private final Method allocate;
  private final Method set;
  private final Method release;
  private final List<Long> blocks = new ArrayList<>();

  /** Nothing taken yet. */
  public UnaccountedMemory() throws ReflectiveOperationException {
    Class<?> c = Class.forName("sun.misc.Unsafe");
    Field f = c.getDeclaredField("theUnsafe");
    f.setAccessible(true);
    unsafe = f.get(null);
    allocate = c.getMethod("allocateMemory", long.class);
    set = c.getMethod("setMemory", long.class, long.class, byte.class);
    release = c.getMethod("freeMemory", long.class);
  }

  /** Takes {@code bytes} more and touches every page, so that they are resident at once. */
  public void take(long bytes) throws ReflectiveOperationException {
    long addr = (Long) allocate.invoke(unsafe, bytes);
    blocks.add(addr);
    set.invoke(unsafe, addr, bytes, (byte) 1);
  }

  /** Frees every block; idempotent. */
  public void free() throws ReflectiveOperationException {
    for (long addr : blocks) {
      release.invoke(unsafe, addr);
    }
    blocks.clear();
  }

  /**
   * {@code RssAnon + RssShmem} of /proc/self/status: what the pod guard holds against its limit.
   *
   * @throws IOException if /proc/self/status cannot be read
   * @throws IllegalStateException if it has no {@code RssAnon}
   */
  public static long residentAnonAndShmem() throws IOException {
    long kib = 0;
    for (String l : Files.readAllLines(Path.of("/proc/self/status"), StandardCharsets.UTF_8)) {
      if (l.startsWith("RssAnon:") || l.startsWith("RssShmem:")) {
        kib += Long.parseLong(l.replaceAll("[^0-9]", ""));
      }
    }
    if (kib <= 0) {
      throw new IllegalStateException("no RssAnon in /proc/self/status");
    }
    return kib << 10;
  }
}
