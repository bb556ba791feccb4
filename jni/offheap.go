package jni

/*
#include "np.h"
*/
import "C"

import (
	"fmt"

	"github.com/nativepool/nativepool/internal/guard"
	"github.com/nativepool/nativepool/internal/sharedref"
)

// jvmOffHeap is the pod guard's guard.OffHeap in a JVM: Spark's off-heap
// memory as a whole, held through org.nativepool.spark.jni.OffHeap (the
// plugin's SparkOffHeap, over Spark's MemoryManager) by a global ref. Its
// upcalls (np_offheap_take, np_offheap_keep, np_offheap_give,
// np_offheap_free) run on the guard's goroutine, np_offheap_keep on a
// task's thread too (Guard.Gather); the Java side never blocks and never
// calls back into Go. A Java exception comes back as a *JavaException (the
// guard logs it and holds nothing). After Close the methods fail instead of
// calling Java; the global ref is deleted once the upcalls in flight have
// returned. Safe for concurrent use.
type jvmOffHeap struct {
	ref *sharedref.Ref
}

// newJVMOffHeap makes a global ref to offHeap, a local ref of the calling
// native method; a null offHeap is no off-heap memory (nil, no error).
func newJVMOffHeap(env *jniEnv, offHeap jobject) (*jvmOffHeap, error) {
	if offHeap == 0 {
		return nil, nil
	}
	ref := newGlobalRef(env, offHeap)
	if ref == 0 {
		return nil, fmt.Errorf("nativepool: NewGlobalRef of the off-heap side failed")
	}
	return &jvmOffHeap{ref: sharedref.New(ref, deleteGlobalRef)}, nil
}

// Acquire implements guard.OffHeap: take(n, native).
func (o *jvmOffHeap) Acquire(n, native int64) (int64, error) {
	ref, ok := o.ref.Use()
	if !ok {
		return 0, fmt.Errorf("nativepool: OffHeap.take(%d) after the guard stopped", n)
	}
	defer o.ref.Done()
	var granted C.jlong
	var exc C.jthrowable
	switch rc := C.np_offheap_take(C.jobject(ref), C.jlong(n), C.jlong(native), &granted, &exc); rc {
	case npOK:
		return int64(granted), nil
	case npException:
		return 0, newUpcallException("OffHeap.take", uintptr(exc))
	default:
		return 0, npStatusError("OffHeap.take", rc)
	}
}

// Keep implements guard.OffHeap: keep(n).
func (o *jvmOffHeap) Keep(n int64) (int64, error) {
	ref, ok := o.ref.Use()
	if !ok {
		return 0, fmt.Errorf("nativepool: OffHeap.keep(%d) after the guard stopped", n)
	}
	defer o.ref.Done()
	var kept C.jlong
	var exc C.jthrowable
	switch rc := C.np_offheap_keep(C.jobject(ref), C.jlong(n), &kept, &exc); rc {
	case npOK:
		return int64(kept), nil
	case npException:
		return 0, newUpcallException("OffHeap.keep", uintptr(exc))
	default:
		return 0, npStatusError("OffHeap.keep", rc)
	}
}

// Release implements guard.OffHeap: giveBack(n). A giveBack that throws
// handed nothing back.
func (o *jvmOffHeap) Release(n int64) error {
	ref, ok := o.ref.Use()
	if !ok {
		return fmt.Errorf("nativepool: OffHeap.giveBack(%d) after the guard stopped", n)
	}
	defer o.ref.Done()
	var exc C.jthrowable
	switch rc := C.np_offheap_give(C.jobject(ref), C.jlong(n), &exc); rc {
	case npOK:
		return nil
	case npException:
		return newUpcallException("OffHeap.giveBack", uintptr(exc))
	default:
		return npStatusError("OffHeap.giveBack", rc)
	}
}

// Free implements guard.OffHeap: free().
func (o *jvmOffHeap) Free() (int64, error) {
	ref, ok := o.ref.Use()
	if !ok {
		return 0, fmt.Errorf("nativepool: OffHeap.free() after the guard stopped")
	}
	defer o.ref.Done()
	var free C.jlong
	var exc C.jthrowable
	switch rc := C.np_offheap_free(C.jobject(ref), &free, &exc); rc {
	case npOK:
		return int64(free), nil
	case npException:
		return 0, newUpcallException("OffHeap.free", uintptr(exc))
	default:
		return 0, npStatusError("OffHeap.free", rc)
	}
}

// Close deletes the global ref once no upcall uses it.
func (o *jvmOffHeap) Close() { o.ref.Close() }

var _ guard.OffHeap = (*jvmOffHeap)(nil)
