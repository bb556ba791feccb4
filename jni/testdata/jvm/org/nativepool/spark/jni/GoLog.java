// Test scaffolding for jni/jvm_test.go: the shape of the real GoLog's upcall (jni/API.md),
// recording each record instead of logging it.
package org.nativepool.spark.jni;

import java.util.ArrayList;
import java.util.List;

final class GoLog {
  static final List<String> records = new ArrayList<>();
  static volatile boolean throwNext;

  /** Called from native code through JNI. */
  static void log(int level, String logger, long task, String message) {
    if (throwNext) {
      throwNext = false;
      throw new IllegalStateException("the logging backend failed");
    }
    Thread me = Thread.currentThread();
    synchronized (records) {
      records.add(level + " " + logger + " " + task + " " + message + " | " + me.getName() + (me.isDaemon() ? " (daemon)" : ""));
    }
  }

  static List<String> take() {
    synchronized (records) {
      List<String> out = new ArrayList<>(records);
      records.clear();
      return out;
    }
  }
}
