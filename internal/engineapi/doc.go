// Package engineapi is the cgo-free half of the Go engine API (the API of
// package jni for a query engine that links nativepool into its own
// c-shared library): the errors an engine's native method wraps to choose
// its Java exception and their mapping onto the bridge's failure classes,
// the generation-checked handle table for the engine's own objects, and
// the join of a task pool Java opened. jni re-exports these as
// jni.ErrIllegalArgument, jni.ErrIllegalState, jni.HandleTable,
// jni.NewHandleTable and jni.JoinTaskPool, on the process's Bridge; what
// needs the JVM (EngineCall.End, JavaString, NewJavaLongArray) stays in
// jni. It builds and is tested with CGO_ENABLED=0.
//
// # Where each job lives
//
//	engineapi.go  ErrIllegalArgument, ErrIllegalState and BridgeError;
//	              JoinTaskPool; HandleTable for engines' own objects
package engineapi
