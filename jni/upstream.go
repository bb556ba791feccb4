package jni

/*
#include "np.h"
*/
import "C"

import (
	"fmt"

	"github.com/nativepool/nativepool/internal/bridge"
	"github.com/nativepool/nativepool/internal/sharedref"

	"github.com/nativepool/nativepool/pool"
)

// jvmUpstream is the pool.Upstream of a task pool opened from Java: every
// Acquire and Release is one upcall (np_acquire / np_release) to the task's
// org.nativepool.spark.jni.Upstream through a global ref, on whatever
// goroutine the pool calls from (np_env attaches a Go thread if needed).
//
// Acquire may block in Spark (the 1/2N wait) and may re-enter Go on the same
// thread (Spark's spill → reclaim0); no Go lock is held here. A Java
// exception raised by the upcall comes back as a *JavaException holding the
// original throwable; the pool returns it through its reporting forms
// (GrowReporting records the bytes as overcommit and returns it; a failed
// release is owed and returned), and the export rethrows it.
//
// After close (the task pool was closed) Acquire and Release fail with an
// error instead of calling Java; the global ref is deleted once the upcalls
// in flight have returned. A jvmUpstream is safe for concurrent use; the
// zero value is closed.
type jvmUpstream struct {
	ref *sharedref.Ref
}

// newJVMUpstream makes a global ref to upstream, a local ref of the calling
// native method. It fails if upstream is null.
func newJVMUpstream(env *jniEnv, upstream jobject) (*jvmUpstream, error) {
	if upstream == 0 {
		return nil, fmt.Errorf("nativepool: upstream is null: %w", bridge.ErrInvalidArgument)
	}
	ref := newGlobalRef(env, upstream)
	if ref == 0 {
		return nil, fmt.Errorf("nativepool: NewGlobalRef of the upstream failed")
	}
	return &jvmUpstream{ref: sharedref.New(ref, deleteGlobalRef)}, nil
}

// Acquire implements pool.Upstream: acquireMemory(n).
func (u *jvmUpstream) Acquire(n int64) (int64, error) {
	ref, ok := u.ref.Use()
	if !ok {
		return 0, fmt.Errorf("nativepool: acquireMemory(%d) after the task pool closed: %w", n, pool.ErrClosed)
	}
	defer u.ref.Done()
	var granted C.jlong
	var exc C.jthrowable
	switch rc := C.np_acquire(C.jobject(ref), C.jlong(n), &granted, &exc); rc {
	case npOK:
		return int64(granted), nil
	case npException:
		return 0, newUpcallException("acquireMemory", uintptr(exc))
	default:
		return 0, npStatusError("acquireMemory", rc)
	}
}

// Release implements pool.Upstream: releaseMemory(n). A releaseMemory that
// throws has released nothing (API.md), which is what an error from
// pool.Upstream.Release means: the pool keeps the bytes.
func (u *jvmUpstream) Release(n int64) error {
	ref, ok := u.ref.Use()
	if !ok {
		return fmt.Errorf("nativepool: releaseMemory(%d) after the task pool closed: %w", n, pool.ErrClosed)
	}
	defer u.ref.Done()
	var exc C.jthrowable
	switch rc := C.np_release(C.jobject(ref), C.jlong(n), &exc); rc {
	case npOK:
		return nil
	case npException:
		return newUpcallException("releaseMemory", uintptr(exc))
	default:
		return npStatusError("releaseMemory", rc)
	}
}

// Close deletes the global ref once no upcall uses it.
func (u *jvmUpstream) Close() { u.ref.Close() }

var _ pool.Upstream = (*jvmUpstream)(nil)
