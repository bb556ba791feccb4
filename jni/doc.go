//go:build cgo

// Package jni is the cgo half of the bridge between nativepool's pools and
// Spark's TaskMemoryManager: the natives of org.nativepool.spark.jni.Natives,
// built into libnativepool.so by the command jni/libnativepool
// (go build -buildmode=c-shared). The contract with the Java module spark/
// is jni/API.md. Everything here touches the JVM or C; everything that does
// not lives in the pure-Go core, internal/bridge, and the packages listed
// under Layout, whose tests run with CGO_ENABLED=0 and no JDK. It is not for
// direct use from Go: Go code uses pool and taskshared, and a Go engine
// linking the bridge into its own library uses engine.go.
// docs/ARCHITECTURE.md shows both sides' layers and the grow and spill
// paths across them; docs/SEMANTICS.md says what the pools behind the
// natives promise.
//
// # The Java side's classes
//
// All in package org.nativepool.spark.jni of the Java module:
//
//	Natives                          the natives below (static, names ending in 0)
//	Upstream                         acquireMemory(J)J, releaseMemory(J)V: a task
//	                                 pool's upstream, called back from Go
//	Spiller                          spill(J)J: a reservation's spiller, called back
//	TaskOwner                        the task's owner (abstract, implements Upstream):
//	                                 Go writes its taskHandle (J) and registeredOwner
//	                                 (Lorg/nativepool/spark/jni/TaskOwner;) fields
//	GoLog                            static log(ILjava/lang/String;JLjava/lang/String;)V,
//	                                 Go's log records
//	ArrowMemoryExhaustedException    (Ljava/lang/String;)V, thrown by copyBatch0
//
// The Java copies of the shared constants in that package (PoolStat,
// ProcessStat, ArrowStat, ArrowProcessStat, LeakKind, GoLoggers) and
// config.PoolKind are generated from the Go declarations
// (internal/javaconsts).
//
// # Exported API
//
// The exports (exports.go, arrow_exports.go, leak_exports.go) are
// Java_org_nativepool_spark_jni_Natives_<name>0. Each one converts its JNI
// arguments, calls a method of the process Bridge (exports.go; a
// *bridge.Bridge), and throws what that call returned (endCall): the
// natives hold no logic of their own.
//
// # Layout
//
// Every Go file here needs cgo (it says import "C"); what needs neither the
// JVM nor C lives in packages of its own under internal/, whose tests run
// with CGO_ENABLED=0 (make test-go lists them).
//
//	np.h, np.c        every JNI call, prefix np_ (cgo's -Werror -Wall apply)
//	cgotypes.go       the C types under Go names: no Go signature says C.
//	jnienv.go         Go halves of the np_ helpers that take a JNIEnv, the
//	                  throw of a bridge.Failure, and endCall, which settles
//	                  every native method
//	exports.go        the process registry (the one Bridge) and the //export
//	                  functions of pools and reservations
//	arrow_exports.go  the //export functions of Arrow batches, over
//	                  internal/arrowruntime
//	arrow_jni.go      the Arrow natives' JNI helpers (the refusal exception)
//	leak_exports.go   the //export functions of leaks and live native memory
//	upstream.go       jvmUpstream: pool.Upstream over Upstream (upcalls)
//	spiller.go        jvmSpiller: pool.Spiller over Spiller (upcall)
//	taskowner.go      tells a TaskOwner candidate the task's owner
//	engine.go         the Go engine API: JoinTaskPool, ReportSpill,
//	                  TrackAllocator, EngineCall, JavaString, NewJavaLongArray
//	                  and HandleTable, for engines that link this package into
//	                  their own library
//	log.go, np_log.c  the process's log router and its sink: GoLog.log
//	                  through np_log; Logger and TaskAttr for engines
//	malloc.go         glibc's mallopt and mallinfo2 for the process runtime
//	testexports.go    extra natives for jvm_test.go only (build tag
//	                  nativepool_jvmtest): an upcall from a goroutine's own
//	                  thread, a log record from one, the call floor
//	libnativepool/    the c-shared main
//
// The pure-Go halves:
//
//	internal/bridge        the Bridge: pools, reservations, task handles,
//	                       reclaim, stats tables, failure mapping, JavaException,
//	                       the Arrow batch registry
//	internal/logsink       the log router: slog records to SLF4J loggers per
//	                       package, levels, text and task (tested with a fake
//	                       sink)
//	internal/sharedref     a global ref that upcalls use while its owner may
//	                       close it (a use count, not a lock)
//	internal/cdatacheck    C Data addresses from Java checked before anything
//	                       dereferences them, read without faulting
//	                       (process_vm_readv)
//	internal/arrowruntime  ffi's allocator as the registry's ArrowAllocator,
//	                       and the C Data import, export and copy it runs
//	                       (needs cgo through ffi, but no JVM)
//	internal/engineapi     the engine API's errors, their Java exceptions, the
//	                       HandleTable and the join of a task pool
//
// jvm_test.go (skipped with -short) builds the library with that tag, loads
// it into a JVM under -Xcheck:jni and runs testdata/jvm/.../jni/Smoke.java against
// minimal copies of the classes above: the Go side checked in a real JVM
// without the Java module.
//
// # The open of a task's pool
//
// The open that creates a task's pool is given an owner candidate
// (a TaskOwner): inside the registry's create, and only there, the
// export makes the pool's one global ref to it and stores the pool's task
// handle in it, so no spill of the task can find the owner without its
// handle. A join makes no global ref; it only tells its candidate the
// registered owner (registeredOwner). Spark's spill of the owner's consumer
// is one reclaimTask0 through the task handle.
//
// # Threads and the JNIEnv
//
// A JNIEnv is valid only on its thread and during the native call that
// received it, and a goroutine may move between OS threads between two cgo
// calls; so:
//
//   - An export uses the JNIEnv it was given, only on its own goroutine
//     (cgo keeps it on the calling JVM thread for the whole call).
//   - Every upcall (acquireMemory, releaseMemory, spill) is one C call,
//     np_acquire / np_release / np_spill, that does GetEnv, attaches the
//     thread as a daemon (AttachCurrentThreadAsDaemon, "nativepool-go") if
//     the JVM does not know it, makes the call, and takes, globalises and
//     clears any exception. The goroutine cannot migrate inside it, so no
//     LockOSThread is needed and no JNIEnv is ever cached in Go. A
//     pthread_key destructor detaches such a thread when it exits, so the
//     JVM keeps no zombie java.lang.Thread.
//   - Method IDs are taken from the interfaces Upstream and Spiller; classes
//     are resolved once, in init0, on a JVM thread, by FindClass inside a
//     native of Natives, so with the class loader that loaded Natives (the
//     application loader), never the system loader an attached Go thread
//     would get.
//   - No Go lock is held across an upcall: acquireMemory may block in Spark's
//     1/2N wait and may call spill on the same thread, which re-enters Go
//     (reclaimTask0, then shrink0 from the Java spiller). Global refs that
//     upcalls use are guarded by a use count (internal/sharedref), not a
//     lock, and deleted on an attached thread when their pool or reservation
//     closes.
//
// # Exceptions and panics
//
// A Java exception raised by an upcall becomes a *bridge.JavaException, a Go error
// that is not pool.ErrResourcesExhausted and that keeps a global ref to the
// original throwable. It travels back to the export as (part of) the error
// of the Bridge call that made the upcall, by return value only: where the
// pool's plain forms would swallow it (Grow turns a failed acquire into
// overcommit; a failed release is kept owed; a failed spiller is skipped),
// the Bridge calls the reporting forms (pool.Reservation.GrowReporting,
// ShrinkReporting, FreeReporting, CloseReporting,
// pool.Unified.ReclaimReporting, taskshared.Handle.CloseReporting), which
// move the bytes exactly as the plain forms and return the failure. The
// export rethrows exactly that throwable (Throw, then DeleteGlobalRef), so
// an InterruptedException from Spark's task kill or a SparkOutOfMemoryError
// reaches Java unchanged; other exceptions in the same error are discarded,
// and one dropped on the way (the pool logs a failed release of surplus
// slack after a successful tryGrow0 and goes on) has its ref deleted by a
// cleanup once unreachable.
//
// Every export begins with a deferred recover: a Go panic becomes
// RuntimeException("nativepool: panic: …") (and a slog error with the
// stack); no panic crosses into the JVM.
//
// # Logs
//
// Once the plugin has called configureLog0, every slog record of the
// process goes to org.nativepool.spark.jni.GoLog and through SLF4J
// (internal/logsink): the process Bridge logs through the router, and the
// router is slog's default handler (so engines' and ffi's default loggers,
// and the log package, follow). The logger is named after the Go package
// of the record's PC (pool → org.nativepool.pool, internal/bridge →
// org.nativepool.bridge, an engine's package x → org.nativepool.engine.x);
// its attributes follow the message as key=value; a top-level int64
// attribute "task" (bridge.LogTaskKey, TaskAttr) becomes the record's task,
// which Java prints with the stage and partition it knows. Every task pool
// logs with that attribute, so records made on goroutines and attached
// threads name their task.
//
// Levels are Java's, computed once at configureLog0 from each logger's
// effective SLF4J level: Enabled is one atomic load and a comparison with
// the lowest of them, and Handle drops a record below its own logger's
// level, so a disabled record never makes an upcall. The upcall (np_log)
// is one C call like the others (GetEnv, attach if needed); it never
// leaves an exception behind, does not touch the JVM while an exception is
// pending on the thread, and GoLog.log never calls native code, so a
// record made under a pool's lock cannot deadlock. A record Java did not
// take is written to stderr. Before configureLog0 records go to slog's
// default handler, as in a process without a JVM.
//
// # Process rules
//
// One Go runtime per process: load the library once, from one class loader,
// and never load a second Go c-shared library into the same JVM
// (golang/go#65050, #18976). Never preload libjsig (it breaks Go's signal
// handling; the default JVM needs no flag). This package never uses
// os/signal and never starts the CPU profiler. -Xcheck:jni prints
// "handler modified" lines for the signals Go installs; they are expected.
//
// Goroutine-local storage (timandy/routine) is not kept across the JNI
// boundary: a value set there would survive the call and leak into
// unrelated Java threads that later reuse the same Go M. No export of this
// package sets taskshared's current task, and nothing is kept per goroutine
// or per call between calls. An engine's export may make its task current
// for the duration of the call through taskshared.Run, which clears it on
// return (examples/spark/native/task.go).
//
// The library sets the process's allocator behaviour itself, never through
// the user's environment: configureRuntime0 calls
// mallopt(M_MMAP_THRESHOLD, n) (malloc.go; default 128 KiB from the plugin's
// spark.nativepool.mallocMmapThreshold), which also stops glibc raising the
// threshold (and the trim threshold) after large frees, then resets the
// trim threshold to glibc's default 128 KiB (frees before the plugin started
// may have raised it), so memory the JVM and native libraries free leaves
// the resident set. 0 leaves glibc alone,
// and a MALLOC_MMAP_THRESHOLD_ the user exported wins (the log says so).
// mallopt is process-wide and cannot be undone. The same call sets the Go
// runtime's soft memory limit (debug.SetMemoryLimit; default: the Go
// baseline measured at init0 plus memoryOverhead / 8), and a spill request
// that frees nothing returns idle Go heap (debug.FreeOSMemory, at most once
// a second). The Bridge reaches all of these through
// bridge.ProcessRuntime, which tests replace.
//
// The process registry (exports.go) is the only package-level state: the
// handle tables, the task-shared registry, the configure0 settings and the
// cumulative process counters, all inside one bridge.Bridge, and the log
// router (processLog), which configureLog0 makes slog's default handler.
//
// # Build
//
// The JDK headers come from /usr/lib/jvm/java-17-openjdk-amd64 (cgotypes.go);
// on another layout set CGO_CFLAGS="-I$JAVA_HOME/include
// -I$JAVA_HOME/include/linux". The library never links libjvm: every JNI
// function is reached through the JNIEnv and JavaVM tables.
package jni
