package jni

import (
	"fmt"
	"log/slog"
	"runtime/debug"
)

// process is the process registry: the library's one Bridge, holding the
// pool and reservation handle tables, the task-shared registry
// (taskshared.Registry), the settings of configure0 and the cumulative
// process counters behind processStats0. The JVM loads the library once per
// process (one Go runtime per process, doc.go), so this is the one instance
// every native method works on. It is the only package-level state of this
// package; everything else hangs off it, and tests build their own Bridge
// with NewBridge instead of touching it.
var process = NewBridge(nil)

// call is one native method in progress: the mark from which it claims the
// Java exceptions its upcalls raise (see exceptionRouter). Build it first
// thing in an export that can reach an upcall, and end it in a deferred
// function that calls recover directly:
//
//	c := begin()
//	defer func() { c.end(env, recover(), err) }()
type call struct {
	mark   uint64
	routed bool
}

// begin starts a native method that can reach an upcall.
func begin() call { return call{mark: process.exceptions.mark(), routed: true} }

// beginLocal starts a native method that never calls Java back.
func beginLocal() call { return call{} }

// end settles the native method: a recovered panic becomes
// RuntimeException("nativepool: panic: …") (and any claimed Java exception
// is discarded); otherwise the Java exceptions claimed since begin and err
// are settled (settle) and the result is made pending in env. It never
// panics, so nothing crosses into the JVM but a Java exception.
func (c call) end(env *jniEnv, panicked any, err error) {
	if panicked == nil && err == nil && (!c.routed || !process.exceptions.since(c.mark)) {
		return // the common case: nothing to throw, nothing to claim
	}
	c.finish(env, panicked, err)
}

// finish is end's slow path: claim, settle, throw.
func (c call) finish(env *jniEnv, panicked any, err error) {
	defer func() {
		// Last resort: a panic while settling must not cross either.
		if p := recover(); p != nil && !exceptionPending(env) {
			throwNew(env, throwRuntime, fmt.Sprintf("nativepool: panic: %v", p))
		}
	}()
	var claimed []*JavaException
	if c.routed {
		claimed = process.exceptions.claim(c.mark)
	}
	if panicked != nil {
		for _, e := range claimed {
			e.discard()
		}
		msg := fmt.Sprintf("nativepool: panic: %v", panicked)
		process.logger.Error(msg, slog.String("stack", string(debug.Stack())))
		throwNew(env, throwRuntime, msg)
		return
	}
	throwFailure(env, settle(err, claimed))
}
