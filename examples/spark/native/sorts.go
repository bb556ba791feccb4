package main

import (
	"log/slog"
	"sync/atomic"

	extsort "github.com/nativepool/nativepool/examples/sort"
	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/internal/gomem"
	"github.com/nativepool/nativepool/taskshared"
)

// The engine behind the natives of org.nativepool.spark.example.SortBridge:
// the external sorters (examples/sort) of every task in the process, by
// handle. exports.go has the natives; this file has what is the sorters'
// own (create0's arguments, stats0, sample0 with the allocated ≤ reserved
// checks and the Go runtime's figures), and engine.go the rest, which the
// aggregations of aggs.go share.

// sortFigures are a sorter's figures as stats0 reports them: the sorter's
// own, and the engine's checks and batch counts.
type sortFigures struct {
	extsort.Stats
	checks, violations, batchesIn, batchesOut int64
}

// sortStats declares SortBridge's stats0 array; its Java copy is the enum
// SortStat.java.
var sortStats = statTable[sortFigures]{
	{"ROWS_IN", "rows pushed", func(f *sortFigures) int64 { return f.RowsIn }},
	{"ROWS_OUT", "rows returned by next0", func(f *sortFigures) int64 { return f.RowsOut }},
	{"SELF_SPILLS", "spills the sorter started when the pool refused a buffer", func(f *sortFigures) int64 { return f.SelfSpills }},
	{"REQUESTED_SPILLS", "spills Spark asked for (reclaim → Spill) that freed bytes", func(f *sortFigures) int64 { return f.RequestedSpills }},
	{"SPILL_REQUESTS", "every Spill call, including those that found nothing to free", func(f *sortFigures) int64 { return f.SpillRequests }},
	{"SPILLED_ROWS", "rows written to run files", func(f *sortFigures) int64 { return f.SpilledRows }},
	{"SPILLED_BYTES", "bytes of run files written", func(f *sortFigures) int64 { return f.SpilledBytes }},
	{"RUNS", "run files written", func(f *sortFigures) int64 { return f.Runs }},
	{"MERGE_PASSES", "multi-pass merges", func(f *sortFigures) int64 { return f.MergePasses }},
	{"MAX_FAN_IN", "most runs merged at once, bounded by the batches the pool granted", func(f *sortFigures) int64 { return f.MaxFanIn }},
	{"MERGE_LEVELS", "depth of the merge tree, ceil(log_fanin(runs))", func(f *sortFigures) int64 { return f.MergeLevels }},
	{"RESERVED", "the sorter's reservations now (its chunks' account's slack included)", func(f *sortFigures) int64 { return f.Reserved }},
	{"PEAK_RESERVED", "high-water mark of reserved", func(f *sortFigures) int64 { return f.PeakReserved }},
	{"ALLOCATED", "bytes in live buffers of the sorter's allocators (exports included)", func(f *sortFigures) int64 { return f.Allocated }},
	{"PEAK_ALLOCATED", "high-water mark of allocated, sampled with reserved's", func(f *sortFigures) int64 { return f.PeakAllocated }},
	{"CHECKS", "allocated ≤ reserved checks made (after every call, and by sample0)", func(f *sortFigures) int64 { return f.checks }},
	{"VIOLATIONS", "checks that found allocated > reserved", func(f *sortFigures) int64 { return f.violations }},
	{"BATCHES_IN", "batches imported from Java", func(f *sortFigures) int64 { return f.batchesIn }},
	{"BATCHES_OUT", "batches exported to Java", func(f *sortFigures) int64 { return f.batchesOut }},
	{"PEAK_SLACK", "high-water mark of the chunks' account's slack: in reserved, in no buffer", func(f *sortFigures) int64 { return f.PeakSlack }},
}

// Indices of the array sample0 returns. The other copy is SortBridge.java
// (SAMPLE_*); change both together.
const (
	sampleLiveSorters = 0 // sorters open now
	sampleReserved    = 1 // sum of their reservations
	sampleAllocated   = 2 // sum of their allocators' live bytes
	sampleChecks      = 3 // allocated ≤ reserved checks, every sorter ever
	sampleViolations  = 4 // checks that failed, every sorter ever
	sampleGoRuntime   = 5 // bytes the Go runtime holds mapped (heap, stacks, metadata)
	sampleRSS         = 6 // the process's resident set
	sampleGoPeak      = 7 // peak of sampleGoRuntime, read after every driver call and by sample0
	sampleGoMapped    = 8 // every byte the Go runtime has mapped, released or not: it never shrinks
	sampleCount       = 9 // length of the array
)

// sortEngine is the engine of SortBridge's natives: the sorters of every
// task in the process, with the counters of closed ones and the Go
// runtime's peak. It is safe for concurrent use. Build it with
// newSortEngine.
type sortEngine struct {
	*engine[*sortOp]

	// Counters of closed sorters, so that sample0 stays cumulative.
	closedChecks, closedViolations atomic.Int64
	// goPeak is the highest Go runtime figure read (see readGoRuntime).
	goPeak atomic.Int64
}

// sortOp is one sorter as the engine drives it, with its allocated ≤
// reserved checks.
type sortOp struct {
	*extsort.Sorter
	checks, violations atomic.Int64
}

// spilled is what the sorter has spilled so far (the engine's operator):
// the memory its self-initiated spills freed, the bytes of its run files.
func (o *sortOp) spilled() (memory, disk int64) {
	st := o.Stats()
	return st.SelfSpilledBytes, st.SpilledBytes
}

// sortHandle is one sorter opened by create0.
type sortHandle = opHandle[*sortOp]

// newSortEngine returns the engine of SortBridge's natives. Its handles
// carry 'S' in their top byte. After every driver call, and before close,
// it checks the sorter's books and reads the Go runtime's figures.
func newSortEngine(logger *slog.Logger, join func(int64) (taskRef, error)) *sortEngine {
	e := &sortEngine{engine: newEngine[*sortOp]('S', "nativesort", "sorter", logger, join)}
	e.afterCall = func(sh *sortHandle) {
		e.check(sh)
		e.readGoRuntime()
	}
	e.closed = func(sh *sortHandle, _ error) bool {
		e.closedChecks.Add(sh.op.checks.Load())
		e.closedViolations.Add(sh.op.violations.Load())
		return false
	}
	return e
}

// goRuntime is what runtime/metrics says the Go runtime holds: held is
// mapped minus released to the OS (heap, stacks, metadata; what it can
// have resident), mapped is all it has mapped, released or not.
type goRuntime struct{ held, mapped int64 }

// readGoRuntime reads the Go runtime's figures and raises the engine's peak
// of held. It is called after every driver call and by sample, so the
// peak is that of the moments the Go heap can grow at: a sorter's calls.
func (e *sortEngine) readGoRuntime() goRuntime {
	mapped, released, ok := gomem.Read()
	if !ok {
		return goRuntime{}
	}
	g := goRuntime{mapped: mapped, held: mapped - released}
	for {
		cur := e.goPeak.Load()
		if g.held <= cur || e.goPeak.CompareAndSwap(cur, g.held) {
			return g
		}
	}
}

// create opens a sorter on the pool of task taskAttemptID and returns its
// handle. batchRows ≤ 0 and tempDir "" take extsort's defaults.
func (e *sortEngine) create(taskAttemptID int64, name string, batchRows int, tempDir string) (int64, error) {
	return e.engine.create(taskAttemptID, name, func(task *taskshared.Handle, logger *slog.Logger) (*sortOp, error) {
		s, err := extsort.New(task.Pool(), extsort.Options{Name: name, BatchRows: batchRows, TempDir: tempDir, Logger: logger})
		if err != nil {
			return nil, err
		}
		return &sortOp{Sorter: s}, nil
	})
}

// stats returns the sorter's figures laid out as stats0 returns them.
func (e *sortEngine) stats(h int64) ([]int64, error) {
	sh, err := e.get("stats0", h)
	if err != nil {
		return nil, err
	}
	return sortStats.values(&sortFigures{
		Stats:  sh.op.Stats(),
		checks: sh.op.checks.Load(), violations: sh.op.violations.Load(),
		batchesIn: sh.batchesIn.Load(), batchesOut: sh.batchesOut.Load(),
	}), nil
}

// sample sums the live sorters' books, checking allocated ≤ reserved on
// each, and reads the process's RSS and the Go runtime's share.
func (e *sortEngine) sample() []int64 {
	a := make([]int64, sampleCount)
	var live []*sortHandle
	e.ops.Each(func(sh *sortHandle) { live = append(live, sh) })
	for _, sh := range live {
		alloc, res := e.check(sh)
		a[sampleLiveSorters]++
		a[sampleReserved] += res
		a[sampleAllocated] += alloc
	}
	a[sampleChecks] = e.closedChecks.Load()
	a[sampleViolations] = e.closedViolations.Load()
	e.ops.Each(func(sh *sortHandle) {
		a[sampleChecks] += sh.op.checks.Load()
		a[sampleViolations] += sh.op.violations.Load()
	})
	g := e.readGoRuntime()
	a[sampleGoRuntime] = g.held
	a[sampleGoPeak] = e.goPeak.Load()
	a[sampleGoMapped] = g.mapped
	if rss, err := ffi.ReadRSS(); err == nil {
		a[sampleRSS] = rss
	}
	return a
}

// check verifies allocated ≤ reserved for each of a sorter's allocators
// (the chunks' and the rest's, each over its own reservation) and returns
// their sums. An allocator charges its reservation before it counts a
// buffer as allocated and uncounts it before it gives the charge back, so
// the relation holds at every instant; the two figures are read a few
// times until allocated reads the same on both sides of the reservation,
// so that a check made while the task thread allocates or frees compares
// figures of one moment. A check that cannot get a stable read is not
// counted.
func (e *sortEngine) check(sh *sortHandle) (allocated, reserved int64) {
	for _, a := range sh.op.Allocators() {
		al, res := e.checkOne(sh, a)
		allocated += al
		reserved += res
	}
	return allocated, reserved
}

func (e *sortEngine) checkOne(sh *sortHandle, a *ffi.Allocator) (allocated, reserved int64) {
	r := a.Reservation()
	for range 8 {
		if sh.closing.Load() {
			return 0, 0
		}
		a1 := a.Allocated()
		res := r.Size()
		a2 := a.Allocated()
		if a1 != a2 {
			continue
		}
		sh.op.checks.Add(1)
		if a1 > res {
			if sh.op.violations.Add(1) == 1 {
				e.logger.Error("nativesort: allocated > reserved", "consumer", sh.name, "allocated", a1, "reserved", res, "books", a.Snapshot().String())
			}
		}
		return a1, res
	}
	return a.Allocated(), r.Size()
}

var _ operator = (*sortOp)(nil)
