package org.nativepool.spark.ledger;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The resident memory of the executor's child processes, which the JVM's own resident set does not
 * hold but its container does: the Python workers PySpark's daemon forks ({@value
 * LedgerReader#PYTHON_WORKERS}) and any other process below the JVM, a {@code pipe()} command say
 * ({@value LedgerReader#OTHER_PROCESSES}). YARN's NodeManager counts them in the container it
 * kills over, as a memory cgroup does, so the ledger counts them in its resident set and the
 * diagnosis of a lost executor can name them. Each process's {@code VmRSS} ({@code
 * /proc/<pid>/status}: anonymous, file-backed and shared pages, as YARN counts them); what a
 * process is, from its name ({@code /proc/<pid>/comm}: {@code python3}, {@code python3.11}).
 * Linux only: elsewhere, and for a process that exits while it is read, nothing. Stateless.
 */
final class ChildProcesses {
  private ChildProcesses() {}

  /**
   * The resident bytes of this JVM's descendants by ledger part: {@value
   * LedgerReader#PYTHON_WORKERS} and {@value LedgerReader#OTHER_PROCESSES}; empty without any.
   */
  static Map<String, Long> read() {
    Map<String, Long> out = new LinkedHashMap<>();
    ProcessHandle.current()
        .descendants()
        .forEach(
            p -> {
              Path proc = Path.of("/proc", Long.toString(p.pid()));
              try {
                long rss = vmRss(Files.readString(proc.resolve("status"), StandardCharsets.UTF_8));
                String comm = Files.readString(proc.resolve("comm"), StandardCharsets.UTF_8);
                if (rss >= 0) {
                  out.merge(partOf(comm), rss, Long::sum);
                }
              } catch (IOException | RuntimeException e) {
                // exited since it was listed, or not readable: nothing to count
              }
            });
    return out;
  }

  /** The ledger part a process named {@code comm} belongs to. */
  static String partOf(String comm) {
    return comm.strip().startsWith("python")
        ? LedgerReader.PYTHON_WORKERS
        : LedgerReader.OTHER_PROCESSES;
  }

  /** {@code VmRSS} of a {@code /proc/<pid>/status} in bytes, or -1 if it has none (a zombie). */
  static long vmRss(String status) {
    for (String line : status.split("\n")) {
      if (line.startsWith("VmRSS:")) {
        String[] f = line.substring("VmRSS:".length()).trim().split("\\s+");
        if (f.length == 2 && f[1].equals("kB")) {
          return Long.parseLong(f[0]) << 10;
        }
      }
    }
    return -1;
  }
}
