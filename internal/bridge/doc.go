// Package bridge is the JNI-facing core of nativepool: everything the natives
// of org.nativepool.spark.jni.Natives do that needs neither the JVM nor C.
// jni/ converts JNI values, makes the upcalls and throws; this package holds
// the state and the rules, so that its tests run with CGO_ENABLED=0 and no
// JDK (make test does so). The contract both serve is jni/API.md.
//
// # Where each job lives
//
//	bridge.go      Bridge: the task pools (TrackConsumers over Logging over a
//	               unified pool, per task, in a taskshared.Registry), the
//	               reservation handles, reclaim, the process totals, configure
//	tasks.go       task handles: one per task pool, held by the task's Java
//	               owner, the path of Spark's spill (ReclaimTask)
//	callgate.go    callGate: the calls in flight on a task pool, which its close
//	               waits for
//	handles.go     HandleTable: generation-checked, tagged 64-bit handles
//	stats.go       the tables of poolStats0 and processStats0 (name, gauge,
//	               doc, getter), StatTables; the go:generate directive that
//	               writes their Java enums (internal/javaconsts)
//	kinds.go       the pool kinds (codes, configuration names) and the leak
//	               kinds, from which Java's PoolKind and LeakKind are generated
//	leaks.go       the leak book: every leak at task end, once, and the recent
//	               ones
//	spills.go      what engines report of their spills, for Spark's metrics
//	failure.go     Settle and Classify: which Java exception an error becomes
//	exception.go   JavaException: a Java throwable as a Go error, its global ref
//	               taken once or deleted
//	arrow.go       the Arrow batch registry: one ArrowAllocator per reservation
//	               handle, made on first use through ArrowRuntime; batch handles;
//	               ImportBatch, ExportBatch and CopyBatch run the C Data work
//	               jni hands them inside the call
//	arrow_stats.go the tables of arrowStats0 and processArrowStats0, and the
//	               lingering allocators
//	goruntime.go,  the process's own memory (below): the runtime policy, Go
//	procpeak.go    and process figures, peaks
//	guard.go       the pod guard in the process (below): ConfigureGuard, its
//	               source (the memory cgroup, or the resident set against a
//	               configured limit, and the native figures), its native side
//	               (every open task pool), episodes for guardEpisodes0
//	writeback_*.go sync(2) where there is one: the guard's writeback
//	logtask.go     LogTaskKey and LogTask: the attribute naming a record's task
//	version.go     Version, which version0 reports
//
// The pictures of the grow path and the spill path are in
// docs/ARCHITECTURE.md; what the pools promise is docs/SEMANTICS.md.
//
// # Handles
//
// Java holds 64-bit handles, never 0: a type tag, a slot and the slot's
// generation. A forged, never-issued or wrong-type handle is rejected
// (ErrInvalidHandle: IllegalArgumentException), a closed or stale one too
// (ErrStaleHandle: IllegalStateException); neither is ever dereferenced, and
// a stale handle never reaches the slot's next occupant. Four tables: pools
// (one handle per openPool0), reservations, Arrow batches and tasks.
//
// Each pool handle is one reference to the task's pool in the registry
// (explicit refcounts, compare-and-delete); the last ClosePool of a task
// closes the pool, which hands everything it holds back to Spark and reports
// leaks by consumer. That close first waits for the calls in flight on the
// pool (callGate): a TryGrow parked in Spark's 1/2N wait on another thread
// ends in the open pool, so its grant goes back with the close and is never
// reported as a leak. The pool's create issues its task handle and asks the
// OwnerFactory for the upstream (jni makes the global ref to the owner
// there, and only there); a join calls no factory. So the registry is the
// only record of which pool a task has.
//
// # Errors
//
// Every method returns what went wrong as its error, and nothing else
// carries it: a Java exception raised by an upcall (a *JavaException, made
// by jni's upstream or spiller) comes back through the pools' reporting
// forms (pool.Reservation.GrowReporting and its siblings,
// pool.Unified.ReclaimReporting, taskshared.Handle.CloseReporting), which
// move the bytes exactly as the plain forms do. Settle turns the error into
// the Failure the export throws: the first JavaException in it, rethrown as
// the original throwable, else the exception Classify names.
//
// # The process's own memory
//
// goruntime.go and procpeak.go hold the process memory policy:
// ConfigureRuntime (configureRuntime0) sets glibc's mmap threshold and the Go
// runtime's soft memory limit, Reclaim and ReclaimTask return idle Go heap to
// the OS when they free nothing (rate-limited), and ProcessStats reports the
// Go runtime's limit, baseline, mapped bytes and peak, the heap returned, the
// process's VmHWM and its memory cgroup's peak. Every call that reaches the
// Go runtime, libc or /proc goes through a ProcessRuntime (function fields),
// so the package stays pure Go (its tests run with CGO_ENABLED=0) and tests
// observe and fake each call; jni supplies mallopt.
//
// # The pod guard
//
// guard.go runs package guard's policy over the process: ConfigureGuard
// (configureGuard0) locates the memory cgroup (internal/cgroup) and starts
// one guard, woken by the kernel's threshold or pressure notifications where
// there are some. Every task pool is built with the guard's admission (a
// borrow from Spark waits while the guard makes room), and the guard's
// reactions spill the open task pools, largest first, into ballast
// (pool.Unified.ReclaimToBallast), then return the Go heap, trim malloc and
// write dirty pages back. Its figures join processStats0; its episodes are
// guardEpisodes0's records.
//
// A Bridge is safe for concurrent use; no lock is held across an upcall.
// Lock order: Bridge.mu, then the runtime state's mu; a guard's own lock is
// never held across a call into the Bridge.
package bridge
