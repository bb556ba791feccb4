package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/cdata"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/jni"
)

// The engine behind the natives of org.nativepool.spark.example.AggBridge:
// the streaming aggregations (agg.go) of every task in the process, by
// handle. agg_exports.go has the natives, this file the work; it mirrors
// the sort engine of sorts.go.

// Indices of the array stats0 of AggBridge returns, in the order of
// aggStatFields.
const (
	aggStatRowsIn = iota
	aggStatBatchesIn
	aggStatMinValue
	aggStatMaxValue
	aggStatSumIn
	aggStatRowsOut
	aggStatBatchesOut
	aggStatSelfSpills
	aggStatSelfSpilledBytes
	aggStatRequestedSpills
	aggStatSpillRequests
	aggStatSpilledGroups
	aggStatSpilledBytes
	aggStatRuns
	aggStatMergePasses
	aggStatStateGroups
	aggStatStateCount
	aggStatStateSum
	aggStatStateBytes
	aggStatReserved
	aggStatPeakReserved
	aggStatAllocated
	aggStatPeakAllocated
	aggStatRetainedBytes
	aggStatCount // length of the array
)

// aggStatFields declares the stats0 array: each figure's name and what it
// counts. The Java copy is the enum AggStat.java (the ordinal is the
// index), checked against this table by TestAggStatFieldsMatchJavaEnum.
var aggStatFields = [aggStatCount]struct{ name, doc string }{
	aggStatRowsIn:           {"ROWS_IN", "rows pushed"},
	aggStatBatchesIn:        {"BATCHES_IN", "batches imported from Java"},
	aggStatMinValue:         {"MIN_VALUE", "least value pushed (Long.MAX_VALUE without rows)"},
	aggStatMaxValue:         {"MAX_VALUE", "greatest value pushed (Long.MIN_VALUE without rows)"},
	aggStatSumIn:            {"SUM_IN", "sum of the values pushed"},
	aggStatRowsOut:          {"ROWS_OUT", "groups the micro-batch updated, returned by next0"},
	aggStatBatchesOut:       {"BATCHES_OUT", "batches exported to Java"},
	aggStatSelfSpills:       {"SELF_SPILLS", "spills the aggregation started when the pool refused memory"},
	aggStatSelfSpilledBytes: {"SELF_SPILLED_BYTES", "memory those spills freed"},
	aggStatRequestedSpills:  {"REQUESTED_SPILLS", "spills Spark asked for (reclaim → Spill) that freed bytes"},
	aggStatSpillRequests:    {"SPILL_REQUESTS", "every Spill call, including those that found nothing to free"},
	aggStatSpilledGroups:    {"SPILLED_GROUPS", "groups written to run files"},
	aggStatSpilledBytes:     {"SPILLED_BYTES", "bytes of run files written"},
	aggStatRuns:             {"RUNS", "run files written"},
	aggStatMergePasses:      {"MERGE_PASSES", "runs merged into one to save buffers"},
	aggStatStateGroups:      {"STATE_GROUPS", "groups of the new state version"},
	aggStatStateCount:       {"STATE_COUNT", "rows counted by the new state version, every micro-batch so far"},
	aggStatStateSum:         {"STATE_SUM", "sum of the values of the new state version"},
	aggStatStateBytes:       {"STATE_BYTES", "bytes of the new state version's file"},
	aggStatReserved:         {"RESERVED", "the aggregation's reservation now"},
	aggStatPeakReserved:     {"PEAK_RESERVED", "high-water mark of reserved"},
	aggStatAllocated:        {"ALLOCATED", "bytes in live buffers of the aggregation's allocator (exports included)"},
	aggStatPeakAllocated:    {"PEAK_ALLOCATED", "high-water mark of allocated, exact"},
	aggStatRetainedBytes:    {"RETAINED_BYTES", "bytes kept after the commit (the planted leak of --leak)"},
}

// Indices of the array sample0 of AggBridge returns. The other copy is
// AggBridge.java (SAMPLE_*); change both together.
const (
	aggSampleLive            = 0 // aggregations open now
	aggSampleRetainedBatches = 1 // batches kept by the planted leak, every aggregation ever
	aggSampleRetainedBytes   = 2 // their bytes
	aggSampleCount           = 3 // length of the array
)

// aggEngine holds the aggregations opened through AggBridge. It is safe for
// concurrent use (one task thread drives each aggregation; any thread may
// sample). Build it with newAggEngine.
type aggEngine struct {
	ops    *jni.HandleTable[*aggHandle]
	logger *slog.Logger
	// join opens a reference to a task's pool (jni.JoinTaskPool in the
	// library; a test registry's in tests).
	join func(taskAttemptID int64) (taskRef, error)

	// kept are closed aggregations whose planted leak lives on: their
	// allocators stay counted in the executor memory ledger, as the memory
	// does.
	kept struct {
		sync.Mutex
		ops            []*aggHandle
		batches, bytes int64
	}
}

func newAggEngine(logger *slog.Logger, join func(int64) (taskRef, error)) *aggEngine {
	if logger == nil {
		logger = slog.Default()
	}
	// Aggregation handles carry 'G' in their top byte (the sorters' carry 'S').
	return &aggEngine{ops: jni.NewHandleTable[*aggHandle]('G', "nativeagg", "aggregation"), logger: logger, join: join}
}

// aggHandle is one aggregation opened by create0.
type aggHandle struct {
	agg     *aggregator
	ref     taskRef
	name    string
	untrack func()
	// spill is what reportSpills has reported so far.
	spill struct {
		sync.Mutex
		memory, disk int64
	}
	// busy makes a second concurrent driver call an IllegalStateException
	// instead of the aggregator's panic.
	busy atomic.Bool
}

// aggCreate is what create0 passes besides the task.
type aggCreate struct {
	name            string
	version         int64
	stateDir        string
	tempDir         string
	batchRows       int
	allocationSites bool
	retainBytes     int64
}

// create opens an aggregation on the pool of task taskAttemptID and
// returns its handle. The aggregation is built with the task current
// (onTask), as every later call on it runs.
func (e *aggEngine) create(taskAttemptID int64, c aggCreate) (int64, error) {
	if c.name == "" || c.stateDir == "" {
		return 0, fmt.Errorf("nativeagg: create0: empty consumer name or state directory: %w", jni.ErrIllegalArgument)
	}
	if c.version < 0 || c.batchRows < 0 || c.retainBytes < 0 {
		return 0, fmt.Errorf("nativeagg: create0: version %d, batchRows %d, retainBytes %d: negative: %w", c.version, c.batchRows, c.retainBytes, jni.ErrIllegalArgument)
	}
	ref, err := e.join(taskAttemptID)
	if err != nil {
		return 0, fmt.Errorf("nativeagg: create0(task %d): %w", taskAttemptID, err)
	}
	var h int64
	err = onTask(ref, func() error {
		var err error
		h, err = e.open(ref, c)
		return err
	})
	if err != nil {
		ref.release()
		return 0, fmt.Errorf("nativeagg: create0(task %d): %w", taskAttemptID, err)
	}
	return h, nil
}

// open builds an aggregation on the current task's pool and registers it
// under a new handle; on an error it leaves nothing open but ref.
func (e *aggEngine) open(ref taskRef, c aggCreate) (int64, error) {
	task, err := currentTask("nativeagg: create0")
	if err != nil {
		return 0, err
	}
	logger := e.logger.With(jni.TaskAttr(task.TaskAttemptID()))
	var allocOpts []ffi.Option
	if c.allocationSites {
		allocOpts = append(allocOpts, ffi.WithAllocationSites(true))
	}
	a, err := newAggregator(task.Pool(), aggOptions{
		Name: c.name, Version: c.version, StateDir: c.stateDir, TempDir: c.tempDir,
		BatchRows: c.batchRows, AllocatorOptions: allocOpts, RetainBytes: c.retainBytes, Logger: logger,
	})
	if err != nil {
		return 0, err
	}
	ah := &aggHandle{agg: a, ref: ref, name: c.name, untrack: func() {}}
	if ref.track != nil {
		ah.untrack = ref.track(c.name, a.Allocator())
	}
	h, err := e.ops.Insert(ah)
	if err != nil {
		_ = a.Close()
		ah.untrack()
		return 0, err
	}
	return h, nil
}

// drive runs one driver call on the aggregation of handle h with its task
// current (onTask), then reports its spills to Spark.
func (e *aggEngine) drive(op string, h int64, fn func(*aggHandle) error) error {
	ah, err := e.ops.Get(h)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if !ah.busy.CompareAndSwap(false, true) {
		return fmt.Errorf("nativeagg: %s on %s while another call on it is running: %w", op, ah.name, jni.ErrIllegalState)
	}
	defer ah.busy.Store(false)
	return onTask(ah.ref, func() error {
		err := fn(ah)
		e.reportSpills(ah)
		return err
	})
}

// reportSpills tells the current task's Spark metrics what the aggregation
// spilled since the last report: run files' bytes (diskBytesSpilled) and
// the memory its self-initiated spills freed (memoryBytesSpilled); what
// Spark's own spills of it free the plugin counts. It runs inside a native
// call on the aggregation (drive, close). A failed report is logged.
func (e *aggEngine) reportSpills(ah *aggHandle) {
	st := ah.agg.Stats()
	ah.spill.Lock()
	memory, disk := st.SelfSpilledBytes-ah.spill.memory, st.SpilledBytes-ah.spill.disk
	ah.spill.memory, ah.spill.disk = st.SelfSpilledBytes, st.SpilledBytes
	ah.spill.Unlock()
	if memory == 0 && disk == 0 {
		return
	}
	task, err := currentTask("nativeagg: reportSpills")
	if err == nil {
		err = ah.ref.reportSpill(task, memory, disk)
	}
	if err != nil {
		e.logger.Warn("nativeagg: spill bytes not reported to Spark", "consumer", ah.name, "memory", memory, "disk", disk, "err", err)
	}
}

// push imports one batch from Java (the producer keeps paying for it until
// Go releases it), adds its rows to their groups and releases it before
// returning. On an import error the array is released here.
func (e *aggEngine) push(h int64, arr *cdata.CArrowArray, sc *cdata.CArrowSchema) error {
	return e.drive("push0", h, func(ah *aggHandle) error {
		rb, err := ah.agg.Allocator().ImportRecordBatch(arr, sc)
		if err != nil {
			cdata.ReleaseCArrowArray(arr)
			return fmt.Errorf("nativeagg: push0 into %s: %w", ah.name, err)
		}
		err = ah.agg.Push(rb)
		rb.Release()
		if err != nil {
			return fmt.Errorf("nativeagg: push0 into %s: %w", ah.name, err)
		}
		return nil
	})
}

// finish ends the input and opens the merge.
func (e *aggEngine) finish(h int64) error {
	return e.drive("finish0", h, func(ah *aggHandle) error {
		if err := ah.agg.Finish(); err != nil {
			return fmt.Errorf("nativeagg: finish0 of %s: %w", ah.name, err)
		}
		return nil
	})
}

// next exports the next batch of updated groups into out and outSchema and
// reports true, or reports false after the last (the new state version is
// then committed; out untouched). The batch stays charged to the
// aggregation until Java releases out.
func (e *aggEngine) next(h int64, out *cdata.CArrowArray, outSchema *cdata.CArrowSchema) (bool, error) {
	more := false
	err := e.drive("next0", h, func(ah *aggHandle) error {
		rb, err := ah.agg.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("nativeagg: next0 of %s: %w", ah.name, err)
		}
		err = ah.agg.Allocator().ExportRecordBatch(rb, out, outSchema)
		rb.Release() // the export holds its own reference until Java releases it
		if err != nil {
			return fmt.Errorf("nativeagg: next0 of %s: %w", ah.name, err)
		}
		more = true
		return nil
	})
	return more, err
}

// stats returns the aggregation's figures laid out as stats0 returns them.
func (e *aggEngine) stats(h int64) ([]int64, error) {
	ah, err := e.ops.Get(h)
	if err != nil {
		return nil, fmt.Errorf("stats0: %w", err)
	}
	st := ah.agg.Stats()
	a := make([]int64, aggStatCount)
	a[aggStatRowsIn] = st.RowsIn
	a[aggStatBatchesIn] = st.BatchesIn
	a[aggStatMinValue] = st.MinValue
	a[aggStatMaxValue] = st.MaxValue
	a[aggStatSumIn] = st.SumIn
	a[aggStatRowsOut] = st.RowsOut
	a[aggStatBatchesOut] = st.BatchesOut
	a[aggStatSelfSpills] = st.SelfSpills
	a[aggStatSelfSpilledBytes] = st.SelfSpilledBytes
	a[aggStatRequestedSpills] = st.RequestedSpills
	a[aggStatSpillRequests] = st.SpillRequests
	a[aggStatSpilledGroups] = st.SpilledGroups
	a[aggStatSpilledBytes] = st.SpilledBytes
	a[aggStatRuns] = st.Runs
	a[aggStatMergePasses] = st.MergePasses
	a[aggStatStateGroups] = st.StateGroups
	a[aggStatStateCount] = st.StateCount
	a[aggStatStateSum] = st.StateSum
	a[aggStatStateBytes] = st.StateBytes
	a[aggStatReserved] = st.Reserved
	a[aggStatPeakReserved] = st.PeakReserved
	a[aggStatAllocated] = st.Allocated
	a[aggStatPeakAllocated] = st.PeakAllocated
	a[aggStatRetainedBytes] = st.RetainedBytes
	return a, nil
}

// close releases everything the aggregation holds, with its task current,
// then drops its reference to the task's pool. Output batches Java has not
// released are a leak: their charge is given back anyway and close returns
// an error (IllegalStateException) carrying the allocator's leak report. The
// planted leak's retained batch is not an error: it is what --leak asks
// for, so the aggregation's allocator stays counted in the executor memory
// ledger (native.allocated, and LiveNative by consumer and allocation site)
// for as long as the batch lives, that is for the life of the process.
func (e *aggEngine) close(h int64) error {
	ah, err := e.ops.Remove(h)
	if err != nil {
		return fmt.Errorf("close0: %w", err)
	}
	racing := ah.busy.Load()
	var retained int64
	err = onTask(ah.ref, func() error {
		e.reportSpills(ah)
		retained = ah.agg.Stats().RetainedBytes
		return ah.agg.Close()
	})
	ah.ref.release()
	var leak *ffi.LeakError
	if errors.As(err, &leak) && retained > 0 && leak.Exports == 0 && leak.Imports == 0 && leak.Bytes == retained {
		e.keep(ah, retained)
		err = nil
	} else {
		ah.untrack()
	}
	if errors.As(err, &leak) {
		return fmt.Errorf("nativeagg: close0 of %s: %s: %w", ah.name, leak.Report(), jni.ErrIllegalState)
	}
	if err != nil {
		return fmt.Errorf("nativeagg: close0 of %s: %w", ah.name, err)
	}
	if racing {
		return fmt.Errorf("nativeagg: close0 of %s while a call on it was running: %w", ah.name, jni.ErrIllegalState)
	}
	return nil
}

// keep holds a closed aggregation whose retained batch lives on.
func (e *aggEngine) keep(ah *aggHandle, bytes int64) {
	e.kept.Lock()
	defer e.kept.Unlock()
	e.kept.ops = append(e.kept.ops, ah)
	e.kept.batches++
	e.kept.bytes += bytes
}

// sample returns SAMPLE_*: the aggregations open now and what the planted
// leak keeps.
func (e *aggEngine) sample() []int64 {
	a := make([]int64, aggSampleCount)
	a[aggSampleLive] = int64(e.ops.Len())
	e.kept.Lock()
	a[aggSampleRetainedBatches] = e.kept.batches
	a[aggSampleRetainedBytes] = e.kept.bytes
	e.kept.Unlock()
	return a
}
