package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/cdata"

	extsort "github.com/nativepool/nativepool/examples/sort"
	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/internal/gomem"
	"github.com/nativepool/nativepool/jni"
)

// Indices of the array stats0 returns, in the order of sortStatFields.
const (
	statRowsIn = iota
	statRowsOut
	statSelfSpills
	statRequestedSpills
	statSpillRequests
	statSpilledRows
	statSpilledBytes
	statRuns
	statMergePasses
	statMaxFanIn
	statMergeLevels
	statReserved
	statPeakReserved
	statAllocated
	statPeakAllocated
	statChecks
	statViolations
	statBatchesIn
	statBatchesOut
	statPeakSlack
	statCount // length of the array
)

// sortStatFields declares the stats0 array: each figure's name and what it
// counts. The Java copy is the enum SortStat.java (the ordinal is the index),
// checked against this table by TestSortStatFieldsMatchJavaEnum.
var sortStatFields = [statCount]struct{ name, doc string }{
	statRowsIn:          {"ROWS_IN", "rows pushed"},
	statRowsOut:         {"ROWS_OUT", "rows returned by next0"},
	statSelfSpills:      {"SELF_SPILLS", "spills the sorter started when the pool refused a buffer"},
	statRequestedSpills: {"REQUESTED_SPILLS", "spills Spark asked for (reclaim → Spill) that freed bytes"},
	statSpillRequests:   {"SPILL_REQUESTS", "every Spill call, including those that found nothing to free"},
	statSpilledRows:     {"SPILLED_ROWS", "rows written to run files"},
	statSpilledBytes:    {"SPILLED_BYTES", "bytes of run files written"},
	statRuns:            {"RUNS", "run files written"},
	statMergePasses:     {"MERGE_PASSES", "multi-pass merges"},
	statMaxFanIn:        {"MAX_FAN_IN", "most runs merged at once, bounded by the batches the pool granted"},
	statMergeLevels:     {"MERGE_LEVELS", "depth of the merge tree, ceil(log_fanin(runs))"},
	statReserved:        {"RESERVED", "the sorter's reservations now (its chunks' account's slack included)"},
	statPeakReserved:    {"PEAK_RESERVED", "high-water mark of reserved"},
	statAllocated:       {"ALLOCATED", "bytes in live buffers of the sorter's allocators (exports included)"},
	statPeakAllocated:   {"PEAK_ALLOCATED", "high-water mark of allocated, sampled with reserved's"},
	statChecks:          {"CHECKS", "allocated ≤ reserved checks made (after every call, and by sample0)"},
	statViolations:      {"VIOLATIONS", "checks that found allocated > reserved"},
	statBatchesIn:       {"BATCHES_IN", "batches imported from Java"},
	statBatchesOut:      {"BATCHES_OUT", "batches exported to Java"},
	statPeakSlack:       {"PEAK_SLACK", "high-water mark of the chunks' account's slack: in reserved, in no buffer"},
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

// engine holds the sorters opened through SortBridge and the cumulative
// counters of closed ones. It is safe for concurrent use (one JVM thread
// per task drives each sorter; the demo's sampler thread reads all of
// them). The zero engine is not usable; build it with newEngine.
type engine struct {
	sorters *jni.HandleTable[*sortHandle]
	logger  *slog.Logger
	// join opens a reference to a task's pool (jni.JoinTaskPool in the
	// library; a test registry's in tests).
	join func(taskAttemptID int64) (taskRef, error)

	// Counters of closed sorters, so that sample0 stays cumulative.
	closedChecks, closedViolations atomic.Int64
	// goPeak is the highest Go runtime figure read (see readGoRuntime).
	goPeak atomic.Int64
}

// goRuntime is what runtime/metrics says the Go runtime holds: held is
// mapped minus released to the OS (heap, stacks, metadata; what it can
// have resident), mapped is all it has mapped, released or not.
type goRuntime struct{ held, mapped int64 }

// readGoRuntime reads the Go runtime's figures and raises the engine's peak
// of held. It is called after every driver call and by sample, so the
// peak is that of the moments the Go heap can grow at: a sorter's calls.
func (e *engine) readGoRuntime() goRuntime {
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

func newEngine(logger *slog.Logger, join func(int64) (taskRef, error)) *engine {
	if logger == nil {
		logger = slog.Default()
	}
	// Sorter handles carry 'S' in their top byte, so a pool or reservation
	// handle of package jni passed by mistake is told apart.
	return &engine{sorters: jni.NewHandleTable[*sortHandle]('S', "nativesort", "sorter"), logger: logger, join: join}
}

// sortHandle is one sorter opened by create0.
type sortHandle struct {
	sorter *extsort.Sorter
	ref    taskRef // the task's pool
	name   string
	// untrack ends the ledger's count of the sorter's allocator.
	untrack func()
	// spill is what reportSpills has reported so far, from the sorter's
	// cumulative SelfSpilledBytes and SpilledBytes.
	spill struct {
		sync.Mutex
		memory, disk int64
	}
	// busy makes a second concurrent driver call an IllegalStateException
	// instead of extsort's panic; a sorter belongs to one task thread.
	busy atomic.Bool
	// closed is set just before the sorter closes: sample0 stops checking
	// it (a leaked export keeps allocated > 0 after the reservation closed).
	closed                atomic.Bool
	checks, violations    atomic.Int64
	batchesIn, batchesOut atomic.Int64
}

// create opens a sorter on the pool of task taskAttemptID and returns its
// handle. batchRows ≤ 0 and tempDir "" take extsort's defaults. The sorter
// is built with the task current (onTask), as every later call on it runs.
func (e *engine) create(taskAttemptID int64, name string, batchRows int, tempDir string) (int64, error) {
	if name == "" {
		return 0, fmt.Errorf("nativesort: create0: empty consumer name: %w", jni.ErrIllegalArgument)
	}
	ref, err := e.join(taskAttemptID)
	if err != nil {
		return 0, fmt.Errorf("nativesort: create0(task %d): %w", taskAttemptID, err)
	}
	var h int64
	err = onTask(ref, func() error {
		var err error
		h, err = e.open(ref, name, batchRows, tempDir)
		return err
	})
	if err != nil {
		ref.release()
		return 0, fmt.Errorf("nativesort: create0(task %d): %w", taskAttemptID, err)
	}
	return h, nil
}

// open builds a sorter on the current task's pool and registers it under
// a new handle; on an error it leaves nothing open but ref.
func (e *engine) open(ref taskRef, name string, batchRows int, tempDir string) (int64, error) {
	task, err := currentTask("nativesort: create0")
	if err != nil {
		return 0, err
	}
	// The sorter's records (spills) name the task on whichever thread makes them.
	logger := e.logger.With(jni.TaskAttr(task.TaskAttemptID()))
	s, err := extsort.New(task.Pool(), extsort.Options{Name: name, BatchRows: batchRows, TempDir: tempDir, Logger: logger})
	if err != nil {
		return 0, err
	}
	sh := &sortHandle{sorter: s, ref: ref, name: name, untrack: func() {}}
	if ref.track != nil {
		sh.untrack = ref.track(name, s.Allocator())
	}
	h, err := e.sorters.Insert(sh)
	if err != nil {
		_ = s.Close()
		sh.untrack()
		return 0, err
	}
	return h, nil
}

// drive runs one driver call on the sorter of handle h with its task
// current (onTask), then checks the books.
func (e *engine) drive(op string, h int64, fn func(*sortHandle) error) error {
	sh, err := e.sorters.Get(h)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if !sh.busy.CompareAndSwap(false, true) {
		return fmt.Errorf("nativesort: %s on %s while another call on it is running: %w", op, sh.name, jni.ErrIllegalState)
	}
	defer sh.busy.Store(false)
	return onTask(sh.ref, func() error {
		err := fn(sh)
		e.check(sh)
		e.reportSpills(sh)
		e.readGoRuntime()
		return err
	})
}

// reportSpills tells the task's Spark metrics what the sorter spilled since
// the last report: its run files' bytes (diskBytesSpilled) and the memory
// its self-initiated spills freed (memoryBytesSpilled; what Spark's spills
// of it free is counted by the plugin as they happen). Spark-requested
// spills run outside the sorter's calls, so their files are reported at
// the next call or at close. The metrics are the current task's: reportSpills
// runs inside a native call on the sorter (drive, close). A failed report
// costs a metric, never the sort: it is logged.
func (e *engine) reportSpills(sh *sortHandle) {
	st := sh.sorter.Stats()
	sh.spill.Lock()
	memory, disk := st.SelfSpilledBytes-sh.spill.memory, st.SpilledBytes-sh.spill.disk
	sh.spill.memory, sh.spill.disk = st.SelfSpilledBytes, st.SpilledBytes
	sh.spill.Unlock()
	if memory == 0 && disk == 0 {
		return
	}
	task, err := currentTask("nativesort: reportSpills")
	if err == nil {
		err = sh.ref.reportSpill(task, memory, disk)
	}
	if err != nil {
		e.logger.Warn("nativesort: spill bytes not reported to Spark", "consumer", sh.name, "memory", memory, "disk", disk, "err", err)
	}
}

// push imports one batch from Java (the producer keeps paying for it until
// Go releases it: ffi.ProducerCharges), copies it into the sorter and
// releases it at once, so Java's buffers go back before push0 returns. On
// an import error the array is released here (arr is then released, as
// the C Data Interface asks of a consumer that takes it).
func (e *engine) push(h int64, arr *cdata.CArrowArray, sc *cdata.CArrowSchema) error {
	return e.drive("push0", h, func(sh *sortHandle) error {
		rb, err := sh.sorter.Allocator().ImportRecordBatch(arr, sc)
		if err != nil {
			cdata.ReleaseCArrowArray(arr)
			return fmt.Errorf("nativesort: push0 into %s: %w", sh.name, err)
		}
		err = sh.sorter.Push(rb)
		rb.Release()
		if err != nil {
			return fmt.Errorf("nativesort: push0 into %s: %w", sh.name, err)
		}
		sh.batchesIn.Add(1)
		return nil
	})
}

// finish ends the input.
func (e *engine) finish(h int64) error {
	return e.drive("finish0", h, func(sh *sortHandle) error {
		if err := sh.sorter.Finish(); err != nil {
			return fmt.Errorf("nativesort: finish0 of %s: %w", sh.name, err)
		}
		return nil
	})
}

// next exports the next sorted batch into out and outSchema and reports
// true, or reports false after the last batch (out untouched). The batch's
// buffers stay charged to the sorter until Java releases out (the producer
// pays: ffi's export rule); Java imports it with an allocator that charges
// nothing.
func (e *engine) next(h int64, out *cdata.CArrowArray, outSchema *cdata.CArrowSchema) (bool, error) {
	more := false
	err := e.drive("next0", h, func(sh *sortHandle) error {
		rb, err := sh.sorter.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("nativesort: next0 of %s: %w", sh.name, err)
		}
		err = sh.sorter.Allocator().ExportRecordBatch(rb, out, outSchema)
		rb.Release() // the export holds its own reference until Java releases it
		if err != nil {
			return fmt.Errorf("nativesort: next0 of %s: %w", sh.name, err)
		}
		sh.batchesOut.Add(1)
		more = true
		return nil
	})
	return more, err
}

// stats returns the sorter's figures laid out as stats0 returns them.
func (e *engine) stats(h int64) ([]int64, error) {
	sh, err := e.sorters.Get(h)
	if err != nil {
		return nil, fmt.Errorf("stats0: %w", err)
	}
	st := sh.sorter.Stats()
	a := make([]int64, len(sortStatFields))
	a[statRowsIn] = st.RowsIn
	a[statRowsOut] = st.RowsOut
	a[statSelfSpills] = st.SelfSpills
	a[statRequestedSpills] = st.RequestedSpills
	a[statSpillRequests] = st.SpillRequests
	a[statSpilledRows] = st.SpilledRows
	a[statSpilledBytes] = st.SpilledBytes
	a[statRuns] = st.Runs
	a[statMergePasses] = st.MergePasses
	a[statMaxFanIn] = st.MaxFanIn
	a[statMergeLevels] = st.MergeLevels
	a[statReserved] = st.Reserved
	a[statPeakReserved] = st.PeakReserved
	a[statAllocated] = st.Allocated
	a[statPeakAllocated] = st.PeakAllocated
	a[statChecks] = sh.checks.Load()
	a[statViolations] = sh.violations.Load()
	a[statBatchesIn] = sh.batchesIn.Load()
	a[statBatchesOut] = sh.batchesOut.Load()
	a[statPeakSlack] = st.PeakSlack
	return a, nil
}

// close releases everything the sorter holds and removes its run files,
// with its task current, then drops its reference to the task's pool.
// Output batches Java has not
// released are a leak: their charge is given back anyway and close returns
// an error (IllegalStateException) carrying the allocator's leak report.
func (e *engine) close(h int64) error {
	sh, err := e.sorters.Remove(h)
	if err != nil {
		return fmt.Errorf("close0: %w", err)
	}
	// A driver call still running on another thread would race with Close:
	// that is a Java bug the wrapper prevents; report it after closing.
	racing := sh.busy.Load()
	err = onTask(sh.ref, func() error {
		e.check(sh)
		e.reportSpills(sh)
		sh.closed.Store(true)
		err := sh.sorter.Close()
		sh.untrack()
		return err
	})
	sh.ref.release()
	e.closedChecks.Add(sh.checks.Load())
	e.closedViolations.Add(sh.violations.Load())
	var leak *ffi.LeakError
	if errors.As(err, &leak) {
		return fmt.Errorf("nativesort: close0 of %s: %s: %w", sh.name, leak.Report(), jni.ErrIllegalState)
	}
	if err != nil {
		return fmt.Errorf("nativesort: close0 of %s: %w", sh.name, err)
	}
	if racing {
		return fmt.Errorf("nativesort: close0 of %s while a call on it was running: %w", sh.name, jni.ErrIllegalState)
	}
	return nil
}

// sample sums the live sorters' books, checking allocated ≤ reserved on
// each, and reads the process's RSS and the Go runtime's share.
func (e *engine) sample() []int64 {
	a := make([]int64, sampleCount)
	var live []*sortHandle
	e.sorters.Each(func(sh *sortHandle) { live = append(live, sh) })
	for _, sh := range live {
		alloc, res := e.check(sh)
		a[sampleLiveSorters]++
		a[sampleReserved] += res
		a[sampleAllocated] += alloc
	}
	a[sampleChecks] = e.closedChecks.Load()
	a[sampleViolations] = e.closedViolations.Load()
	e.sorters.Each(func(sh *sortHandle) {
		a[sampleChecks] += sh.checks.Load()
		a[sampleViolations] += sh.violations.Load()
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
func (e *engine) check(sh *sortHandle) (allocated, reserved int64) {
	for _, a := range sh.sorter.Allocators() {
		al, res := e.checkOne(sh, a)
		allocated += al
		reserved += res
	}
	return allocated, reserved
}

func (e *engine) checkOne(sh *sortHandle, a *ffi.Allocator) (allocated, reserved int64) {
	r := a.Reservation()
	for range 8 {
		if sh.closed.Load() {
			return 0, 0
		}
		a1 := a.Allocated()
		res := r.Size()
		a2 := a.Allocated()
		if a1 != a2 {
			continue
		}
		sh.checks.Add(1)
		if a1 > res {
			if sh.violations.Add(1) == 1 {
				e.logger.Error("nativesort: allocated > reserved", "consumer", sh.name, "allocated", a1, "reserved", res, "books", a.Snapshot().String())
			}
		}
		return a1, res
	}
	return a.Allocated(), r.Size()
}
