// Test scaffolding for jni/jvm_test.go, not the real module: the task owner's fields that the Go
// side writes (np_set_task_handle, np_set_registered_owner; cached by init0) with the real
// class's names and types (spark/src/main/java/org/nativepool/spark/jni/TaskOwner.java).
package org.nativepool.spark.jni;

abstract class TaskOwner implements Upstream {
  /** Written by Go when an open with this candidate creates the task's pool. */
  private volatile long taskHandle;
  /** Written by Go on every successful open with this candidate: the task's owner. */
  private volatile TaskOwner registeredOwner;

  long taskHandle() { return taskHandle; }
  TaskOwner registeredOwner() { return registeredOwner; }
}
