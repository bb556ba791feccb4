package org.nativepool.spark.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The lines of the uncompressed event logs Spark writes under a directory, in either layout: a
 * rolled log, {@code eventlog_v2_<appId>/events_<n>_<appId>} beside an empty {@code
 * appstatus_<appId>} marker (the default from Spark 4.0 on), or one file per application, {@code
 * <appId>} or {@code <appId>.inprogress} (Spark 3.5's default). Hidden files (Hadoop's {@code .crc}
 * checksums) and the markers are skipped, and so is a last line not yet ended by a newline (a
 * buffer flushed in the middle of it).
 */
public final class EventLogs {
  private EventLogs() {}

  /** Every complete line of every event log under {@code dir}, file by file in name order. */
  public static List<String> lines(Path dir) {
    List<String> out = new ArrayList<>();
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f : files.filter(Files::isRegularFile).sorted().toList()) {
        if (isEventLog(dir, f)) {
          String text = Files.readString(f, StandardCharsets.UTF_8);
          int end = text.lastIndexOf('\n');
          if (end >= 0) {
            out.addAll(text.substring(0, end).lines().toList());
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  private static boolean isEventLog(Path dir, Path f) {
    String name = f.getFileName().toString();
    if (name.startsWith(".") || name.startsWith("appstatus_")) {
      return false;
    }
    if (name.startsWith("events_")) {
      return true; // a rolled log's part
    }
    return f.getParent().equals(dir); // a single-file log
  }
}
