package jni

/*
#include "np.h"
*/
import "C"

import (
	"unsafe"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/internal/arrowruntime"
	"github.com/nativepool/nativepool/internal/engineapi"
	"github.com/nativepool/nativepool/taskshared"
)

// The Go engine API: what a query engine written in Go needs when it links
// nativepool into its own c-shared library instead of loading
// libnativepool.so beside it (one Go runtime per process, see doc.go). Such
// a library imports this package, which brings every native of
// org.nativepool.spark.jni.Natives and the process registry with it, so the
// Java module (memory.TaskPool, memory.Reservation, the plugin) works
// unchanged against it; the engine adds natives of its own on its own Java
// classes.
// examples/spark/native is one.
//
// The engine's natives live in another Go package, whose cgo types are not
// this package's: the JNIEnv crosses as an unsafe.Pointer and JNI references
// as uintptr (cgo represents jobject and its family as uintptr). The parts
// that need no JVM live in internal/engineapi; this file puts them on the
// process's Bridge and adds what needs the JNIEnv.

// Errors an engine's native method wraps to choose the Java exception its
// EngineCall.End throws. Without them a plain error becomes
// RuntimeException; pool.ErrInvalidSize still becomes
// IllegalArgumentException and pool.ErrClosed IllegalStateException, as for
// the natives of Natives (jni/API.md).
var (
	// ErrIllegalArgument: java.lang.IllegalArgumentException (a bad handle,
	// size or argument from Java).
	ErrIllegalArgument = engineapi.ErrIllegalArgument
	// ErrIllegalState: java.lang.IllegalStateException (a closed handle, a
	// call in the wrong phase).
	ErrIllegalState = engineapi.ErrIllegalState
)

// JoinTaskPool returns a new reference to the pool of task taskAttemptID,
// which Java must have opened (TaskPool.open, openPool0) and not yet
// closed: the engine's consumers register with Pool() of the returned
// handle and so borrow from the task's TaskMemoryManager, are counted in
// poolStats0 and processStats0, and are asked to spill when Spark spills
// the task's native consumer (their pool.Spiller).
//
// The reference is one more handle of the task in the task-shared registry,
// exactly like a second openPool0 of the same task: the pool stays open
// until it and every Java pool handle are closed, and the last of them
// closes it (everything still reserved goes back to Spark and is reported
// as a leak). Close it before the task's owner (the Java TaskOwner) closes,
// that is from a task completion listener registered after the task's
// TaskPool was opened (listeners run in reverse order), or earlier.
//
// It fails with an error wrapping ErrIllegalState if the task has no open
// pool; nothing is then created. Safe for concurrent use.
//
// Java's TaskPool keeps its pool handle to itself, so an engine names the
// task by its attempt id (TaskContext.taskAttemptId()), the key Java opened
// the pool under; the registry's compare-and-delete makes a join racing
// with the last close either share the live pool or fail, never revive a
// closed one.
func JoinTaskPool(taskAttemptID int64) (*taskshared.Handle, error) {
	return engineapi.JoinTaskPool(process, taskAttemptID)
}

// ReportSpill tells Spark's task metrics about a spill of the engine on the
// task of h, a handle from JoinTaskPool that is still open: disk is the
// bytes the spill wrote (counted as the task's diskBytesSpilled), memory
// the bytes a spill the engine started itself freed, for instance after its
// pool refused a grow (counted as memoryBytesSpilled, as Spark's own
// sorters count every spill). Pass memory 0 from a pool.Spiller the pool
// called (Spark's spill of the task): the bytes that spill releases to
// Spark are already counted by the plugin. The Java side adds the sums to
// the task's metrics after each Spark spill of the task and when the task
// ends, so report before closing h. A negative size wraps
// pool.ErrInvalidSize, a nil handle pool.ErrClosed; nothing is recorded
// then. Safe for concurrent use.
func ReportSpill(h *taskshared.Handle, memory, disk int64) error {
	return process.ReportSpill(h, memory, disk)
}

// TrackAllocator counts a, an Arrow allocator the engine made itself over a
// reservation of a joined task pool, in the executor memory ledger: its live
// buffers are part of native.allocated (processArrowStats0 ALLOCATED) and
// LiveNative names them under consumer (and, with allocation sites on, their
// sites). Call the returned untrack when the engine closes a (before or
// after Close; once is enough, more do nothing). The library never closes a:
// its leak report stays the engine's. Safe for concurrent use.
func TrackAllocator(consumer string, a *ffi.Allocator) (untrack func()) {
	return process.TrackAllocator(consumer, arrowruntime.Wrap(a))
}

// EngineCall is one native method of an engine in progress. Begin it first
// thing in the export and end it in a deferred function that calls recover
// directly, exactly as the natives of Natives do:
//
//	//export Java_com_example_Engine_push0
//	func Java_com_example_Engine_push0(env *C.JNIEnv, _ C.jclass, h C.jlong) {
//		var err error
//		c := jni.BeginEngineCall()
//		defer func() { c.End(unsafe.Pointer(env), recover(), err) }()
//		err = push(int64(h))
//	}
//
// End then guarantees what jni/API.md promises for the natives of Natives:
// a Go panic becomes RuntimeException("nativepool: panic: …") and never
// crosses into the JVM; a Java exception raised by an upcall made during
// the call (acquireMemory, releaseMemory, a spiller; an
// InterruptedException when Spark kills the task) is rethrown as the
// original throwable when it is inside err (return the error of the pool
// call that raised it: TryGrow, or the reporting forms such as
// pool.Reservation.GrowReporting and pool.Unified.ReclaimReporting); and
// err is thrown as the exception it maps to (ErrIllegalArgument,
// ErrIllegalState, pool.ErrInvalidSize, pool.ErrClosed; else
// RuntimeException). An EngineCall holds no state (errors travel inside
// err, nothing is kept per call); it stays a value so that engines' exports
// keep one shape. The zero EngineCall is ready to use.
type EngineCall struct{}

// BeginEngineCall starts an engine's native method; it returns the zero
// EngineCall.
func BeginEngineCall() EngineCall { return EngineCall{} }

// End settles the call (see EngineCall) in env, the JNIEnv the export
// received. It never panics.
func (EngineCall) End(env unsafe.Pointer, panicked any, err error) {
	endCall((*C.JNIEnv)(env), panicked, engineapi.BridgeError(err))
}

// JavaString copies a java.lang.String argument (a local reference the
// export received) into a Go string, through UTF-16 (never modified
// UTF-8). A null reference gives "", false. env is the export's JNIEnv;
// call it only from that export.
func JavaString(env unsafe.Pointer, s uintptr) (string, bool, error) {
	return javaStringToGo((*C.JNIEnv)(env), C.jstring(s))
}

// NewJavaLongArray returns a new local reference to a long[] holding v, for
// the export to return, or 0 with an exception (OutOfMemoryError) pending.
// env is the export's JNIEnv; call it only from that export.
func NewJavaLongArray(env unsafe.Pointer, v []int64) uintptr {
	return uintptr(goLongsToJava((*C.JNIEnv)(env), v))
}

// HandleTable gives an engine's own objects (a sorter, an operator) the
// 64-bit handles that jni's natives use for pools and reservations: a type
// tag, a slot and the slot's generation, checked on every lookup, so a
// zero, forged or other type's handle is an error wrapping
// ErrIllegalArgument, a closed one (even after its slot was reused) an error
// wrapping ErrIllegalState, and neither ever reaches another object.
// Lookups are lock-free. A HandleTable is safe for concurrent use; build one
// with NewHandleTable (the zero value is not usable). Its methods are
// Insert, Get, Remove, Each and Len.
type HandleTable[T any] = engineapi.HandleTable[T]

// NewHandleTable returns an empty table whose handles carry tag in their
// top byte. Errors read "<prefix>: invalid <name> handle 0x…" and
// "<prefix>: <name> handle 0x… is closed". It panics if tag is 0 or one of
// jni's own tags ('P' pools, 'R' reservations, 'B' Arrow batches, 'T'
// tasks).
func NewHandleTable[T any](tag byte, prefix, name string) *HandleTable[T] {
	return engineapi.NewHandleTable[T](tag, prefix, name)
}
