package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/cdata"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/jni"
	"github.com/nativepool/nativepool/taskshared"
)

// The engine behind the natives of one Java bridge class: the operators of
// one kind (the sorters of SortBridge, sorts.go; the aggregations of
// AggBridge, aggs.go) of every task in the process, by handle. This file
// has what every kind does the same way: create0's join of the task's pool
// and the handle, the driver calls (push0, finish0, next0) with the task
// current, the spill reports to Spark, close0 and its leak report. Each
// kind adds its create0 arguments, its stats0 and sample0 arrays, and its
// hooks (engine.afterCall, engine.closed).

// operator is what an engine drives: an Arrow operator of one task whose
// every buffer is charged through accounted allocators, driven by one
// thread at a time (push, finish, next until io.EOF, close) and spilled by
// its pool from any thread.
type operator interface {
	// Allocator is the allocator that charges the batches the operator
	// imports and exports.
	Allocator() *ffi.Allocator
	Push(arrow.RecordBatch) error
	Finish() error
	// Next returns the next output batch, or io.EOF after the last.
	Next() (arrow.RecordBatch, error)
	// Close releases everything; output batches not yet released by
	// their consumer make it return an *ffi.LeakError.
	Close() error
	// spilled returns what the operator has spilled so far: the memory its
	// self-initiated spills freed, and the bytes of the files it wrote.
	spilled() (memory, disk int64)
}

// opHandle is one operator opened by create0, in its engine's table.
type opHandle[O operator] struct {
	op   O
	ref  taskRef // the task's pool
	name string
	// untrack ends the ledger's count of the operator's allocator.
	untrack func()
	// reported is what reportSpills has reported to Spark so far, from the
	// operator's cumulative spill figures.
	reported struct {
		sync.Mutex
		memory, disk int64
	}
	// busy makes a second concurrent driver call an IllegalStateException
	// instead of the operator's panic; an operator belongs to one task
	// thread.
	busy atomic.Bool
	// closing is set just before the operator closes: samplers stop
	// reading its books (a leaked export keeps allocated > 0 after the
	// reservation closed).
	closing               atomic.Bool
	batchesIn, batchesOut atomic.Int64
}

// engine holds the operators of one kind opened through their bridge's
// natives. It is safe for concurrent use (one JVM thread per task drives
// each operator; any thread may sample them). The zero engine is not
// usable; build it with newEngine.
type engine[O operator] struct {
	ops    *jni.HandleTable[*opHandle[O]]
	logger *slog.Logger
	// prefix names the kind's library in errors and logs ("nativesort").
	prefix string
	// join opens a reference to a task's pool (jni.JoinTaskPool in the
	// library; a test registry's in tests).
	join func(taskAttemptID int64) (taskRef, error)
	// afterCall, when set, runs after every driver call and before
	// close0, with the operator's task current; set by the kind before
	// the first create.
	afterCall func(*opHandle[O])
	// closed, when set, runs once close0 has closed an operator and
	// dropped its task reference, with Close's error. It reports whether
	// the operator's allocator stays counted in the executor memory
	// ledger (a leak the operator was asked to plant, which also clears
	// Close's error); otherwise close0 untracks it. Set by the kind before
	// the first create.
	closed func(oh *opHandle[O], closeErr error) (keep bool)
}

// newEngine returns an engine whose handles carry tag in their top byte
// (so that a handle of another kind, or of package jni, passed by mistake
// is told apart) and whose errors name prefix and what ("sorter").
func newEngine[O operator](tag byte, prefix, what string, logger *slog.Logger, join func(int64) (taskRef, error)) *engine[O] {
	if logger == nil {
		logger = slog.Default()
	}
	return &engine[O]{ops: jni.NewHandleTable[*opHandle[O]](tag, prefix, what), logger: logger, prefix: prefix, join: join}
}

// create opens an operator named name on the pool of task taskAttemptID
// and returns its handle. build makes the operator with the task current
// (onTask), as every later call on it runs, from the task's handle and a
// logger whose records name the task on whichever thread makes them. On
// an error nothing stays open.
func (e *engine[O]) create(taskAttemptID int64, name string, build func(task *taskshared.Handle, logger *slog.Logger) (O, error)) (int64, error) {
	if name == "" {
		return 0, fmt.Errorf("%s: create0: empty consumer name: %w", e.prefix, jni.ErrIllegalArgument)
	}
	ref, err := e.join(taskAttemptID)
	if err != nil {
		return 0, fmt.Errorf("%s: create0(task %d): %w", e.prefix, taskAttemptID, err)
	}
	var h int64
	err = onTask(ref, func() error {
		var err error
		h, err = e.open(ref, name, build)
		return err
	})
	if err != nil {
		ref.release()
		return 0, fmt.Errorf("%s: create0(task %d): %w", e.prefix, taskAttemptID, err)
	}
	return h, nil
}

// open builds an operator on the current task's pool and registers it
// under a new handle; on an error it leaves nothing open but ref.
func (e *engine[O]) open(ref taskRef, name string, build func(*taskshared.Handle, *slog.Logger) (O, error)) (int64, error) {
	task, err := currentTask(e.prefix + ": create0")
	if err != nil {
		return 0, err
	}
	op, err := build(task, e.logger.With(jni.TaskAttr(task.TaskAttemptID())))
	if err != nil {
		return 0, err
	}
	oh := &opHandle[O]{op: op, ref: ref, name: name, untrack: func() {}}
	if ref.track != nil {
		oh.untrack = ref.track(name, op.Allocator())
	}
	h, err := e.ops.Insert(oh)
	if err != nil {
		_ = op.Close()
		oh.untrack()
		return 0, err
	}
	return h, nil
}

// drive runs one driver call on the operator of handle h with its task
// current (onTask), then settles its books (settle).
func (e *engine[O]) drive(op string, h int64, fn func(*opHandle[O]) error) error {
	oh, err := e.ops.Get(h)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if !oh.busy.CompareAndSwap(false, true) {
		return fmt.Errorf("%s: %s on %s while another call on it is running: %w", e.prefix, op, oh.name, jni.ErrIllegalState)
	}
	defer oh.busy.Store(false)
	return onTask(oh.ref, func() error {
		err := fn(oh)
		e.settle(oh)
		return err
	})
}

// settle runs the kind's afterCall and reports the operator's spills. It
// runs inside a native call on the operator (drive, close), with its task
// current.
func (e *engine[O]) settle(oh *opHandle[O]) {
	if e.afterCall != nil {
		e.afterCall(oh)
	}
	e.reportSpills(oh)
}

// reportSpills tells the current task's Spark metrics what the operator
// spilled since the last report: its files' bytes (diskBytesSpilled) and
// the memory its self-initiated spills freed (memoryBytesSpilled; what
// Spark's own spills of it free is counted by the plugin as they happen).
// Spark-requested spills run outside the operator's calls, so their files
// are reported at the next call or at close. A failed report costs a
// metric, never the operator's work: it is logged.
func (e *engine[O]) reportSpills(oh *opHandle[O]) {
	memoryNow, diskNow := oh.op.spilled()
	oh.reported.Lock()
	memory, disk := memoryNow-oh.reported.memory, diskNow-oh.reported.disk
	oh.reported.memory, oh.reported.disk = memoryNow, diskNow
	oh.reported.Unlock()
	if memory == 0 && disk == 0 {
		return
	}
	task, err := currentTask(e.prefix + ": reportSpills")
	if err == nil {
		err = oh.ref.reportSpill(task, memory, disk)
	}
	if err != nil {
		e.logger.Warn(e.prefix+": spill bytes not reported to Spark", "consumer", oh.name, "memory", memory, "disk", disk, "err", err)
	}
}

// push imports one batch from Java (the producer keeps paying for it until
// Go releases it: ffi.ProducerCharges), hands it to the operator and
// releases it at once, so Java's buffers go back before push0 returns. On
// an import error the array is released here (as the C Data Interface asks
// of a consumer that takes it).
func (e *engine[O]) push(h int64, arr *cdata.CArrowArray, sc *cdata.CArrowSchema) error {
	return e.drive("push0", h, func(oh *opHandle[O]) error {
		rb, err := oh.op.Allocator().ImportRecordBatch(arr, sc)
		if err != nil {
			cdata.ReleaseCArrowArray(arr)
			return fmt.Errorf("%s: push0 into %s: %w", e.prefix, oh.name, err)
		}
		err = oh.op.Push(rb)
		rb.Release()
		if err != nil {
			return fmt.Errorf("%s: push0 into %s: %w", e.prefix, oh.name, err)
		}
		oh.batchesIn.Add(1)
		return nil
	})
}

// finish ends the input.
func (e *engine[O]) finish(h int64) error {
	return e.drive("finish0", h, func(oh *opHandle[O]) error {
		if err := oh.op.Finish(); err != nil {
			return fmt.Errorf("%s: finish0 of %s: %w", e.prefix, oh.name, err)
		}
		return nil
	})
}

// next exports the operator's next output batch into out and outSchema and
// reports true, or reports false after the last (out untouched). The
// batch's buffers stay charged to the operator until Java releases out
// (the producer pays: ffi's export rule); Java imports it with an
// allocator that charges nothing.
func (e *engine[O]) next(h int64, out *cdata.CArrowArray, outSchema *cdata.CArrowSchema) (bool, error) {
	more := false
	err := e.drive("next0", h, func(oh *opHandle[O]) error {
		rb, err := oh.op.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: next0 of %s: %w", e.prefix, oh.name, err)
		}
		err = oh.op.Allocator().ExportRecordBatch(rb, out, outSchema)
		rb.Release() // the export holds its own reference until Java releases it
		if err != nil {
			return fmt.Errorf("%s: next0 of %s: %w", e.prefix, oh.name, err)
		}
		oh.batchesOut.Add(1)
		more = true
		return nil
	})
	return more, err
}

// statTable declares the stats0 array of one kind of operator: row i is
// figure i, named as the constant of ordinal i of the kind's Java enum
// (SortStat, AggStat; TestStatTablesMatchTheirJavaEnums checks the copy),
// with what it counts and how it is read from the kind's figures F.
type statTable[F any] []struct {
	name, doc string
	get       func(*F) int64
}

// values lays f out as the table says: element i is row i's figure.
func (t statTable[F]) values(f *F) []int64 {
	a := make([]int64, len(t))
	for i, row := range t {
		a[i] = row.get(f)
	}
	return a
}

// get returns the open operator of handle h, for stats0; op names the
// native in the error.
func (e *engine[O]) get(op string, h int64) (*opHandle[O], error) {
	oh, err := e.ops.Get(h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return oh, nil
}

// close releases everything the operator holds, with its task current
// (after settling its books), then drops its reference to the task's pool.
// Output batches Java has not released are a leak: their charge is given
// back anyway and close returns an error (IllegalStateException) carrying
// the allocator's leak report, unless the kind's closed hook keeps it.
func (e *engine[O]) close(h int64) error {
	oh, err := e.ops.Remove(h)
	if err != nil {
		return fmt.Errorf("close0: %w", err)
	}
	// A driver call still running on another thread would race with Close:
	// that is a Java bug the wrapper prevents; report it after closing.
	racing := oh.busy.Load()
	err = onTask(oh.ref, func() error {
		e.settle(oh)
		oh.closing.Store(true)
		return oh.op.Close()
	})
	oh.ref.release()
	if e.closed != nil && e.closed(oh, err) {
		err = nil
	} else {
		oh.untrack()
	}
	var leak *ffi.LeakError
	if errors.As(err, &leak) {
		return fmt.Errorf("%s: close0 of %s: %s: %w", e.prefix, oh.name, leak.Report(), jni.ErrIllegalState)
	}
	if err != nil {
		return fmt.Errorf("%s: close0 of %s: %w", e.prefix, oh.name, err)
	}
	if racing {
		return fmt.Errorf("%s: close0 of %s while a call on it was running: %w", e.prefix, oh.name, jni.ErrIllegalState)
	}
	return nil
}
