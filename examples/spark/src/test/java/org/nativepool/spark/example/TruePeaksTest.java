package org.nativepool.spark.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TruePeaksTest {
  @TempDir Path tmp;

  private Path write(Path p, String s) throws IOException {
    Files.createDirectories(p.getParent());
    Files.writeString(p, s);
    return p;
  }

  @Test
  void cgroupV1MemoryControllerLineNamesTheDirectoryAndItsFiguresAreRead() throws IOException {
    Path dir = tmp.resolve("fs/memory/pods/demo");
    write(dir.resolve("memory.max_usage_in_bytes"), "734003200\n");
    write(dir.resolve("memory.usage_in_bytes"), "500000000\n");
    write(dir.resolve("memory.limit_in_bytes"), "9223372036854771712\n");
    write(dir.resolve("memory.stat"), "cache 1000\nrss 5\ntotal_cache 2000\ntotal_rss 420000000\n");
    long self = ProcessHandle.current().pid();
    long parent = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(self);
    write(dir.resolve("cgroup.procs"), self + "\n" + parent + "\n");
    Path proc =
        write(tmp.resolve("cgroup"), "12:pids:/x\n4:cpu,memory:/pods/demo\n1:cpu:/\n0::/\n");

    TruePeaks.Cgroup c = TruePeaks.cgroup(proc, tmp.resolve("fs"));

    assertNotNull(c);
    assertFalse(c.v2());
    assertEquals("/pods/demo", c.path());
    assertEquals(734003200L, c.peak());
    assertEquals(500000000L, c.usage());
    assertEquals(420000000L, c.anon(), "total_rss, not rss");
    assertEquals(-1, c.limit(), "v1's page-counter maximum is no limit");
    assertEquals(0, c.others(), "this JVM and its launcher are its own");
    write(dir.resolve("cgroup.procs"), self + "\n" + parent + "\n2147483646\n");
    assertEquals(1, c.others(), "a process of someone else's: shared");
  }

  @Test
  void cgroupV2IsUsedWithoutAV1MemoryControllerAndReadsPeakAnonAndMax() throws IOException {
    Path dir = tmp.resolve("fs/demo.slice");
    write(dir.resolve("memory.peak"), "300\n");
    write(dir.resolve("memory.max"), "1073741824\n");
    write(dir.resolve("memory.stat"), "anon 120\nfile 80\n");
    Path proc = write(tmp.resolve("cgroup"), "0::/demo.slice\n");

    TruePeaks.Cgroup c = TruePeaks.cgroup(proc, tmp.resolve("fs"));

    assertNotNull(c);
    assertTrue(c.v2());
    assertEquals(300, c.peak());
    assertEquals(120, c.anon());
    assertEquals(1073741824L, c.limit());
  }

  @Test
  void theRootCgroupAndAMissingPeakFileAreNoCgroup() throws IOException {
    Path root = write(tmp.resolve("root"), "4:memory:/\n0::/\n");
    assertNull(TruePeaks.cgroup(root, tmp.resolve("fs")));
    Path gone = write(tmp.resolve("gone"), "4:memory:/nowhere\n");
    assertNull(TruePeaks.cgroup(gone, tmp.resolve("fs")));
  }

  @Test
  void highWaterMarkIsAtLeastTheCurrentRss() {
    long rss = TruePeaks.rss();
    assertTrue(rss > 0);
    assertTrue(TruePeaks.highWaterMark() >= rss);
  }
}
