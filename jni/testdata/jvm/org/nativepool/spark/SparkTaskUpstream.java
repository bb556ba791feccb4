// Test scaffolding for jni/jvm_test.go, not the real module: the task owner's fields that the Go
// side writes (np_set_task_handle, np_set_registered_owner; cached by init0) with the real
// class's names and types (spark/src/main/java/org/nativepool/spark/SparkTaskUpstream.java).
package org.nativepool.spark;

import java.util.concurrent.atomic.AtomicLong;

final class SparkTaskUpstream implements NativeUpstream {
  /** Written by Go when an open with this candidate creates the task's pool. */
  private volatile long taskHandle;
  /** Written by Go on every successful open with this candidate: the task's owner. */
  private volatile SparkTaskUpstream registeredOwner;

  final AtomicLong held = new AtomicLong();

  long taskHandle() { return taskHandle; }
  SparkTaskUpstream registeredOwner() { return registeredOwner; }

  public long acquireMemory(long n) { held.addAndGet(n); return n; }
  public void releaseMemory(long n) { held.addAndGet(-n); }
}
