// Test scaffolding for jni/jvm_test.go, not the real module: a minimal copy of the natives and
// interfaces of jni/API.md, so that the Go side can be checked in a real JVM without building
// spark/ (the real classes live in spark/src/main/java/org/nativepool/spark/jni/).
package org.nativepool.spark.jni;
final class Natives {
  static native long openPool0(long taskAttemptId, int kind, long poolSize, long chunkSize, Upstream owner);
  static native void closePool0(long pool);
  static native long newReservation0(long pool, String consumerName, boolean canSpill, Spiller spiller);
  static native String tryGrow0(long res, long n);
  static native void grow0(long res, long n);
  static native void shrink0(long res, long n);
  static native long size0(long res);
  static native void closeReservation0(long res);
  static native long reclaim0(long pool, long target);
  static native long reclaimTask0(long task, long target);
  static native long[] poolStats0(long pool);
  static native long[] processStats0();
  static native long[] takeSpill0(long taskAttemptId);
  static native void configure0(boolean logging, long[] thresholds);
  static native void configureRuntime0(long mallocMmapThreshold, long goMemoryLimit, long memoryOverhead);
  static native void configureLog0(String levels);
  static native void reportLeak0(long taskAttemptId, String consumer, String kind, long bytes, long resident, String site);
  static native void leakResident0(long bytes);
  static native String recentLeaks0();
  static native String liveNative0(int max);
  static native void configureGuard0(boolean enabled, long reserve, long limit, boolean limitExplicit, boolean processTree, OffHeap offHeap);
  static native void addSpillDir0(String dir);
  static native String guardEpisodes0();
  /** Test-only: a slog record (level in slog's numbers) made on a new goroutine; task -1 = none. */
  static native void goroutineLog0(long task, int level, String message, boolean exitThread);
  /** Test-only: throws IllegalStateException("pending"), then makes a record on this thread. */
  static native void logWithPendingException0(String message);
  /** Test-only (jni/testexports.go, tag nativepool_jvmtest): tryGrow0 from a new goroutine. */
  static native String goroutineTryGrow0(long res, long n, boolean exitThread);
  /** Test-only: an unguarded Java→Go call, the floor for Bench. */
  static native long noop0(long x);
}
