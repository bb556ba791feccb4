//go:build nativepool_jvmtest

package jni

/*
#include "np.h"
*/
import "C"

import (
	"errors"
	"runtime"

	"github.com/nativepool/nativepool/pool"
)

// This file exists only in the library that jvm_test.go builds (tag
// nativepool_jvmtest); release builds never contain it. It exports one extra
// native, declared only by testdata/jvm's copy of NativeBridge, to drive an
// upcall from a goroutine the JVM does not know: the path where np_env
// attaches the OS thread as a daemon and its pthread_key destructor detaches
// it when the thread exits.

// Java_org_nativepool_spark_NativeBridge_goroutineTryGrow0 runs TryGrow(res,
// n) on a new goroutine and waits for it. With exitThread the goroutine locks
// its OS thread and returns without unlocking, so the Go runtime terminates
// that thread. Returns like tryGrow0; a Java exception raised on the
// goroutine is rethrown here.
//
//export Java_org_nativepool_spark_NativeBridge_goroutineTryGrow0
func Java_org_nativepool_spark_NativeBridge_goroutineTryGrow0(env *jniEnv, _ jclass, res, n jlong, exitThread jboolean) (refusal jstring) {
	var err error
	c := beginLocal()
	defer func() { c.end(env, recover(), err) }()
	type result struct {
		err     error
		claimed []*JavaException
	}
	done := make(chan result)
	go func() {
		if exitThread != 0 {
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		}
		// A goroutine doing upcalls claims what it raised, like an export.
		mark := process.exceptions.mark()
		err := process.TryGrow(int64(res), int64(n))
		done <- result{err, process.exceptions.claim(mark)}
	}()
	r := <-done
	f := settle(r.err, r.claimed)
	if f.kind == throwNone || (f.kind == throwRuntime && errors.Is(r.err, pool.ErrResourcesExhausted)) {
		if r.err != nil {
			return goStringToJava(env, r.err.Error())
		}
		return 0
	}
	throwFailure(env, f)
	return 0
}

// Java_org_nativepool_spark_NativeBridge_noop0 is the floor of a Java→Go
// call, for testdata/jvm/Bench.java: no guard, no lookup.
//
//export Java_org_nativepool_spark_NativeBridge_noop0
func Java_org_nativepool_spark_NativeBridge_noop0(env *jniEnv, cls jclass, x jlong) jlong {
	return x + 1
}
