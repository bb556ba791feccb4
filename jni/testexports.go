//go:build nativepool_jvmtest

package jni

/*
#include "np.h"
*/
import "C"

import (
	"context"
	"errors"
	"log/slog"
	"runtime"

	"github.com/nativepool/nativepool/internal/bridge"

	"github.com/nativepool/nativepool/pool"
)

// This file exists only in the library that jvm_test.go builds (tag
// nativepool_jvmtest); release builds never contain it. It exports extra
// natives (goroutineLog0 and logWithPendingException0 drive the log upcall
// the same way), declared only by testdata/jvm's copy of Natives, to drive an
// upcall from a goroutine the JVM does not know: the path where np_env
// attaches the OS thread as a daemon and its pthread_key destructor detaches
// it when the thread exits.

// Java_org_nativepool_spark_jni_Natives_goroutineTryGrow0 runs TryGrow(res,
// n) on a new goroutine and waits for it. With exitThread the goroutine locks
// its OS thread and returns without unlocking, so the Go runtime terminates
// that thread. Returns like tryGrow0; a Java exception raised on the
// goroutine is rethrown here.
//
//export Java_org_nativepool_spark_jni_Natives_goroutineTryGrow0
func Java_org_nativepool_spark_jni_Natives_goroutineTryGrow0(env *jniEnv, _ jclass, res, n jlong, exitThread jboolean) (refusal jstring) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	done := make(chan error)
	go func() {
		if exitThread != 0 {
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		}
		done <- process.TryGrow(int64(res), int64(n))
	}()
	got := <-done
	f := bridge.Settle(got)
	if f.Kind == bridge.ThrowNone || (f.Kind == bridge.ThrowRuntime && errors.Is(got, pool.ErrResourcesExhausted)) {
		if got != nil {
			return goStringToJava(env, got.Error())
		}
		return 0
	}
	throwFailure(env, f)
	return 0
}

// Java_org_nativepool_spark_jni_Natives_noop0 is the floor of a Java→Go
// call, for testdata/jvm/Bench.java: no guard, no lookup.
//
//export Java_org_nativepool_spark_jni_Natives_noop0
func Java_org_nativepool_spark_jni_Natives_noop0(env *jniEnv, cls jclass, x jlong) jlong {
	return x + 1
}

// Java_org_nativepool_spark_jni_Natives_goroutineLog0 makes one slog
// record (level in slog's numbers, with the task attribute unless task < 0)
// through the process's log router on a new goroutine, and waits for it.
// With exitThread the goroutine's OS thread exits afterwards, as in
// goroutineTryGrow0.
//
//export Java_org_nativepool_spark_jni_Natives_goroutineLog0
func Java_org_nativepool_spark_jni_Natives_goroutineLog0(env *jniEnv, _ jclass, task jlong, level jint, message jstring, exitThread jboolean) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	msg, _, err := javaStringToGo(env, message)
	if err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if exitThread != 0 {
			runtime.LockOSThread()
		}
		l := Logger()
		if task >= 0 {
			l = l.With(TaskAttr(int64(task)))
		}
		l.Log(context.Background(), slog.Level(level), msg)
	}()
	<-done
}

// Java_org_nativepool_spark_jni_Natives_logWithPendingException0 makes an
// IllegalStateException("pending") pending in env, then logs a warning on
// this thread: np_log must leave the JVM alone.
//
//export Java_org_nativepool_spark_jni_Natives_logWithPendingException0
func Java_org_nativepool_spark_jni_Natives_logWithPendingException0(env *jniEnv, _ jclass, message jstring) {
	msg, _, err := javaStringToGo(env, message)
	if err != nil {
		throwNew(env, bridge.ThrowRuntime, err.Error())
		return
	}
	throwNew(env, bridge.ThrowIllegalState, "pending")
	Logger().Warn(msg)
}
