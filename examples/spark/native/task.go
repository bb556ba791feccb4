package main

import (
	"fmt"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/jni"
	"github.com/nativepool/nativepool/taskshared"
)

// taskRef is a sorter's or an aggregation's reference to its task's pool.
//
// Java passes the task attempt id once, to create0; every later native
// call passes only the operator's handle. The engine keeps the joined
// taskshared.Handle here and makes it the current task of the goroutine
// (taskshared.Run, through onTask) for the duration of every native call
// that runs the operator's work: create0, push0, finish0, next0, close0.
// Engine code below that point asks taskshared.Current for the task's pool
// and id instead of having them passed down. Spark's spill of the task's
// native consumer (reclaimTask0, package jni) is not one of these calls and
// may run on another task's thread, so a Spill never reads the current
// task.
type taskRef struct {
	// task is the counted reference to the pool Java opened for the task
	// (jni.JoinTaskPool): its Pool and TaskAttemptID.
	task *taskshared.Handle
	// reportSpill adds spill bytes to the Spark metrics of task
	// (jni.ReportSpill): memory freed by self-initiated spills, bytes
	// written to disk.
	reportSpill func(task *taskshared.Handle, memory, disk int64) error
	release     func() // drops the reference (task.Close in the library)
	// track counts an operator's allocator in the executor memory ledger
	// (jni.TrackAllocator) until the returned function is called; nil in
	// tests without the library.
	track func(consumer string, a *ffi.Allocator) (untrack func())
}

// joinTaskPool is the engines' join in the library: a counted reference to
// the pool Java opened for the task (see jni.JoinTaskPool).
func joinTaskPool(taskAttemptID int64) (taskRef, error) {
	h, err := jni.JoinTaskPool(taskAttemptID)
	if err != nil {
		return taskRef{}, err
	}
	return taskRef{task: h, reportSpill: jni.ReportSpill, release: h.Close, track: jni.TrackAllocator}, nil
}

// onTask runs fn with ref's task current on this goroutine and clears it
// (restores what was current before) when fn returns or panics: the JNI
// goroutine a Java thread calls in on is reused for later calls, so a
// current task must never outlive the native call that set it (see
// taskshared.Run).
func onTask(ref taskRef, fn func() error) (err error) {
	taskshared.Run(ref.task, func() { err = fn() })
	return err
}

// currentTask is the task whose native call is running on this goroutine:
// the one onTask made current. Outside such a call it fails with
// jni.ErrIllegalState naming op.
func currentTask(op string) (*taskshared.Handle, error) {
	if h, ok := taskshared.Current(); ok {
		return h, nil
	}
	return nil, fmt.Errorf("%s: no current task on this goroutine: %w", op, jni.ErrIllegalState)
}
