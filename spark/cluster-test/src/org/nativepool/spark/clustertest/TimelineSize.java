package org.nativepool.spark.clustertest;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import org.apache.spark.scheduler.SparkListenerEnvironmentUpdate;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.util.JsonProtocol;
import org.nativepool.spark.ui.NativeMemoryListener;
import org.nativepool.spark.ui.NativeMemoryTimeline;

/**
 * What the Native Memory page keeps for one application, measured: replays an event log (one JSON
 * event a line, uncompressed) into a {@link NativeMemoryTimeline}, as the driver and the History
 * Server do, and prints the size of its snapshot as JSON (what the History Server stores) with the
 * number of executors and samples it holds: {@code TIMELINE bytes=... executors=... samples=...}.
 *
 * <p>Arguments: {@code <event log file>}.
 */
public final class TimelineSize {
  private TimelineSize() {}

  /**
   * Replays the event log and prints the figures.
   *
   * @param args {@code <event log file>}
   * @throws Exception if the log cannot be read or the snapshot written
   */
  public static void main(String[] args) throws Exception {
    NativeMemoryListener listener = new NativeMemoryListener(new NativeMemoryTimeline());
    List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
    for (String line : lines) {
      if (line.isBlank()) {
        continue;
      }
      SparkListenerEvent e = JsonProtocol.sparkEventFromJson(line);
      if (e instanceof SparkListenerTaskEnd t) {
        listener.onTaskEnd(t);
      } else if (e instanceof SparkListenerEnvironmentUpdate u) {
        listener.onEnvironmentUpdate(u);
      } else {
        listener.onOtherEvent(e);
      }
    }
    NativeMemoryTimeline.Snapshot s = listener.timeline().snapshot();
    int samples = 0;
    for (NativeMemoryTimeline.Snapshot.Executor x : s.executors()) {
      samples += x.times().length;
    }
    byte[] json = new ObjectMapper().writeValueAsBytes(s);
    System.out.println(
        "TIMELINE bytes="
            + json.length
            + " executors="
            + s.executors().size()
            + " samples="
            + samples);
  }
}
