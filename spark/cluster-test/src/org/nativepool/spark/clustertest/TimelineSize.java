package org.nativepool.spark.clustertest;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
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
 * number of executors and samples it holds, and what one such timeline takes of the heap (measured
 * over {@value #COPIES} copies, after a full collection each side): {@code TIMELINE bytes=...
 * heapBytes=... executors=... samples=...}.
 *
 * <p>Arguments: {@code <event log file>}.
 */
public final class TimelineSize {
  /** Timelines held at once to measure one's heap. */
  static final int COPIES = 200;

  private TimelineSize() {}

  private static NativeMemoryListener replay(List<SparkListenerEvent> events) {
    NativeMemoryListener listener = new NativeMemoryListener(new NativeMemoryTimeline());
    for (SparkListenerEvent e : events) {
      if (e instanceof SparkListenerTaskEnd t) {
        listener.onTaskEnd(t);
      } else if (e instanceof SparkListenerEnvironmentUpdate u) {
        listener.onEnvironmentUpdate(u);
      } else {
        listener.onOtherEvent(e);
      }
    }
    return listener;
  }

  private static long heapUsed() {
    Runtime rt = Runtime.getRuntime();
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    return rt.totalMemory() - rt.freeMemory();
  }

  /**
   * Replays the event log and prints the figures.
   *
   * @param args {@code <event log file>}
   * @throws Exception if the log cannot be read or the snapshot written
   */
  public static void main(String[] args) throws Exception {
    List<SparkListenerEvent> events = new ArrayList<>();
    for (String line : Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8)) {
      if (!line.isBlank()) {
        events.add(JsonProtocol.sparkEventFromJson(line));
      }
    }
    NativeMemoryListener listener = replay(events);
    long before = heapUsed();
    List<NativeMemoryListener> copies = new ArrayList<>();
    for (int i = 0; i < COPIES; i++) {
      copies.add(replay(events));
    }
    long heap = (heapUsed() - before) / copies.size();
    NativeMemoryTimeline.Snapshot s = listener.timeline().snapshot();
    int samples = 0;
    for (NativeMemoryTimeline.Snapshot.Executor x : s.executors()) {
      samples += x.times().length;
    }
    byte[] json = new ObjectMapper().writeValueAsBytes(s);
    System.out.println(
        "TIMELINE bytes="
            + json.length
            + " heapBytes="
            + heap
            + " executors="
            + s.executors().size()
            + " samples="
            + samples);
  }
}
