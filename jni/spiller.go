package jni

/*
#include "np.h"
*/
import "C"

import (
	"fmt"

	"github.com/nativepool/nativepool/internal/sharedref"
	"github.com/nativepool/nativepool/pool"
)

// jvmSpiller is the pool.Spiller of a reservation opened from Java with a
// org.nativepool.spark.jni.Spiller: Spill is one upcall (np_spill) to spiller.spill(target)
// through a global ref. It runs on the goroutine running Reclaim (the thread
// of Spark's spill, inside reclaim0); the Java spiller shrinks its
// reservation through shrink0 before returning, re-entering Go on the same
// thread, so no Go lock is held here.
//
// A Java exception comes back as a *JavaException, which the pool's
// ReclaimReporting returns, so reclaim0 rethrows it. A negative result is reported
// as an error. After close (the reservation was closed) Spill returns 0
// without calling Java, and the global ref is deleted once the upcalls in
// flight have returned. A jvmSpiller is safe for concurrent use; the zero
// value is closed.
type jvmSpiller struct {
	ref *sharedref.Ref
}

// newJVMSpiller makes a global ref to spiller, a local ref of the calling
// native method; a null spiller gives nil, nil.
func newJVMSpiller(env *jniEnv, spiller jobject) (*jvmSpiller, error) {
	if spiller == 0 {
		return nil, nil
	}
	ref := newGlobalRef(env, spiller)
	if ref == 0 {
		return nil, fmt.Errorf("nativepool: NewGlobalRef of the spiller failed")
	}
	return &jvmSpiller{ref: sharedref.New(ref, deleteGlobalRef)}, nil
}

// Spill implements pool.Spiller: spill(target).
func (s *jvmSpiller) Spill(target int64) (int64, error) {
	ref, ok := s.ref.Use()
	if !ok {
		return 0, nil // the reservation was closed: nothing left to spill
	}
	defer s.ref.Done()
	var freed C.jlong
	var exc C.jthrowable
	switch rc := C.np_spill(C.jobject(ref), C.jlong(target), &freed, &exc); rc {
	case npOK:
		if freed < 0 {
			return 0, fmt.Errorf("nativepool: Spiller.spill(%d) returned %d", target, int64(freed))
		}
		return int64(freed), nil
	case npException:
		return 0, newUpcallException("spill", uintptr(exc))
	default:
		return 0, npStatusError("spill", rc)
	}
}

// Close deletes the global ref once no upcall uses it.
func (s *jvmSpiller) Close() { s.ref.Close() }

var _ pool.Spiller = (*jvmSpiller)(nil)
