package main

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/jni"
	"github.com/nativepool/nativepool/taskshared"
)

// The engine behind the natives of org.nativepool.spark.example.AggBridge:
// the streaming aggregations (agg.go) of every task in the process, by
// handle. agg_exports.go has the natives; this file has what is the
// aggregations' own (create0's arguments, stats0, sample0, the planted
// leak kept at close0), and engine.go the rest, which the sorters of
// sorts.go share.

// aggStatTable declares AggBridge's stats0 array, from the aggregator's
// figures; its Java copy is the enum AggStat.java.
var aggStatTable = statTable[aggStats]{
	{"ROWS_IN", "rows pushed", func(f *aggStats) int64 { return f.RowsIn }},
	{"BATCHES_IN", "batches imported from Java", func(f *aggStats) int64 { return f.BatchesIn }},
	{"MIN_VALUE", "least value pushed (Long.MAX_VALUE without rows)", func(f *aggStats) int64 { return f.MinValue }},
	{"MAX_VALUE", "greatest value pushed (Long.MIN_VALUE without rows)", func(f *aggStats) int64 { return f.MaxValue }},
	{"SUM_IN", "sum of the values pushed", func(f *aggStats) int64 { return f.SumIn }},
	{"ROWS_OUT", "groups the micro-batch updated, returned by next0", func(f *aggStats) int64 { return f.RowsOut }},
	{"BATCHES_OUT", "batches exported to Java", func(f *aggStats) int64 { return f.BatchesOut }},
	{"SELF_SPILLS", "spills the aggregation started when the pool refused memory", func(f *aggStats) int64 { return f.SelfSpills }},
	{"SELF_SPILLED_BYTES", "memory those spills freed", func(f *aggStats) int64 { return f.SelfSpilledBytes }},
	{"REQUESTED_SPILLS", "spills Spark asked for (reclaim → Spill) that freed bytes", func(f *aggStats) int64 { return f.RequestedSpills }},
	{"SPILL_REQUESTS", "every Spill call, including those that found nothing to free", func(f *aggStats) int64 { return f.SpillRequests }},
	{"SPILLED_GROUPS", "groups written to run files", func(f *aggStats) int64 { return f.SpilledGroups }},
	{"SPILLED_BYTES", "bytes of run files written", func(f *aggStats) int64 { return f.SpilledBytes }},
	{"RUNS", "run files written", func(f *aggStats) int64 { return f.Runs }},
	{"MERGE_PASSES", "runs merged into one to save buffers", func(f *aggStats) int64 { return f.MergePasses }},
	{"STATE_GROUPS", "groups of the new state version", func(f *aggStats) int64 { return f.StateGroups }},
	{"STATE_COUNT", "rows counted by the new state version, every micro-batch so far", func(f *aggStats) int64 { return f.StateCount }},
	{"STATE_SUM", "sum of the values of the new state version", func(f *aggStats) int64 { return f.StateSum }},
	{"STATE_BYTES", "bytes of the new state version's file", func(f *aggStats) int64 { return f.StateBytes }},
	{"RESERVED", "the aggregation's reservation now", func(f *aggStats) int64 { return f.Reserved }},
	{"PEAK_RESERVED", "high-water mark of reserved", func(f *aggStats) int64 { return f.PeakReserved }},
	{"ALLOCATED", "bytes in live buffers of the aggregation's allocator (exports included)", func(f *aggStats) int64 { return f.Allocated }},
	{"PEAK_ALLOCATED", "high-water mark of allocated, exact", func(f *aggStats) int64 { return f.PeakAllocated }},
	{"RETAINED_BYTES", "bytes kept after the commit (the planted leak of --leak)", func(f *aggStats) int64 { return f.RetainedBytes }},
}

// Indices of the array sample0 of AggBridge returns. The other copy is
// AggBridge.java (SAMPLE_*); change both together.
const (
	aggSampleLive            = 0 // aggregations open now
	aggSampleRetainedBatches = 1 // batches kept by the planted leak, every aggregation ever
	aggSampleRetainedBytes   = 2 // their bytes
	aggSampleCount           = 3 // length of the array
)

// aggEngine is the engine of AggBridge's natives: the aggregations of
// every task in the process, and the closed ones whose planted leak lives
// on. It is safe for concurrent use (one task thread drives each
// aggregation; any thread may sample). Build it with newAggEngine.
type aggEngine struct {
	*engine[*aggregator]

	// kept are closed aggregations whose planted leak lives on: their
	// allocators stay counted in the executor memory ledger, as the memory
	// does.
	kept struct {
		sync.Mutex
		ops            []*aggHandle
		batches, bytes int64
	}
}

// aggHandle is one aggregation opened by create0.
type aggHandle = opHandle[*aggregator]

// newAggEngine returns the engine of AggBridge's natives. Its handles
// carry 'G' in their top byte (the sorters' carry 'S'). An aggregation
// whose only leak at close is the batch --leak planted stays counted in
// the executor memory ledger (native.allocated, and LiveNative by consumer
// and allocation site) for as long as the batch lives, that is for the
// life of the process, and its close does not throw.
func newAggEngine(logger *slog.Logger, join func(int64) (taskRef, error)) *aggEngine {
	e := &aggEngine{engine: newEngine[*aggregator]('G', "nativeagg", "aggregation", logger, join)}
	e.closed = func(ah *aggHandle, closeErr error) bool {
		retained := ah.op.retained()
		var leak *ffi.LeakError
		if !errors.As(closeErr, &leak) || retained == 0 || leak.Exports != 0 || leak.Imports != 0 || leak.Bytes != retained {
			return false
		}
		e.keep(ah, retained)
		return true
	}
	return e
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
// returns its handle.
func (e *aggEngine) create(taskAttemptID int64, c aggCreate) (int64, error) {
	if c.name == "" || c.stateDir == "" {
		return 0, fmt.Errorf("nativeagg: create0: empty consumer name or state directory: %w", jni.ErrIllegalArgument)
	}
	if c.version < 0 || c.batchRows < 0 || c.retainBytes < 0 {
		return 0, fmt.Errorf("nativeagg: create0: version %d, batchRows %d, retainBytes %d: negative: %w", c.version, c.batchRows, c.retainBytes, jni.ErrIllegalArgument)
	}
	return e.engine.create(taskAttemptID, c.name, func(task *taskshared.Handle, logger *slog.Logger) (*aggregator, error) {
		var allocOpts []ffi.Option
		if c.allocationSites {
			allocOpts = append(allocOpts, ffi.WithAllocationSites(true))
		}
		return newAggregator(task.Pool(), aggOptions{
			Name: c.name, Version: c.version, StateDir: c.stateDir, TempDir: c.tempDir,
			BatchRows: c.batchRows, AllocatorOptions: allocOpts, RetainBytes: c.retainBytes, Logger: logger,
		})
	})
}

// stats returns the aggregation's figures laid out as stats0 returns them.
func (e *aggEngine) stats(h int64) ([]int64, error) {
	ah, err := e.get("stats0", h)
	if err != nil {
		return nil, err
	}
	st := ah.op.Stats()
	return aggStatTable.values(&st), nil
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

var _ operator = (*aggregator)(nil)
