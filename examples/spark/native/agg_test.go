package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/pool"
)

// These tests drive the aggregator itself, without the C Data Interface
// (aggs_test.go crosses it): micro-batches of rate-source-like rows (values
// from a counter, key = value mod K) against a reference model, under pools
// that make it spill on its own, pools whose reclaim asks it to spill, and
// pools too small for its merge buffers.

var aggInSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.PrimitiveTypes.Int64},
	{Name: "value", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// rateBatch is a batch of the rows of values [from, to) whose key mod parts
// is part, with key = value mod keys, as the soak's rate source produces
// them after Spark's repartition by key.
func rateBatch(from, to, keys int64, part, parts int) arrow.RecordBatch {
	mem := mallocator.NewMallocator() // C memory, as Java's batches are: no Go garbage
	kb := array.NewInt64Builder(mem)
	vb := array.NewInt64Builder(mem)
	defer kb.Release()
	defer vb.Release()
	for v := from; v < to; v++ {
		if k := v % keys; int(k%int64(parts)) == part {
			kb.Append(k)
			vb.Append(v)
		}
	}
	k, v := kb.NewArray(), vb.NewArray()
	defer k.Release()
	defer v.Release()
	return array.NewRecordBatch(aggInSchema, []arrow.Array{k, v}, int64(k.Len()))
}

// model is the reference: every group's count and sum.
type model map[int64]entry

func (m model) add(from, to, keys int64, part, parts int) map[int64]bool {
	touched := make(map[int64]bool)
	for v := from; v < to; v++ {
		k := v % keys
		if int(k%int64(parts)) != part {
			continue
		}
		e := m[k]
		m[k] = entry{k, e.count + 1, e.sum + v}
		touched[k] = true
	}
	return touched
}

// runMicroBatch runs one aggregator (micro-batch opts.Version) over
// values [from, to) of partition part, pushing batches of batch values,
// drains its output (checking it comes in key order, each group once),
// closes it and returns the output and its stats.
func runMicroBatch(p pool.Pool, opts aggOptions, from, to, keys int64, part, parts, batch int) (map[int64]entry, aggStats, error) {
	a, err := newAggregator(p, opts)
	if err != nil {
		return nil, aggStats{}, err
	}
	defer a.Close()
	for lo := from; lo < to; lo += int64(batch) {
		rb := rateBatch(lo, min(to, lo+int64(batch)), keys, part, parts)
		err := a.Push(rb)
		rb.Release()
		if err != nil {
			return nil, aggStats{}, err
		}
	}
	if err := a.Finish(); err != nil {
		return nil, aggStats{}, err
	}
	out := make(map[int64]entry)
	var last int64 = -1
	for {
		rb, err := a.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, aggStats{}, err
		}
		if rb.Schema().String() != aggOutSchema.String() {
			return nil, aggStats{}, fmt.Errorf("output schema %s", rb.Schema())
		}
		k := rb.Column(0).(*array.Int64).Int64Values()
		c := rb.Column(1).(*array.Int64).Int64Values()
		s := rb.Column(2).(*array.Int64).Int64Values()
		for i := range k {
			if k[i] <= last {
				return nil, aggStats{}, fmt.Errorf("output key %d after %d: not in key order", k[i], last)
			}
			last = k[i]
			out[k[i]] = entry{k[i], c[i], s[i]}
		}
		rb.Release()
	}
	if _, err := a.Next(); !errors.Is(err, io.EOF) {
		return nil, aggStats{}, fmt.Errorf("Next after the commit: %v, want EOF", err)
	}
	st := a.Stats()
	if n := a.Allocator().Allocated(); n != 0 {
		return nil, aggStats{}, fmt.Errorf("%d bytes still allocated before Close", n)
	}
	return out, st, a.Close()
}

// microBatch is runMicroBatch, failing the test on an error.
func microBatch(t *testing.T, p pool.Pool, opts aggOptions, from, to, keys int64, part, parts, batch int) (map[int64]entry, aggStats) {
	t.Helper()
	out, st, err := runMicroBatch(p, opts, from, to, keys, part, parts, batch)
	require.NoError(t, err)
	return out, st
}

// compareMicroBatch compares one micro-batch's output and state with the
// model: the groups it touched, with their totals, and the state's totals.
func compareMicroBatch(m model, touched map[int64]bool, out map[int64]entry, st aggStats, rows int64) error {
	if len(out) != len(touched) {
		return fmt.Errorf("%d output rows, %d groups updated", len(out), len(touched))
	}
	for k := range touched {
		if out[k] != m[k] {
			return fmt.Errorf("group %d: %+v, want %+v", k, out[k], m[k])
		}
	}
	var count, sum int64
	for _, e := range m {
		count += e.count
		sum += e.sum
	}
	want := aggStats{StateGroups: int64(len(m)), StateCount: count, StateSum: sum, StateBytes: int64(len(m) * entryBytes), RowsIn: rows, RowsOut: int64(len(touched))}
	got := aggStats{StateGroups: st.StateGroups, StateCount: st.StateCount, StateSum: st.StateSum, StateBytes: st.StateBytes, RowsIn: st.RowsIn, RowsOut: st.RowsOut}
	if got != want {
		return fmt.Errorf("state and counts %+v, want %+v", got, want)
	}
	return nil
}

// checkMicroBatch is compareMicroBatch, failing the test on a difference.
func checkMicroBatch(t *testing.T, m model, touched map[int64]bool, out map[int64]entry, st aggStats, rows int64) {
	t.Helper()
	require.NoError(t, compareMicroBatch(m, touched, out, st, rows))
}

// returnGoHeap gives the Go heap these tests leave behind (their models)
// back to the OS when the test ends, so that tests which measure the Go
// runtime's figures (sorts_test.go) start from the same heap whatever ran
// before them.
func returnGoHeap(t *testing.T) {
	t.Cleanup(func() {
		runtime.GC()
		debug.FreeOSMemory()
	})
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

func TestMicroBatchesKeepTheirStateOnDiskAndUpdateEveryGroupExactly(t *testing.T) {
	returnGoHeap(t)
	p := pool.NewGreedy(64 << 20)
	dir := t.TempDir()
	const keys, rows = 5000, 3000
	m := model{}
	for v := range int64(8) {
		touched := m.add(v*rows, (v+1)*rows, keys, 0, 1)
		out, st := microBatch(t, p, aggOptions{Name: "StreamingAgg[0]", Version: v, StateDir: dir, TempDir: t.TempDir(), BatchRows: 1000, Logger: quietLogger()},
			v*rows, (v+1)*rows, keys, 0, 1, 700)
		checkMicroBatch(t, m, touched, out, st, rows)
		assert.Zero(t, st.SelfSpills+st.RequestedSpills, "a 64 MiB pool needs no spill")
		assert.Equal(t, v*rows, st.MinValue)
		assert.Equal(t, (v+1)*rows-1, st.MaxValue)
		assert.Zero(t, p.Reserved(), "at task end every byte is back")
		names := dirNames(t, dir)
		if v == 0 {
			assert.Equal(t, []string{"0.state"}, names)
		} else {
			assert.Equal(t, []string{stateName(v - 1), stateName(v)}, names, "the new version and the one before it")
		}
	}
}

func stateName(v int64) string { return filepath.Base(statePath("", v)) }

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

func TestARefusedTableIsSpilledToARunAndTheMergeIsStillExact(t *testing.T) {
	returnGoHeap(t)
	// 300 KiB: a table of 8,192 slots (192 KiB) fits beside its predecessor,
	// one of 16,384 (384 KiB) never does, so every 6,144 groups are spilled.
	p := pool.NewGreedy(300 << 10)
	dir, tmp := t.TempDir(), t.TempDir()
	const keys, rows = 40_000, 30_000
	m := model{}
	var spills, spilled int64
	for v := range int64(3) {
		touched := m.add(v*rows, (v+1)*rows, keys, 0, 1)
		out, st := microBatch(t, p, aggOptions{Name: "StreamingAgg[0]", Version: v, StateDir: dir, TempDir: tmp, BatchRows: 2048, Logger: quietLogger()},
			v*rows, (v+1)*rows, keys, 0, 1, 4096)
		checkMicroBatch(t, m, touched, out, st, rows)
		assert.GreaterOrEqual(t, st.SelfSpills, int64(4), "30,000 groups in tables of at most 6,144")
		assert.Equal(t, st.Runs, st.SelfSpills, "each spill a run, the last one Finish's")
		assert.Equal(t, int64(len(touched)), st.SpilledGroups, "every group of the micro-batch went through a run")
		assert.Equal(t, st.SpilledGroups*int64(entryBytes), st.SpilledBytes, "bytes really written")
		assert.Positive(t, st.SelfSpilledBytes, "memory really freed")
		assert.LessOrEqual(t, st.PeakReserved, int64(300<<10))
		assert.Zero(t, p.Reserved())
		spills += st.SelfSpills
		spilled += st.SpilledBytes
	}
	assert.Empty(t, dirNames(t, tmp), "run directories removed")
	t.Logf("%d self-initiated spills, %d bytes of runs", spills, spilled)
}

func TestSparksSpillRequestReachesTheAggregatorThroughTheTaskPoolsReclaim(t *testing.T) {
	returnGoHeap(t)
	p, u := arbiterTaskPool(t, 64<<20, 1<<20)

	dir := t.TempDir()
	const keys, rows = 20_000, 20_000
	m := model{}
	touched := m.add(0, rows, keys, 0, 1)
	a, err := newAggregator(p, aggOptions{Name: "StreamingAgg[7]", StateDir: dir, TempDir: t.TempDir(), Logger: quietLogger()})
	require.NoError(t, err)
	rb := rateBatch(0, rows/2, keys, 0, 1)
	require.NoError(t, a.Push(rb))
	rb.Release()
	before := p.Reserved()
	freed, err := u.Reclaim(1 << 20) // what Spark's spill of the task's native consumer reaches
	require.NoError(t, err)
	assert.Positive(t, freed)
	assert.Less(t, p.Reserved(), before, "the table's memory went back")
	st := a.Stats()
	assert.Equal(t, int64(1), st.RequestedSpills)
	assert.Zero(t, st.SelfSpills)
	assert.Equal(t, int64(1), st.Runs)
	rb = rateBatch(rows/2, rows, keys, 0, 1)
	require.NoError(t, a.Push(rb))
	rb.Release()
	require.NoError(t, a.Finish())
	out := drain(t, a)
	require.NoError(t, a.Close())
	require.Len(t, out, len(touched))
	for k := range touched {
		require.Equal(t, m[k], out[k])
	}
	assert.Zero(t, p.Reserved())
}

// drain reads an aggregator's output to the end.
func drain(t *testing.T, a *aggregator) map[int64]entry {
	t.Helper()
	out := make(map[int64]entry)
	for {
		rb, err := a.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		k := rb.Column(0).(*array.Int64).Int64Values()
		c := rb.Column(1).(*array.Int64).Int64Values()
		s := rb.Column(2).(*array.Int64).Int64Values()
		for i := range k {
			out[k[i]] = entry{k[i], c[i], s[i]}
		}
		rb.Release()
	}
}

// TestSparkSpillsTheRequesterWhileItGrowsItsTable: the executor budget is
// smaller than the table wants, so the pool's acquire for a bigger table
// makes the arbiter (Spark's rules) spill the requester itself, on the
// driver goroutine, from inside the aggregator's allocation; the aggregator
// spills the full table and carries on in the table it was growing into.
func TestSparkSpillsTheRequesterWhileItGrowsItsTable(t *testing.T) {
	returnGoHeap(t)
	p, _ := arbiterTaskPool(t, 1<<20, 256<<10)

	const keys, rows = 100_000, 100_000
	m := model{}
	touched := m.add(0, rows, keys, 0, 1)
	out, st := microBatch(t, p, aggOptions{Name: "StreamingAgg[9]", StateDir: t.TempDir(), TempDir: t.TempDir(), Logger: quietLogger()},
		0, rows, keys, 0, 1, 8192)
	checkMicroBatch(t, m, touched, out, st, rows)
	assert.Positive(t, st.RequestedSpills, "Spark spilled the requester: %+v", st)
	assert.LessOrEqual(t, st.PeakReserved, int64(1<<20))
	assert.Zero(t, p.Reserved())
}

func TestTheMergeWritesTheTableOutWhenThePoolRefusesItsFileBuffers(t *testing.T) {
	returnGoHeap(t)
	dir := t.TempDir()
	const keys = 100_000
	m := model{}
	m.add(0, 50_000, keys, 0, 1)
	microBatch(t, pool.NewGreedy(64<<20), aggOptions{StateDir: dir, TempDir: t.TempDir(), Logger: quietLogger()}, 0, 50_000, keys, 0, 1, 8192)

	// 300 KiB: the table of 8,192 slots (192 KiB), the state writer's buffer
	// and an output batch of 512 rows fit, the previous version's buffer
	// does not: the merge writes the table to a run and opens both files.
	p := pool.NewGreedy(300 << 10)
	touched := m.add(50_000, 56_000, keys, 0, 1)
	out, st := microBatch(t, p, aggOptions{Version: 1, StateDir: dir, TempDir: t.TempDir(), BatchRows: 512, Logger: quietLogger()}, 50_000, 56_000, keys, 0, 1, 8192)
	checkMicroBatch(t, m, touched, out, st, 6000)
	assert.Equal(t, int64(1), st.SelfSpills)
	assert.Equal(t, int64(1), st.Runs)
	assert.Zero(t, p.Reserved())
}

func TestASecondOutputBatchTheTableLeavesNoRoomForSwapsTheTableForItsRun(t *testing.T) {
	returnGoHeap(t)
	dir := t.TempDir()
	const keys = 50_000 // the micro-batch's groups are among the previous version's: that file stays open
	m := model{}
	m.add(0, 50_000, keys, 0, 1)
	microBatch(t, pool.NewGreedy(64<<20), aggOptions{StateDir: dir, TempDir: t.TempDir(), Logger: quietLogger()}, 0, 50_000, keys, 0, 1, 8192)

	// 400 KiB: the table (192 KiB), the writer, an output batch of 2,048
	// rows (48 KiB) and the previous version's buffer fit; a second batch,
	// while the caller still holds the first, does not until the merge has
	// swapped the table for a run of its groups.
	p := pool.NewGreedy(400 << 10)
	touched := m.add(50_000, 56_000, keys, 0, 1)
	a, err := newAggregator(p, aggOptions{Version: 1, StateDir: dir, TempDir: t.TempDir(), BatchRows: 2048, Logger: quietLogger()})
	require.NoError(t, err)
	rb := rateBatch(50_000, 56_000, keys, 0, 1)
	require.NoError(t, a.Push(rb))
	rb.Release()
	require.NoError(t, a.Finish())
	first, err := a.Next()
	require.NoError(t, err)
	assert.Zero(t, a.Stats().SelfSpills)
	second, err := a.Next() // first is still held
	require.NoError(t, err)
	assert.Equal(t, int64(1), a.Stats().SelfSpills, "the table went to a run")
	out := drain(t, a)
	for _, rb := range []arrow.RecordBatch{first, second} {
		k := rb.Column(0).(*array.Int64).Int64Values()
		c := rb.Column(1).(*array.Int64).Int64Values()
		s := rb.Column(2).(*array.Int64).Int64Values()
		for i := range k {
			out[k[i]] = entry{k[i], c[i], s[i]}
		}
		rb.Release()
	}
	st := a.Stats()
	require.NoError(t, a.Close())
	checkMicroBatch(t, m, touched, out, st, 6000)
	assert.LessOrEqual(t, st.PeakReserved, int64(400<<10))
	assert.Zero(t, p.Reserved())
}

func TestTooManyRunsForThePoolAreMergedInPasses(t *testing.T) {
	returnGoHeap(t)
	dir := t.TempDir()
	const keys = 200_000
	m := model{}
	m.add(0, 1000, keys, 0, 1)
	microBatch(t, pool.NewGreedy(64<<20), aggOptions{StateDir: dir, TempDir: t.TempDir(), Logger: quietLogger()}, 0, 1000, keys, 0, 1, 8192)

	// 270 KiB: tables of 4,096 slots (96 KiB) cannot grow to 8,192 beside
	// them, so every 3,072 groups make a run; the merge then has room for the
	// writer, the previous version and two runs at a time.
	p := pool.NewGreedy(270 << 10)
	touched := m.add(1000, 31_000, keys, 0, 1)
	out, st := microBatch(t, p, aggOptions{Version: 1, StateDir: dir, TempDir: t.TempDir(), BatchRows: 512, Logger: quietLogger()}, 1000, 31_000, keys, 0, 1, 4096)
	checkMicroBatch(t, m, touched, out, st, 30_000)
	assert.GreaterOrEqual(t, st.Runs, int64(10))
	assert.Positive(t, st.MergePasses, "%+v", st)
	assert.Zero(t, p.Reserved())
}

func TestPartitionsRunConcurrentlyOnOneFairPoolAcrossMicroBatches(t *testing.T) {
	returnGoHeap(t)
	const parts, keys, rows = 4, 60_000, 40_000
	p := pool.NewFair(2 << 20) // 512 KiB a partition: tables of 16,384 slots do not fit
	root, tmp := t.TempDir(), t.TempDir()
	models := make([]model, parts)
	for i := range models {
		models[i] = model{}
	}
	var spills atomic.Int64
	for v := range int64(4) {
		var g errgroup.Group
		for part := range parts {
			g.Go(func() error {
				touched := models[part].add(v*rows, (v+1)*rows, keys, part, parts)
				opts := aggOptions{Name: "StreamingAgg[" + strconv.Itoa(part) + "]", Version: v, StateDir: filepath.Join(root, strconv.Itoa(part)), TempDir: tmp, Logger: quietLogger()}
				out, st, err := runMicroBatch(p, opts, v*rows, (v+1)*rows, keys, part, parts, 2048)
				if err != nil {
					return fmt.Errorf("partition %d, micro-batch %d: %w", part, v, err)
				}
				spills.Add(st.SelfSpills)
				if err := compareMicroBatch(models[part], touched, out, st, int64(len(touched))); err != nil {
					return fmt.Errorf("partition %d, micro-batch %d: %w", part, v, err)
				}
				return nil
			})
		}
		require.NoError(t, g.Wait())
		assert.Zero(t, p.Reserved())
	}
	assert.Positive(t, spills.Load())
}

func TestSpillFromAnotherGoroutineWhilePushingLosesNoRow(t *testing.T) {
	returnGoHeap(t)
	p := pool.NewGreedy(64 << 20)
	a, err := newAggregator(p, aggOptions{StateDir: t.TempDir(), TempDir: t.TempDir(), Logger: quietLogger()})
	require.NoError(t, err)
	const keys, rows = 50_000, 200_000
	m := model{}
	touched := m.add(0, rows, keys, 0, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var g errgroup.Group
	g.Go(func() error {
		for ctx.Err() == nil {
			if _, err := a.Spill(1); err != nil {
				return err
			}
		}
		return nil
	})
	for lo := int64(0); lo < rows; lo += 1000 {
		rb := rateBatch(lo, lo+1000, keys, 0, 1)
		require.NoError(t, a.Push(rb))
		rb.Release()
	}
	cancel()
	require.NoError(t, g.Wait())
	require.NoError(t, a.Finish())
	out := drain(t, a)
	st := a.Stats()
	require.NoError(t, a.Close())
	assert.Positive(t, st.RequestedSpills)
	require.Len(t, out, len(touched))
	for k := range touched {
		require.Equal(t, m[k], out[k])
	}
	assert.Zero(t, p.Reserved())
}

func TestAMissingPreviousVersionIsAnErrorNotAFreshStart(t *testing.T) {
	returnGoHeap(t)
	_, err := newAggregator(pool.NewUnbounded(), aggOptions{Version: 5, StateDir: t.TempDir(), TempDir: t.TempDir()})
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "state version 4")
}

func TestAClosedUncommittedAggregatorLeavesNoStateAndNoRuns(t *testing.T) {
	returnGoHeap(t)
	p := pool.NewGreedy(200 << 10)
	dir, tmp := t.TempDir(), t.TempDir()
	a, err := newAggregator(p, aggOptions{StateDir: dir, TempDir: tmp, BatchRows: 10, Logger: quietLogger()})
	require.NoError(t, err)
	rb := rateBatch(0, 20_000, 20_000, 0, 1)
	require.NoError(t, a.Push(rb))
	rb.Release()
	require.NoError(t, a.Finish())
	out, err := a.Next()
	require.NoError(t, err)
	out.Release()
	require.NoError(t, a.Close()) // a failed task: its output was not all read
	assert.Empty(t, dirNames(t, dir), "no version, no temporary file")
	assert.Empty(t, dirNames(t, tmp))
	assert.Zero(t, p.Reserved())
	require.NoError(t, a.Close(), "idempotent")
}

func TestAnUnreleasedOutputBatchIsALeakWhoseChargeGoesBackAtClose(t *testing.T) {
	returnGoHeap(t)
	p := pool.NewGreedy(64 << 20)
	a, err := newAggregator(p, aggOptions{Name: "StreamingAgg[leaky]", StateDir: t.TempDir(), TempDir: t.TempDir()})
	require.NoError(t, err)
	rb := rateBatch(0, 100, 100, 0, 1)
	require.NoError(t, a.Push(rb))
	rb.Release()
	require.NoError(t, a.Finish())
	out, err := a.Next()
	require.NoError(t, err)
	err = a.Close()
	var leak *ffi.LeakError
	require.ErrorAs(t, err, &leak)
	assert.Equal(t, int64(3*8*defaultAggBatchRows), leak.Bytes)
	assert.Zero(t, p.Reserved())
	out.Release() // the late release frees the memory
	assert.Zero(t, a.Allocator().Allocated())
}

func TestThePlantedLeakKeepsOneBatchAfterCloseNamedByItsAllocationSite(t *testing.T) {
	returnGoHeap(t)
	p := pool.NewGreedy(64 << 20)
	a, err := newAggregator(p, aggOptions{Name: "StreamingAgg[0]", StateDir: t.TempDir(), TempDir: t.TempDir(), RetainBytes: 512 << 10,
		AllocatorOptions: []ffi.Option{ffi.WithAllocationSites(true)}, Logger: quietLogger()})
	require.NoError(t, err)
	rb := rateBatch(0, 1000, 100, 0, 1)
	require.NoError(t, a.Push(rb))
	rb.Release()
	require.NoError(t, a.Finish())
	drain(t, a)
	assert.Equal(t, int64(512<<10), a.Stats().RetainedBytes)
	err = a.Close()
	var leak *ffi.LeakError
	require.ErrorAs(t, err, &leak)
	assert.Equal(t, int64(512<<10), leak.Bytes)
	assert.True(t, strings.HasSuffix(strings.Fields(leak.TopSite())[0], ".(*aggregator).retainReplayBatch"), leak.TopSite())
	assert.Zero(t, p.Reserved(), "the charge went back with the task")
	assert.Equal(t, int64(512<<10), a.Allocator().Allocated(), "the memory did not: it is the leak")
	sites := a.Allocator().LiveSites()
	require.Len(t, sites, 1)
	assert.Contains(t, sites[0].Site, "retainReplayBatch")
}
