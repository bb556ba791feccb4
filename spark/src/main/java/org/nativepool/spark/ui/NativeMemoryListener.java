package org.nativepool.spark.ui;

import org.apache.spark.ExecutorLostFailure;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEnvironmentUpdate;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.nativepool.spark.config.Bytes;
import scala.Tuple2;
import scala.collection.Iterator;

/**
 * Feeds a {@link NativeMemoryTimeline} from Spark's listener bus: the plugin's events, live or
 * replayed from the event log, the tasks failed because their executor was lost, and the executors'
 * off-heap budget from the application's environment ({@code spark.memory.offHeap.enabled} and
 * {@code .size}).
 */
public class NativeMemoryListener extends SparkListener {
  private final NativeMemoryTimeline timeline;

  /** Whether any of the plugin's events came: an application without them gets no page. */
  private volatile boolean seen;

  /** A listener feeding {@code timeline}. */
  public NativeMemoryListener(NativeMemoryTimeline timeline) {
    this.timeline = timeline;
  }

  /** The timeline it feeds. */
  public NativeMemoryTimeline timeline() {
    return timeline;
  }

  /** Whether one of the plugin's events came. */
  public boolean seen() {
    return seen;
  }

  @Override
  public void onOtherEvent(SparkListenerEvent event) {
    if (event.getClass().getName().startsWith("org.nativepool.spark.events.")) {
      seen = true;
      timeline.accept(event);
    }
  }

  /** A task that failed because its executor was lost counts with that executor's end. */
  @Override
  public void onTaskEnd(SparkListenerTaskEnd event) {
    if (event.reason() instanceof ExecutorLostFailure f) {
      timeline.taskLost(f.execId(), event.stageId(), event.stageAttemptId());
    }
  }

  @Override
  public void onEnvironmentUpdate(SparkListenerEnvironmentUpdate event) {
    // an Option of a Seq, whose type differs between Scala 2.12 and 2.13: read by its iterator
    var props = event.environmentDetails().get("Spark Properties");
    if (props.isEmpty()) {
      return;
    }
    boolean enabled = false;
    long size = -1;
    Iterator<Tuple2<String, String>> it = props.get().iterator();
    while (it.hasNext()) {
      Tuple2<String, String> p = it.next();
      if (p._1().equals("spark.memory.offHeap.enabled")) {
        enabled = Boolean.parseBoolean(p._2().trim());
      } else if (p._1().equals("spark.memory.offHeap.size")) {
        try {
          size = Bytes.parse(p._2());
        } catch (IllegalArgumentException e) {
          size = -1;
        }
      }
    }
    timeline.setOffHeapBudget(enabled ? size : -1);
  }
}
