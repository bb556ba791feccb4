package jni

/*
#include <stdlib.h>
#include "np.h"
*/
import "C"

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"unicode/utf16"
	"unsafe"

	"github.com/nativepool/nativepool/internal/bridge"
)

// This file holds the Go halves of the np_ helpers that take the JNIEnv of
// the running native method: strings, arrays, throwing. They may only be
// called by an export, on its own goroutine, with the env it received.

// Status codes of the np_ helpers. The other copy is jni/np.h (enum NP_*).
const (
	npOK             = C.NP_OK
	npException      = C.NP_EXCEPTION
	npNoEnv          = C.NP_NO_ENV
	npNotInitialized = C.NP_NOT_INITIALIZED
	npJNIFailed      = C.NP_JNI_FAILED
)

// npStatusError describes a non-OK, non-exception np_ status.
func npStatusError(op string, rc C.int) error {
	switch rc {
	case npNoEnv:
		return fmt.Errorf("nativepool: %s: this thread could not be attached to the JVM", op)
	case npNotInitialized:
		return fmt.Errorf("nativepool: %s: LibraryLoader.init0 has not run", op)
	case npJNIFailed:
		return fmt.Errorf("nativepool: %s: a JNI call failed (JVM out of memory?)", op)
	default:
		return fmt.Errorf("nativepool: %s: np status %d", op, int(rc))
	}
}

// utf16String converts a malloc'ed UTF-16 buffer from np_ into a Go string
// and frees the buffer (it was allocated by np.c with malloc, never by the
// JVM, so free is right).
func utf16String(p *C.jchar, n C.jsize) string {
	if p == nil {
		return ""
	}
	defer C.free(unsafe.Pointer(p))
	return string(utf16.Decode(unsafe.Slice((*uint16)(unsafe.Pointer(p)), int(n))))
}

// javaStringToGo copies a Java String argument into a Go string. A null
// String gives "", false.
func javaStringToGo(env *jniEnv, s jstring) (string, bool, error) {
	if s == 0 {
		return "", false, nil
	}
	var p *C.jchar
	var n C.jsize
	if rc := C.np_string_copy(env, s, &p, &n); rc != npOK {
		return "", false, npStatusError("copying a String argument", rc)
	}
	return utf16String(p, n), true, nil
}

// goStringToJava returns a new local String holding s, or 0 with a Java
// exception pending.
func goStringToJava(env *jniEnv, s string) jstring {
	u := utf16.Encode([]rune(s))
	if len(u) == 0 {
		return C.np_new_string(env, nil, 0)
	}
	return C.np_new_string(env, (*C.jchar)(unsafe.Pointer(&u[0])), C.jsize(len(u)))
}

// goLongsToJava returns a new local long[] holding v, or 0 with a Java
// exception pending.
func goLongsToJava(env *jniEnv, v []int64) jlongArray {
	if len(v) == 0 {
		return C.np_new_long_array(env, nil, 0)
	}
	return C.np_new_long_array(env, (*C.jlong)(unsafe.Pointer(&v[0])), C.jsize(len(v)))
}

// javaLongsToGo copies a Java long[] argument. A null array gives nil.
func javaLongsToGo(env *jniEnv, a jlongArray) ([]int64, error) {
	if a == 0 {
		return nil, nil
	}
	var p *C.jlong
	var n C.jsize
	if rc := C.np_long_array_copy(env, a, &p, &n); rc != npOK {
		return nil, npStatusError("copying a long[] argument", rc)
	}
	defer C.free(unsafe.Pointer(p))
	out := make([]int64, int(n))
	copy(out, unsafe.Slice((*int64)(unsafe.Pointer(p)), int(n)))
	return out, nil
}

// throwNew makes a new exception of kind with message msg pending in env,
// unless one is pending already.
func throwNew(env *jniEnv, kind bridge.ThrowKind, msg string) {
	u := utf16.Encode([]rune(msg))
	var p *C.jchar
	if len(u) > 0 {
		p = (*C.jchar)(unsafe.Pointer(&u[0]))
	}
	var k C.int
	switch kind {
	case bridge.ThrowIllegalArgument:
		k = C.NP_ILLEGAL_ARGUMENT
	case bridge.ThrowIllegalState:
		k = C.NP_ILLEGAL_STATE
	default:
		k = C.NP_RUNTIME
	}
	C.np_throw_new(env, k, p, C.jsize(len(u)))
}

// rethrow rethrows the original throwable of e in env and deletes its
// global ref. If the ref was already taken (or never set), it throws a
// RuntimeException carrying e's text instead.
func rethrow(env *jniEnv, e *bridge.JavaException) {
	ref := e.Take()
	if ref == 0 {
		throwNew(env, bridge.ThrowRuntime, "nativepool: "+e.Error())
		return
	}
	if C.np_exception_pending(env) == 0 {
		C.np_throw(env, C.jthrowable(ref))
	}
	// Throw made its own reference to the pending exception; ours can go.
	deleteGlobalRef(ref)
}

// throwFailure makes f pending in env (nothing for throwNone).
func throwFailure(env *jniEnv, f bridge.Failure) {
	switch {
	case f.Kind == bridge.ThrowNone:
	case f.Java != nil:
		rethrow(env, f.Java)
	default:
		throwNew(env, f.Kind, f.Msg)
	}
}

// exceptionPending reports whether env has a pending Java exception.
func exceptionPending(env *jniEnv) bool { return C.np_exception_pending(env) != 0 }

// newGlobalRef returns a new global ref to obj (0 for a null obj, or when
// the JVM is out of memory, with an exception pending).
func newGlobalRef(env *jniEnv, obj jobject) uintptr {
	return uintptr(C.np_new_global(env, obj))
}

// deleteGlobalRef deletes a global ref from any goroutine (np_delete_global
// attaches the thread if it has to). If the thread cannot be attached the
// ref leaks; that is logged by nobody, because it only happens when the JVM
// is shutting down.
func deleteGlobalRef(ref uintptr) {
	C.np_delete_global(C.jobject(ref))
}

// describeThrowable reads the class name and message of a throwable (a
// global ref); on failure the class is "" and the message explains.
func describeThrowable(ref uintptr) (class, message string) {
	var cls, msg *C.jchar
	var clsLen, msgLen C.jsize
	if rc := C.np_describe(C.jthrowable(ref), &cls, &clsLen, &msg, &msgLen); rc != npOK {
		return "", npStatusError("describing a Java exception", rc).Error()
	}
	return utf16String(cls, clsLen), utf16String(msg, msgLen)
}

// newUpcallException wraps the global ref of a throwable raised by upcall
// into a *JavaException, which the upcall returns as its error.
func newUpcallException(upcall string, ref uintptr) *bridge.JavaException {
	class, message := describeThrowable(ref)
	return bridge.NewJavaException(class, message, upcall, ref, deleteGlobalRef)
}

// endCall settles a native method. Call it from a deferred function that
// calls recover directly, first thing in every export:
//
//	defer func() { endCall(env, recover(), err) }()
//
// A recovered panic becomes RuntimeException("nativepool: panic: …") (and
// any Java exception inside err is discarded); otherwise err is settled
// (bridge.Settle) and the result is made pending in env. A Java exception
// raised by an upcall during the call arrives inside err, as the Bridge
// method returned it: nothing is kept per call or per goroutine. It never
// panics, so nothing crosses into the JVM but a Java exception.
func endCall(env *jniEnv, panicked any, err error) {
	if panicked == nil && err == nil {
		return // the common case: nothing to throw
	}
	finishCall(env, panicked, err)
}

// finishCall is endCall's slow path: settle, throw.
func finishCall(env *jniEnv, panicked any, err error) {
	defer func() {
		// Last resort: a panic while settling must not cross either.
		if p := recover(); p != nil && !exceptionPending(env) {
			throwNew(env, bridge.ThrowRuntime, fmt.Sprintf("nativepool: panic: %v", p))
		}
	}()
	if panicked != nil {
		for _, e := range bridge.JavaExceptions(err) {
			e.Discard()
		}
		msg := fmt.Sprintf("nativepool: panic: %v", panicked)
		process.Logger().Error(msg, slog.String("stack", string(debug.Stack())))
		throwNew(env, bridge.ThrowRuntime, msg)
		return
	}
	throwFailure(env, bridge.Settle(err))
}
