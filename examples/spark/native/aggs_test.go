package main

import (
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/jni"
	"github.com/nativepool/nativepool/pool"
	"github.com/nativepool/nativepool/taskshared"
)

// These tests drive the engine behind AggBridge's natives without a JVM, as
// sorts_test.go does for SortBridge: a Go producer stands in for Java,
// exporting batches through the C Data Interface into C-allocated structs,
// and imports the output batches back with a plain, non-charging import.

// aggTestEngine is an aggregation engine whose every task joins p, with the
// stand-ins of jni.ReportSpill and jni.TrackAllocator recording what they
// are told.
type aggTestEngine struct {
	*aggEngine
	reports spillReports
	// tracked are the allocators counted in the ledger now, by consumer.
	mu      sync.Mutex
	tracked map[string]int
}

func newAggTestEngine(t *testing.T, p pool.Pool) *aggTestEngine {
	t.Helper()
	e := &aggTestEngine{tracked: make(map[string]int)}
	tasks := newTestTasks(t, func(int64) pool.Pool { return p })
	e.aggEngine = newAggEngine(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		func(task int64) (taskRef, error) {
			h, release, err := tasks.join(task)
			if err != nil {
				return taskRef{}, err
			}
			return taskRef{
				task: h,
				reportSpill: func(_ *taskshared.Handle, memory, disk int64) error {
					e.reports.memory.Add(memory)
					e.reports.disk.Add(disk)
					return nil
				},
				release: release,
				track: func(consumer string, _ *ffi.Allocator) func() {
					e.mu.Lock()
					e.tracked[consumer]++
					e.mu.Unlock()
					var once sync.Once
					return func() {
						once.Do(func() {
							e.mu.Lock()
							e.tracked[consumer]--
							e.mu.Unlock()
						})
					}
				},
			}, nil
		})
	return e
}

func (e *aggTestEngine) trackedNow(consumer string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tracked[consumer]
}

// aggThrough runs micro-batch version of partition 0 through the engine:
// values [from, to) pushed over the C Data Interface in batches of batch,
// the output imported back. It returns the output and the stats read
// before close.
func aggThrough(t *testing.T, e *aggTestEngine, cs *cStructs, c aggCreate, from, to, keys int64, batch int) (map[int64]entry, []int64) {
	t.Helper()
	h, err := e.create(1, c)
	require.NoError(t, err)
	for lo := from; lo < to; lo += int64(batch) {
		rb := rateBatch(lo, min(to, lo+int64(batch)), keys, 0, 1)
		arr, sc := cs.array(), cs.schema()
		cdata.ExportArrowRecordBatch(rb, arr, sc)
		rb.Release()
		require.NoError(t, e.push(h, arr, sc))
		assert.Nil(t, arrayReleaseFn(arr), "push0 released the producer's array before returning")
	}
	require.NoError(t, e.finish(h))
	out := make(map[int64]entry)
	for {
		oa, osc := cs.array(), cs.schema()
		more, err := e.next(h, oa, osc)
		require.NoError(t, err)
		if !more {
			break
		}
		rb, err := cdata.ImportCRecordBatch(oa, osc)
		require.NoError(t, err)
		k := rb.Column(0).(*array.Int64).Int64Values()
		n := rb.Column(1).(*array.Int64).Int64Values()
		s := rb.Column(2).(*array.Int64).Int64Values()
		for i := range k {
			out[k[i]] = entry{k[i], n[i], s[i]}
		}
		rb.Release()
	}
	st, err := e.stats(h)
	require.NoError(t, err)
	require.NoError(t, e.close(h))
	return out, st
}

func TestAggregationRoundTripsThroughTheCDataInterfaceAndReportsItsSpills(t *testing.T) {
	returnGoHeap(t)
	p := pool.NewGreedy(300 << 10) // the table spills every 6,144 groups
	e := newAggTestEngine(t, p)
	cs := newCStructs(t)
	dir, tmp := t.TempDir(), t.TempDir()
	const keys, rows = 40_000, 25_000
	m := model{}
	var spilled int64
	for v := range int64(3) {
		touched := m.add(v*rows, (v+1)*rows, keys, 0, 1)
		c := aggCreate{name: "StreamingAgg[0]", version: v, stateDir: dir, tempDir: tmp, batchRows: 2048}
		out, st := aggThrough(t, e, cs, c, v*rows, (v+1)*rows, keys, 4096)
		require.Len(t, out, len(touched))
		for k := range touched {
			require.Equal(t, m[k], out[k], "group %d", k)
		}
		assert.Equal(t, int64(rows), st[aggStatRowsIn])
		assert.Equal(t, v*rows, st[aggStatMinValue])
		assert.Equal(t, (v+1)*rows-1, st[aggStatMaxValue])
		assert.Equal(t, int64(len(touched)), st[aggStatRowsOut])
		assert.Equal(t, int64(len(m)), st[aggStatStateGroups])
		assert.Equal(t, (v+1)*rows, st[aggStatStateCount])
		assert.Positive(t, st[aggStatSelfSpills])
		assert.Equal(t, int64(7), st[aggStatBatchesIn])
		assert.LessOrEqual(t, st[aggStatPeakAllocated], st[aggStatPeakReserved])
		assert.Zero(t, st[aggStatAllocated], "every output batch was released by the consumer")
		assert.Zero(t, p.Reserved(), "close gives everything back")
		assert.Zero(t, e.trackedNow("StreamingAgg[0]"), "untracked at close")
		spilled += st[aggStatSpilledBytes]
	}
	assert.Equal(t, spilled, e.reports.disk.Load(), "every run file's bytes reach Spark's diskBytesSpilled")
	assert.Positive(t, e.reports.memory.Load(), "self-initiated spills count as memoryBytesSpilled")
	assert.Zero(t, e.ops.Len())
	assert.Equal(t, []int64{0, 0, 0}, e.sample())
}

func TestAggregationHandlesRejectForgedAndClosedOnesWithTheRightException(t *testing.T) {
	e := newAggTestEngine(t, pool.NewUnbounded())
	c := aggCreate{name: "a", stateDir: t.TempDir(), tempDir: t.TempDir()}
	h, err := e.create(1, c)
	require.NoError(t, err)
	require.NoError(t, e.close(h))

	for _, tc := range []struct {
		name string
		err  error
		is   error
		msg  string
	}{
		{"zero", e.finish(0), jni.ErrIllegalArgument, "finish0: nativeagg: invalid aggregation handle 0x0: illegal argument"},
		{"a sorter handle", e.close(0x5300000100000001), jni.ErrIllegalArgument, "close0: nativeagg: invalid aggregation handle 0x5300000100000001: illegal argument"},
		{"closed", e.close(h), jni.ErrIllegalState, fmt.Sprintf("close0: nativeagg: aggregation handle 0x%x is closed: illegal state", h)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.err, tc.is)
			assert.Equal(t, tc.msg, tc.err.Error())
		})
	}
	_, err = e.create(-1, c)
	require.ErrorIs(t, err, jni.ErrIllegalState, "a task without an open pool")
	_, err = e.create(1, aggCreate{name: "b"})
	require.ErrorIs(t, err, jni.ErrIllegalArgument, "no state directory")
	_, err = e.create(1, aggCreate{name: "b", stateDir: t.TempDir(), version: 3})
	require.ErrorIs(t, err, os.ErrNotExist, "no version 2 to start from")
	assert.Zero(t, e.ops.Len())
}

func TestConcurrentDriverCallsOnOneAggregationAreIllegalState(t *testing.T) {
	e := newAggTestEngine(t, pool.NewUnbounded())
	h, err := e.create(1, aggCreate{name: "a", stateDir: t.TempDir(), tempDir: t.TempDir()})
	require.NoError(t, err)
	ah, err := e.ops.Get(h)
	require.NoError(t, err)
	ah.busy.Store(true) // another thread is inside push0
	err = e.finish(h)
	require.ErrorIs(t, err, jni.ErrIllegalState)
	assert.Equal(t, "nativeagg: finish0 on a while another call on it is running: illegal state", err.Error())
	ah.busy.Store(false)
	require.NoError(t, e.close(h))
}

func TestAnUnreleasedOutputBatchMakesCloseThrowTheLeakReport(t *testing.T) {
	p := pool.NewGreedy(64 << 20)
	e := newAggTestEngine(t, p)
	cs := newCStructs(t)
	h, err := e.create(1, aggCreate{name: "StreamingAgg[leaky]", stateDir: t.TempDir(), tempDir: t.TempDir(), batchRows: 100})
	require.NoError(t, err)
	rb := rateBatch(0, 1000, 1000, 0, 1)
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
	masked := regexp.MustCompile(`#\d+ `).ReplaceAllString(err.Error(), "#N ")
	assert.Equal(t, "nativeagg: close0 of StreamingAgg[leaky]: ffi: StreamingAgg[leaky]#N leaked 3 buffers (2.3 KB),"+
		" 1 exported batches (2.3 KB) and 0 exported streams never released by the consumer;"+
		" allocation sites not recorded (use WithAllocationSites(true)): illegal state", masked)
	assert.Zero(t, p.Reserved(), "the charge goes back to the pool anyway")
	assert.Zero(t, e.trackedNow("StreamingAgg[leaky]"))
	cdata.ReleaseCArrowArray(out) // the late release frees the memory
	cdata.ReleaseCArrowSchema(osc)
}

// TestThePlantedLeakOutlivesEachTaskAndStaysCountedInTheLedger: with
// retainBytes set, every micro-batch leaves one batch behind; close does
// not throw (it is what --leak asks for), the task's pool gets its charge
// back, and the allocator stays counted (tracked) with the batch's bytes,
// named by the function that allocated it.
func TestThePlantedLeakOutlivesEachTaskAndStaysCountedInTheLedger(t *testing.T) {
	returnGoHeap(t)
	p := pool.NewGreedy(64 << 20)
	e := newAggTestEngine(t, p)
	cs := newCStructs(t)
	dir := t.TempDir()
	var kept []*ffi.Allocator
	for v := range int64(3) {
		c := aggCreate{name: "StreamingAgg[0]", version: v, stateDir: dir, tempDir: t.TempDir(), allocationSites: true, retainBytes: 256 << 10}
		_, st := aggThrough(t, e, cs, c, v*1000, (v+1)*1000, 500, 1000)
		assert.Equal(t, int64(256<<10), st[aggStatRetainedBytes])
		assert.Zero(t, p.Reserved(), "the task's pool got everything back")
	}
	assert.Equal(t, 3, e.trackedNow("StreamingAgg[0]"), "the leaky allocators stay in the ledger")
	assert.Equal(t, []int64{0, 3, 3 * 256 << 10}, e.sample())
	e.kept.Lock()
	for _, ah := range e.kept.ops {
		kept = append(kept, ah.agg.Allocator())
	}
	e.kept.Unlock()
	for _, a := range kept {
		sites := a.LiveSites()
		require.Len(t, sites, 1)
		assert.Regexp(t, `\.\(\*aggregator\)\.retainReplayBatch \(.*agg\.go:\d+\)$`, sites[0].Site)
		assert.Equal(t, int64(256<<10), sites[0].Bytes)
	}
}

// TestAggStatFieldsMatchJavaEnum reads the Java copy of the stats0 table
// (the enum AggStat) and checks its constants, in order, against
// aggStatFields: the enum's ordinal is the array index.
func TestAggStatFieldsMatchJavaEnum(t *testing.T) {
	src, err := os.ReadFile("../src/main/java/org/nativepool/spark/example/AggStat.java")
	require.NoError(t, err)
	var java, ours []string
	for _, m := range regexp.MustCompile(`(?m)^  ([A-Z][A-Z0-9_]*)[,;]$`).FindAllStringSubmatch(string(src), -1) {
		java = append(java, m[1])
	}
	for i, f := range aggStatFields {
		assert.NotEmpty(t, f.doc, "row %d (%s) has no doc", i, f.name)
		ours = append(ours, f.name)
	}
	assert.Equal(t, ours, java)
}

// TestAggSampleIndicesMatchJava checks AggBridge.java's SAMPLE_* constants.
func TestAggSampleIndicesMatchJava(t *testing.T) {
	src, err := os.ReadFile("../src/main/java/org/nativepool/spark/example/AggBridge.java")
	require.NoError(t, err)
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`public static final int (SAMPLE_[A-Z_]+) = (\d+);`).FindAllStringSubmatch(string(src), -1) {
		got[m[1]] = m[2]
	}
	assert.Equal(t, map[string]string{
		"SAMPLE_LIVE":             fmt.Sprint(aggSampleLive),
		"SAMPLE_RETAINED_BATCHES": fmt.Sprint(aggSampleRetainedBatches),
		"SAMPLE_RETAINED_BYTES":   fmt.Sprint(aggSampleRetainedBytes),
		"SAMPLE_COUNT":            fmt.Sprint(aggSampleCount),
	}, got)
}
