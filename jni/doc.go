// Package jni is the Go side of the bridge between nativepool's pools and
// Spark's TaskMemoryManager: the natives of org.nativepool.spark.NativeBridge,
// built into libnativepool.so by the command jni/libnativepool
// (go build -buildmode=c-shared). The contract with the Java module spark/
// is jni/API.md; this package implements it exactly. It is not for direct use
// from Go: Go code uses pool and taskshared.
//
// # Exported API
//
// The exports (exports.go) are Java_org_nativepool_spark_NativeBridge_<name>0
// for init0, openPool0, closePool0, newReservation0, tryGrow0, grow0,
// shrink0, free0, size0, closeReservation0, reclaim0, reclaimTask0,
// poolStats0, processStats0 and configure0. Each one converts its JNI arguments and calls
// a method of the process Bridge (bridge.go), the pure-Go core, which tests
// drive without a JVM. Pool kinds live in stats.go, with their other copy in
// NativeBridge.java; each stats array is declared once, as a table in
// stats.go or arrow_stats.go, and tests check the Java enums (PoolStat, …)
// and API.md against the tables.
//
// # Layout
//
//	np.h, np.c     every JNI call, prefix np_ (cgo's -Werror -Wall apply)
//	cgotypes.go    the C types under Go names: no Go signature says C.
//	jnienv.go      Go halves of the np_ helpers that take a JNIEnv
//	exports.go     only the //export functions
//	process.go     the process registry (the one Bridge) and call settling
//	bridge.go      the pure-Go core: pools, reservations, reclaim, stats
//	callgate.go    callGate: the calls in flight on a task pool, which its
//	               close waits for
//	handles.go     generation-checked handle tables (pure Go)
//	tasks.go       task handles: one per task pool, held by the task's owner,
//	               the path of Spark's spill (reclaimTask0)
//	taskowner.go   tells a SparkTaskUpstream candidate the task's owner
//	upstream.go    jvmUpstream: pool.Upstream over NativeUpstream
//	spiller.go     jvmSpiller: pool.Spiller over NativeSpiller
//	globalref.go   sharedRef: a global ref that upcalls use while it may close
//	exception.go   JavaException: a Java throwable as a Go error
//	failure.go     which Java exception an export throws
//	arrow.go       Arrow batches across the C Data Interface: one ffi.Allocator
//	               per reservation handle, batch handles (API.md)
//	arrow_exports.go, arrow_jni.go
//	               the Arrow natives and their JNI helpers
//	arrow_stats.go the tables of arrowStats0 and processArrowStats0, and the
//	               lingering allocators
//	arrow_validate.go, arrow_probe.go
//	               C Data addresses from Java checked before anything
//	               dereferences them, read without faulting (process_vm_readv)
//	engine.go      the Go engine API: JoinTaskPool, EngineCall and HandleTable for engines
//	               that link this package into their own c-shared library
//	testexports.go one extra native for jvm_test.go only (build tag
//	               nativepool_jvmtest): an upcall from a goroutine's own thread
//
// jvm_test.go (skipped with -short) builds the library with that tag, loads
// it into a JVM under -Xcheck:jni and runs testdata/jvm/Smoke.java against
// a minimal copy of NativeBridge: the Go side checked in a real JVM without
// the Java module.
//
// # Handles
//
// Java holds 64-bit handles, never 0: a type tag, a slot and the slot's
// generation. A forged, never-issued or wrong-type handle is rejected with
// IllegalArgumentException, a closed or stale one with
// IllegalStateException; neither is ever dereferenced, and a stale handle
// never reaches the slot's next occupant. Each openPool0 is one reference to
// the task's pool in a taskshared.Registry (explicit refcounts,
// compare-and-delete); the last closePool0 of a task closes the pool, which
// hands everything it holds back to Spark and reports leaks by consumer.
// That close first waits for the calls in flight on the pool (callGate): a
// tryGrow0 parked in Spark's 1/2N wait on another thread ends in the open
// pool, so its grant goes back with the close and is never reported as a
// leak (API.md, "Closing while calls are in flight").
//
// The open that creates a task's pool is given an owner candidate
// (SparkTaskUpstream): inside the registry's create, and only there, the
// export makes the pool's one global ref to it and stores the pool's task
// handle in it (a third handle type, removed when the pool closes), so no
// spill of the task can find the owner without its handle. A join makes no
// global ref; it only tells its candidate the registered owner
// (registeredOwner). Spark's spill of the owner's consumer is one
// reclaimTask0 through the task handle; once the pool has closed the handle
// is stale and the spill reclaims 0. So the Go registry is the only record
// of which pool a task has.
//
// # Threads and the JNIEnv
//
// Following reference/go-jni.md §3.3 and §4 (measured there):
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
//   - Method IDs are taken from the interfaces NativeUpstream and
//     NativeSpiller; classes are resolved once, in init0, on a JVM thread, by
//     FindClass inside a NativeBridge native, so with the class loader that
//     loaded NativeBridge (the application loader), never the system loader
//     an attached Go thread would get.
//   - No Go lock is held across an upcall: acquireMemory may block in Spark's
//     1/2N wait and may call spill on the same thread, which re-enters Go
//     (reclaimTask0, then shrink0 from the Java spiller). Global refs that upcalls
//     use are guarded by a use count (sharedRef), not a lock, and deleted on
//     an attached thread when their pool or reservation closes.
//
// # Exceptions and panics
//
// A Java exception raised by an upcall becomes a *JavaException, a Go error
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
// # Process rules
//
// One Go runtime per process: load the library once, from one class loader,
// and never load a second Go c-shared library into the same JVM
// (golang/go#65050, #18976). Never preload libjsig (it breaks Go's signal
// handling; the default JVM needs no flag). This package never uses
// os/signal and never starts the CPU profiler. -Xcheck:jni prints
// "handler modified" lines for the signals Go installs; they are expected.
//
// Goroutine-local storage (timandy/routine) is not used at the JNI
// boundary: a value set there would survive the call and leak into
// unrelated Java threads that later reuse the same Go M. No export sets
// taskshared's current task, and nothing is kept per goroutine or per call
// between calls.
//
// The process registry (process.go) is the only package-level state: the
// handle tables, the task-shared registry, the configure0 settings and the
// cumulative process counters, all inside one Bridge.
//
// # Build
//
// The JDK headers come from /usr/lib/jvm/java-17-openjdk-amd64 (cgotypes.go);
// on another layout set CGO_CFLAGS="-I$JAVA_HOME/include
// -I$JAVA_HOME/include/linux". The library never links libjvm: every JNI
// function is reached through the JNIEnv and JavaVM tables.
package jni
