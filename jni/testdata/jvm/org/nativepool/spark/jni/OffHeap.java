// Test scaffolding for jni/jvm_test.go, not the real module: a minimal copy of the natives and
// interfaces of jni/API.md, so that the Go side can be checked in a real JVM without building
// spark/ (the real classes live in spark/src/main/java/org/nativepool/spark/jni/).
package org.nativepool.spark.jni;
public interface OffHeap { long take(long n, long nativeHeld); long keep(long n); void giveBack(long n); long free(); }
