package org.nativepool.spark.ledger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The ledger's parts for the JVM's child processes, read from /proc. */
class ChildProcessesTest {
  @Test
  void aPythonProcessIsAWorkerAndAnyOtherAnOtherProcess() {
    assertEquals(LedgerReader.PYTHON_WORKERS, ChildProcesses.partOf("python3\n"));
    assertEquals(LedgerReader.PYTHON_WORKERS, ChildProcesses.partOf("python3.11"));
    assertEquals(LedgerReader.OTHER_PROCESSES, ChildProcesses.partOf("bash\n"));
  }

  @Test
  void vmRssIsReadInBytesAndAbsentForAZombie() {
    assertEquals(
        123L << 10, ChildProcesses.vmRss("Name:\tpython3\nVmPeak:\t 9 kB\nVmRSS:\t     123 kB\n"));
    assertEquals(-1, ChildProcesses.vmRss("Name:\tpython3\nState:\tZ (zombie)\n"));
  }

  /** A Python child holding a 64 MiB bytearray shows in python.workers with at least that. */
  @Test
  void aPythonChildHoldingMemoryIsCountedAsAWorker() throws IOException, InterruptedException {
    assumeTrue(Files.isDirectory(Path.of("/proc/self")), "no /proc");
    Path ready = Files.createTempFile("nativepool-child", ".ready");
    Process p;
    try {
      p =
          new ProcessBuilder(
                  "python3",
                  "-c",
                  "import sys, time\n"
                      + "b = bytearray(64 << 20)\n"
                      + "for i in range(0, len(b), 4096): b[i] = 1\n"
                      + "open(sys.argv[1], 'w').write('ok')\n"
                      + "time.sleep(60)\n",
                  ready.toString())
              .start();
    } catch (IOException e) {
      assumeTrue(false, "no python3: " + e);
      return;
    }
    try {
      for (int i = 0; i < 300 && Files.size(ready) == 0; i++) {
        Thread.sleep(100);
      }
      Map<String, Long> parts = ChildProcesses.read();
      assertTrue(
          parts.getOrDefault(LedgerReader.PYTHON_WORKERS, 0L) >= 64L << 20, parts::toString);
    } finally {
      p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      Files.deleteIfExists(ready);
    }
  }
}
