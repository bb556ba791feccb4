package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/arbiter"
	extsort "github.com/nativepool/nativepool/examples/sort"
	"github.com/nativepool/nativepool/jni"
	"github.com/nativepool/nativepool/pool"
	"github.com/nativepool/nativepool/taskshared"
)

// These tests drive the engine behind SortBridge's natives without a JVM:
// a Go producer stands in for Java, exporting batches through the C Data
// Interface into C-allocated structs (as ArrowArray.allocateNew does) and
// importing the sorted batches back with a plain, non-charging arrow-go
// import (as Java's dedicated import allocator does).

// cStructs allocates zeroed C memory for C Data structs.
type cStructs struct {
	m    *mallocator.Mallocator
	bufs [][]byte
}

func newCStructs(t *testing.T) *cStructs {
	c := &cStructs{m: mallocator.NewMallocator()}
	t.Cleanup(func() {
		for _, b := range c.bufs {
			c.m.Free(b)
		}
		c.m.AssertSize(t, 0)
	})
	return c
}

func (c *cStructs) array() *cdata.CArrowArray {
	b := c.m.Allocate(int(unsafe.Sizeof(cdata.CArrowArray{})))
	c.bufs = append(c.bufs, b)
	return (*cdata.CArrowArray)(unsafe.Pointer(&b[0]))
}

func (c *cStructs) schema() *cdata.CArrowSchema {
	b := c.m.Allocate(int(unsafe.Sizeof(cdata.CArrowSchema{})))
	c.bufs = append(c.bufs, b)
	return (*cdata.CArrowSchema)(unsafe.Pointer(&b[0]))
}

// fixedPool makes an engine whose every task's pool is p.
func fixedPool(t *testing.T, p pool.Pool) *engine {
	e, _ := fixedPoolReporting(t, p)
	return e
}

// spillReports sums what an engine of fixedPoolReporting reported with
// jni.ReportSpill's stand-in, over every task.
type spillReports struct{ memory, disk atomic.Int64 }

// fixedPoolReporting is fixedPool, and also returns the spill bytes the
// engine reports.
func fixedPoolReporting(t *testing.T, p pool.Pool) (*engine, *spillReports) {
	t.Helper()
	tasks := newTestTasks(t, func(int64) pool.Pool { return p })
	reports := &spillReports{}
	report := func(_ *taskshared.Handle, memory, disk int64) error {
		reports.memory.Add(memory)
		reports.disk.Add(disk)
		return nil
	}
	e := newEngine(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		func(task int64) (taskRef, error) {
			h, release, err := tasks.join(task)
			if err != nil {
				return taskRef{}, err
			}
			return taskRef{task: h, reportSpill: report, release: release}, nil
		})
	return e, reports
}

// sortThrough pushes rows generated from seed through the sorter of h in
// batches of batch rows, then drains it, checking order and multiset.
func sortThrough(t *testing.T, e *engine, h int64, cs *cStructs, seed uint64, rows, batch int) {
	t.Helper()
	g := extsort.NewGenerator(seed, 0)
	in := mallocator.NewMallocator()
	for pushed := 0; pushed < rows; pushed += batch {
		rb := g.Next(in, min(batch, rows-pushed))
		arr, sc := cs.array(), cs.schema()
		cdata.ExportArrowRecordBatch(rb, arr, sc)
		rb.Release()
		require.NoError(t, e.push(h, arr, sc))
		assert.Nil(t, arrayReleaseFn(arr), "push0 released the producer's array before returning")
	}
	in.AssertSize(t, 0) // every input buffer went back to the producer
	require.NoError(t, e.finish(h))
	var v extsort.Verifier
	for {
		out, osc := cs.array(), cs.schema()
		more, err := e.next(h, out, osc)
		require.NoError(t, err)
		if !more {
			break
		}
		rb, err := cdata.ImportCRecordBatch(out, osc)
		require.NoError(t, err)
		require.NoError(t, v.AddBatch(rb))
		rb.Release()
	}
	require.NoError(t, v.Check(g.Fingerprint()))
}

// arrayReleaseFn reads the release callback of a C ArrowArray: the ninth
// word of the struct (C Data Interface layout).
func arrayReleaseFn(arr *cdata.CArrowArray) unsafe.Pointer {
	return (*[10]unsafe.Pointer)(unsafe.Pointer(arr))[8]
}

func TestSortRoundTripThroughTheCDataInterfaceIsSortedCompleteAndWithinItsBooks(t *testing.T) {
	p := pool.NewFair(1 << 20) // far below the 3.2 MB of rows: the sorter must spill
	e, reports := fixedPoolReporting(t, p)
	cs := newCStructs(t)
	h, err := e.create(1, "ExternalSorter[1]", 4096, t.TempDir())
	require.NoError(t, err)
	sortThrough(t, e, h, cs, 7, 200_000, 8192)

	st, err := e.stats(h)
	require.NoError(t, err)
	assert.Equal(t, int64(200_000), st[statRowsIn])
	assert.Equal(t, int64(200_000), st[statRowsOut])
	assert.Positive(t, st[statSelfSpills], "a 1 MiB pool makes the sorter spill on its own")
	assert.Equal(t, int64(25), st[statBatchesIn])
	assert.Equal(t, int64(49), st[statBatchesOut], "200000 rows in batches of 4096")
	assert.LessOrEqual(t, st[statPeakAllocated], st[statPeakReserved])
	assert.LessOrEqual(t, st[statPeakReserved], int64(1<<20))
	assert.GreaterOrEqual(t, st[statChecks], int64(25+1+50), "a check after every call")
	assert.Zero(t, st[statViolations])

	require.NoError(t, e.close(h))
	assert.Zero(t, p.Reserved(), "close gives everything back to the pool")
	assert.Zero(t, e.sorters.Len())
	assert.Equal(t, st[statSpilledBytes], reports.disk.Load(), "every run file's bytes reach Spark's diskBytesSpilled")
	assert.Positive(t, reports.memory.Load(), "self-initiated spills count as memoryBytesSpilled")
}

func TestSparkSpillReachesTheSorterThroughTheTaskPoolsReclaim(t *testing.T) {
	arb := arbiter.New(64 << 20)
	defer arb.Close()
	task := arb.NewTask(context.Background(), "task 3")
	defer task.Close()
	up := task.NewConsumer("nativepool", nil)
	p := pool.NewFairUnified(up, 64<<20, pool.WithChunkSize(1<<20))
	u, _ := pool.As[pool.Unified](p)
	up.SetReclaimer(u)
	defer func() { require.NoError(t, u.Close()) }()

	e, reports := fixedPoolReporting(t, p)
	cs := newCStructs(t)
	h, err := e.create(3, "ExternalSorter[3]", 0, t.TempDir())
	require.NoError(t, err)
	g := extsort.NewGenerator(3, 0)
	for range 10 {
		rb := g.Next(nil, 8192)
		arr, sc := cs.array(), cs.schema()
		cdata.ExportArrowRecordBatch(rb, arr, sc)
		rb.Release()
		require.NoError(t, e.push(h, arr, sc))
	}
	before := p.Reserved()
	freed, err := u.Reclaim(1 << 20) // what Spark's spill of the task's native consumer reaches
	require.NoError(t, err)
	assert.Positive(t, freed)
	st, err := e.stats(h)
	require.NoError(t, err)
	assert.Equal(t, int64(1), st[statRequestedSpills])
	assert.Zero(t, st[statSelfSpills])
	assert.Less(t, p.Reserved(), before)
	require.NoError(t, e.close(h))
	assert.Equal(t, st[statSpilledBytes], reports.disk.Load(), "the requested spill's run file is reported by close")
	assert.Zero(t, reports.memory.Load(), "what a Spark-requested spill frees is counted by the plugin, not reported")
}

func TestHandlesRejectForgedAndClosedSortersWithTheRightException(t *testing.T) {
	e := fixedPool(t, pool.NewUnbounded())
	h, err := e.create(1, "s", 0, t.TempDir())
	require.NoError(t, err)
	require.NoError(t, e.close(h))

	for _, tc := range []struct {
		name string
		err  error
		is   error
		msg  string
	}{
		{"zero", e.finish(0), jni.ErrIllegalArgument, "finish0: nativesort: invalid sorter handle 0x0: illegal argument"},
		{"a jni pool handle", e.close(0x5000000100000001), jni.ErrIllegalArgument, "close0: nativesort: invalid sorter handle 0x5000000100000001: illegal argument"},
		{"closed", e.close(h), jni.ErrIllegalState, fmt.Sprintf("close0: nativesort: sorter handle 0x%x is closed: illegal state", h)},
		{"forged generation", e.finish(h + 7), jni.ErrIllegalArgument, fmt.Sprintf("finish0: nativesort: invalid sorter handle 0x%x: illegal argument", h+7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.err, tc.is)
			assert.Equal(t, tc.msg, tc.err.Error())
		})
	}

	// The slot is reused under a new generation: the old handle stays closed.
	h2, err := e.create(1, "s2", 0, t.TempDir())
	require.NoError(t, err)
	assert.NotEqual(t, h, h2)
	_, err = e.stats(h)
	require.ErrorIs(t, err, jni.ErrIllegalState)
	require.NoError(t, e.close(h2))

	_, err = e.create(-1, "s3", 0, t.TempDir())
	require.ErrorIs(t, err, jni.ErrIllegalState, "a task without an open pool")
	_, err = e.create(1, "", 0, t.TempDir())
	require.ErrorIs(t, err, jni.ErrIllegalArgument)
	assert.Zero(t, e.sorters.Len())
}

func TestCloseWithAnUnreleasedOutputBatchThrowsTheLeakReportAndFreesTheCharge(t *testing.T) {
	p := pool.NewGreedy(64 << 20)
	e := fixedPool(t, p)
	cs := newCStructs(t)
	h, err := e.create(1, "ExternalSorter[leaky]", 0, t.TempDir())
	require.NoError(t, err)
	rb := extsort.NewGenerator(1, 0).Next(nil, 1000)
	arr, sc := cs.array(), cs.schema()
	cdata.ExportArrowRecordBatch(rb, arr, sc)
	rb.Release()
	require.NoError(t, e.push(h, arr, sc))
	require.NoError(t, e.finish(h))
	out, osc := cs.array(), cs.schema()
	more, err := e.next(h, out, osc)
	require.NoError(t, err)
	require.True(t, more)

	err = e.close(h) // Java never released out
	require.ErrorIs(t, err, jni.ErrIllegalState)
	masked := regexp.MustCompile(`#\d+ `).ReplaceAllString(err.Error(), "#N ") // the consumer id
	assert.Equal(t, "nativesort: close0 of ExternalSorter[leaky]: ffi: ExternalSorter[leaky]#N"+
		" leaked 2 buffers (15.6 KB), 1 exported batches (15.6 KB) and 0 exported streams never released by the consumer;"+
		" allocation sites not recorded (use WithAllocationSites(true)): illegal state", masked)
	assert.Zero(t, p.Reserved(), "the charge goes back to the pool anyway")
	cdata.ReleaseCArrowArray(out) // the late release frees the memory
	cdata.ReleaseCArrowSchema(osc)
}

func TestSampleSumsLiveSortersAndKeepsTheCountersOfClosedOnes(t *testing.T) {
	p := pool.NewGreedy(64 << 20)
	e := fixedPool(t, p)
	cs := newCStructs(t)
	h1, err := e.create(1, "a", 0, t.TempDir())
	require.NoError(t, err)
	h2, err := e.create(2, "b", 0, t.TempDir())
	require.NoError(t, err)
	rb := extsort.NewGenerator(1, 0).Next(nil, 1000)
	arr, sc := cs.array(), cs.schema()
	cdata.ExportArrowRecordBatch(rb, arr, sc)
	rb.Release()
	require.NoError(t, e.push(h1, arr, sc))

	s := e.sample()
	assert.Equal(t, int64(2), s[sampleLiveSorters])
	assert.Equal(t, p.Reserved(), s[sampleReserved])
	assert.Positive(t, s[sampleAllocated])
	assert.LessOrEqual(t, s[sampleAllocated], s[sampleReserved])
	assert.Positive(t, s[sampleRSS])
	assert.Positive(t, s[sampleGoRuntime])
	checks := s[sampleChecks]

	require.NoError(t, e.close(h1))
	require.NoError(t, e.close(h2))
	s = e.sample()
	assert.Zero(t, s[sampleLiveSorters])
	assert.Zero(t, s[sampleReserved])
	assert.GreaterOrEqual(t, s[sampleChecks], checks, "closed sorters' checks still count")
	assert.Zero(t, s[sampleViolations])
}

// TestGoRuntimePeakIsReadAfterEveryDriverCallAndNeverBelowTheCurrentFigure:
// garbage made and collected inside a driver call shows in the Go peak of
// the next sample even though that sample's current figure is lower, and
// the mapped figure bounds the peak from above.
func TestGoRuntimePeakIsReadAfterEveryDriverCallAndNeverBelowTheCurrentFigure(t *testing.T) {
	e := fixedPool(t, pool.NewUnbounded())
	h, err := e.create(1, "s", 0, t.TempDir())
	require.NoError(t, err)
	// Idle heap left by earlier tests would serve part of the 64 MiB below
	// without the runtime mapping more: hand it back to the OS first.
	runtime.GC()
	debug.FreeOSMemory()
	before := e.sample()
	var garbage [][]byte
	require.NoError(t, e.drive("test0", h, func(*sortHandle) error {
		for range 64 {
			garbage = append(garbage, make([]byte, 1<<20)) // 64 MiB of Go heap
		}
		return nil
	}))
	garbage = nil
	runtime.GC()
	debug.FreeOSMemory()
	s := e.sample()
	assert.GreaterOrEqual(t, s[sampleGoPeak]-before[sampleGoRuntime], int64(60<<20), "the peak saw the call's 64 MiB")
	assert.GreaterOrEqual(t, s[sampleGoPeak], s[sampleGoRuntime])
	assert.GreaterOrEqual(t, s[sampleGoMapped], s[sampleGoPeak])
	assert.Less(t, s[sampleGoRuntime], s[sampleGoPeak], "the 64 MiB went back to the OS after the call")
	require.NoError(t, e.close(h))
}

func TestConcurrentDriverCallsOnOneSorterAreIllegalState(t *testing.T) {
	e := fixedPool(t, pool.NewUnbounded())
	h, err := e.create(1, "s", 0, t.TempDir())
	require.NoError(t, err)
	sh, err := e.sorters.Get(h)
	require.NoError(t, err)
	sh.busy.Store(true) // another thread is inside push0
	err = e.finish(h)
	require.ErrorIs(t, err, jni.ErrIllegalState)
	assert.Equal(t, "nativesort: finish0 on s while another call on it is running: illegal state", err.Error())
	sh.busy.Store(false)
	require.NoError(t, e.close(h))
	require.False(t, errors.Is(e.close(h), jni.ErrIllegalArgument))
}

// TestSortStatFieldsMatchJavaEnum reads the Java copy of the stats0 table
// (the enum SortStat) and checks its constants, in order, against
// sortStatFields: the enum's ordinal is the array index.
func TestSortStatFieldsMatchJavaEnum(t *testing.T) {
	src, err := os.ReadFile("../src/main/java/org/nativepool/spark/example/SortStat.java")
	require.NoError(t, err)
	var java, ours []string
	for _, m := range regexp.MustCompile(`(?m)^  ([A-Z][A-Z0-9_]*)[,;]$`).FindAllStringSubmatch(string(src), -1) {
		java = append(java, m[1])
	}
	for i, f := range sortStatFields {
		assert.NotEmpty(t, f.doc, "row %d (%s) has no doc", i, f.name)
		ours = append(ours, f.name)
	}
	assert.Equal(t, ours, java)
}
