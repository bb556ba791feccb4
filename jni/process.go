package jni

import (
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/nativepool/nativepool/internal/bridge"
)

// process is the process registry: the library's one Bridge, holding the
// pool and reservation handle tables, the task-shared registry
// (taskshared.Registry), the settings of configure0 and the cumulative
// process counters behind processStats0. The JVM loads the library once per
// process (one Go runtime per process, doc.go), so this is the one instance
// every native method works on. It is the only package-level state of this
// package; everything else hangs off it, and tests build their own Bridge
// with NewBridge instead of touching it.
var process = newProcess()

// newProcess builds the process registry on the real process runtime
// (malloc.go): the Go runtime, glibc's mallopt, /proc.
func newProcess() *bridge.Bridge {
	b := bridge.NewBridge(nil, ffiRuntime)
	b.UseProcessRuntime(processRuntime())
	return b
}

// call is one native method in progress. Build it first thing in an
// export, and end it in a deferred function that calls recover directly:
//
//	c := begin()
//	defer func() { c.end(env, recover(), err) }()
//
// A Java exception raised by an upcall during the call reaches end inside
// err, as the Bridge method returned it: nothing is kept per call or per
// goroutine.
type call struct{}

// begin starts a native method.
func begin() call { return call{} }

// end settles the native method: a recovered panic becomes
// RuntimeException("nativepool: panic: …") (and any Java exception inside
// err is discarded); otherwise err is settled (settle) and the result is
// made pending in env. It never panics, so nothing crosses into the JVM but
// a Java exception.
func (c call) end(env *jniEnv, panicked any, err error) {
	if panicked == nil && err == nil {
		return // the common case: nothing to throw
	}
	c.finish(env, panicked, err)
}

// finish is end's slow path: settle, throw.
func (call) finish(env *jniEnv, panicked any, err error) {
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
