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

// processLog is the process's log router (loghandler.go, log.go), part of
// the process registry like process, whose logger writes through it: until
// NativeBridge.configureLog0 it passes every record to slog's default
// handler; from then on it hands them to SLF4J, and it is slog's default
// handler too (slog.SetDefault, once per process, never undone). A record is
// process-wide by nature: there is one slog default and one JVM.
var processLog = newLogRouter(javaLogSink)

// newProcess builds the process registry on the real process runtime
// (malloc.go): the Go runtime, glibc's mallopt, /proc.
func newProcess() *bridge.Bridge {
	b := bridge.NewBridge(slog.New(processLog.handler()), ffiRuntime)
	b.UseProcessRuntime(processRuntime())
	return b
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
