package extsort

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/nativepool/nativepool/arbiter"
	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/pool"
)

// TestSortStaysInMemoryWhenBudgetSuffices: with room for everything the
// sorter never spills, and the peak it reports is the pool's.
func TestSortStaysInMemoryWhenBudgetSuffices(t *testing.T) {
	p := pool.NewGreedy(64 << 20)
	r := runSort(t, p, Options{BatchRows: 1000}, 1 /* seed */, 1000 /* keys */, 50_000, 1000, 333, 4096)
	assert.Zero(t, r.stats.SelfSpills)
	assert.Zero(t, r.stats.RequestedSpills)
	assert.Zero(t, r.stats.Runs)
	assert.Zero(t, r.stats.SpilledRows)
	// 50k rows × 16 B of chunks, plus the spill buffer, plus output.
	assert.GreaterOrEqual(t, r.stats.PeakReserved, int64(50_000*pairBytes))
	assert.Equal(t, p.(pool.Watcher).Peak(), r.stats.PeakReserved)
	assert.LessOrEqual(t, r.stats.PeakReserved-r.stats.PeakAllocated, int64(2*DefaultAccountQuantum),
		"every reserved byte is an allocated buffer or the chunks' account's bounded slack")

	// With a quantum of one byte, the account keeps at most two.
	p = pool.NewGreedy(64 << 20)
	r = runSort(t, p, Options{BatchRows: 1000, AccountQuantum: 1}, 1 /* seed */, 1000 /* keys */, 50_000, 1000, 333, 4096)
	assert.LessOrEqual(t, r.stats.PeakReserved-r.stats.PeakAllocated, int64(2))
}

// TestSortSpillsWhenGreedyPoolRefuses: under a budget far below the data,
// the sorter spills on refusal, never exceeds the budget, and still sorts.
func TestSortSpillsWhenGreedyPoolRefuses(t *testing.T) {
	const budget = 256 << 10
	p := pool.NewGreedy(budget)
	r := runSort(t, p, Options{BatchRows: 1024}, 2, 0 /* all keys */, 100_000, 1000)
	assert.Greater(t, r.stats.SelfSpills, int64(2))
	assert.Equal(t, r.stats.SelfSpills, r.stats.Runs)
	assert.Positive(t, r.stats.SpilledBytes)
	assert.LessOrEqual(t, r.stats.PeakReserved, int64(budget))
	assert.Zero(t, r.stats.RequestedSpills)
}

// TestSortSpillsUnderFairPoolShare: in a fair pool, another spillable
// consumer's share limits the sorter to half the pool.
func TestSortSpillsUnderFairPoolShare(t *testing.T) {
	const budget = 512 << 10
	p := pool.NewFair(budget)
	other := pool.NewConsumer("other").WithCanSpill(true).Register(p)
	defer other.Close()
	r := runSort(t, p, Options{BatchRows: 1024}, 3, 100, 60_000, 2000)
	assert.Positive(t, r.stats.SelfSpills)
	assert.LessOrEqual(t, r.stats.PeakReserved, int64(budget/2))
}

// arbiterSetup is a unified pool over one task of an arbiter.Arbiter, the
// in-process stand-in for Spark: the pool borrows through the task's
// "nativepool" consumer, whose spill callback is the pool's Reclaim.
type arbiterSetup struct {
	arb  *arbiter.Arbiter
	task *arbiter.Task
	up   *arbiter.Consumer
	pool pool.Pool
}

func newArbiterSetup(t *testing.T, budget int64, fair bool, chunk int64, opts ...pool.UnifiedOption) *arbiterSetup {
	arb := arbiter.New(budget)
	task := arb.NewTask(context.Background(), "task 1")
	up := task.NewConsumer("nativepool", nil)
	opts = append([]pool.UnifiedOption{pool.WithChunkSize(chunk)}, opts...)
	var p pool.Pool
	if fair {
		p = pool.NewFairUnified(up, budget, opts...)
	} else {
		p = pool.NewGreedyUnified(up, opts...)
	}
	u, ok := pool.As[pool.Unified](p)
	require.True(t, ok)
	up.SetReclaimer(u)
	t.Cleanup(func() {
		assert.NoError(t, u.Close())
		assert.Zero(t, task.Close(), "task still held bytes")
		arb.Close()
	})
	return &arbiterSetup{arb: arb, task: task, up: up, pool: p}
}

// TestArbiterMakesSorterSpillForAnotherConsumer is Spark's spill path: a
// second consumer of the task acquires memory the arbiter has given to the
// sorter's pool, so the arbiter calls the pool's Reclaim, which asks the
// sorter's Spiller; the other consumer gets its bytes and the sort stays
// correct.
func TestArbiterMakesSorterSpillForAnotherConsumer(t *testing.T) {
	const budget = 4 << 20
	a := newArbiterSetup(t, budget, true /* fair */, 256<<10 /* chunk */)
	inner := memory.NewCheckedAllocator(memory.NewGoAllocator())
	s, err := New(a.pool, Options{BatchRows: 1024, Inner: inner, TempDir: t.TempDir()})
	require.NoError(t, err)
	g := NewGenerator(4, 0)
	pushAll(t, s, g, memory.NewGoAllocator(), 150_000, []int{5000}) // 2.4 MB in chunks
	before := s.Stats()
	require.Zero(t, before.SelfSpills)
	require.Greater(t, before.Reserved, int64(2<<20))

	jvm := a.task.NewConsumer("jvm aggregation", nil)
	var got int64
	within(t, 10*time.Second, func() {
		got, err = jvm.Acquire(3 << 20)
	})
	require.NoError(t, err)
	assert.Equal(t, int64(3<<20), got)
	after := s.Stats()
	assert.Equal(t, int64(1), after.RequestedSpills)
	assert.Equal(t, int64(1), after.Runs)
	assert.Less(t, after.Reserved, int64(256<<10), "only the spill buffer is left")
	require.NoError(t, jvm.Release(got))

	require.NoError(t, s.Finish())
	require.NoError(t, drain(t, s).Check(g.Fingerprint()))
	checkClosed(t, s, a.pool, inner)
}

// TestSpillReentersFromOwnPushWithoutDeadlock: the sorter's own Push asks
// for a buffer, the arbiter runs short and spills the requester itself (the
// last candidate, as Spark does), so Spill runs on the goroutine that is
// inside Push. Returning means no deadlock.
func TestSpillReentersFromOwnPushWithoutDeadlock(t *testing.T) {
	a := newArbiterSetup(t, 1<<20, false /* greedy */, 0 /* exact, like Comet */)
	inner := memory.NewCheckedAllocator(memory.NewGoAllocator())
	s, err := New(a.pool, Options{BatchRows: 1024, Inner: inner, TempDir: t.TempDir()})
	require.NoError(t, err)
	g := NewGenerator(5, 1<<20)
	within(t, 20*time.Second, func() {
		pushAll(t, s, g, memory.NewGoAllocator(), 200_000, []int{4000}) // 3.2 MB through a 1 MiB budget
	})
	st := s.Stats()
	assert.Positive(t, st.RequestedSpills, "the arbiter spilled the requester through Reclaim")
	assert.Zero(t, st.SelfSpills, "the greedy unified pool never refuses while Spark can spill")
	assert.LessOrEqual(t, st.PeakReserved, int64(1<<20))
	require.NoError(t, s.Finish())
	within(t, 20*time.Second, func() {
		require.NoError(t, drain(t, s).Check(g.Fingerprint()))
	})
	checkClosed(t, s, a.pool, inner)
}

// TestSpillHeldLockReturnsZeroInsteadOfDeadlocking: the last guard. A
// Spill from the goroutine that holds the sorter's lock (which no path in
// the sorter does, but a pool callback might) returns 0 at once.
func TestSpillHeldLockReturnsZeroInsteadOfDeadlocking(t *testing.T) {
	s, err := New(pool.NewUnbounded(), Options{TempDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer s.Close()
	b := NewGenerator(6, 0).Next(memory.NewGoAllocator(), 100)
	require.NoError(t, s.Push(b))
	b.Release()
	within(t, 5*time.Second, func() {
		s.mu.Lock()
		freed, err := s.Spill(1)
		s.mu.Unlock()
		assert.NoError(t, err)
		assert.Zero(t, freed)
	})
	slack := s.Stats().Slack
	freed, err := s.Spill(1 << 40)
	require.NoError(t, err)
	assert.Equal(t, slack+int64(100*pairBytes), freed, "an ordinary Spill frees the account's slack and the chunk")
}

// TestSpillGivesTheAccountsSlackBackFirst: a spill request the chunks'
// account's slack covers spills no rows; the next one, with no slack
// left, spills the chunk, and nothing of it stays reserved.
func TestSpillGivesTheAccountsSlackBackFirst(t *testing.T) {
	p := pool.NewGreedy(64 << 20)
	s, err := New(p, Options{TempDir: t.TempDir(), AccountQuantum: 64 << 10})
	require.NoError(t, err)
	defer s.Close()
	b := NewGenerator(6, 0).Next(memory.NewGoAllocator(), 100)
	require.NoError(t, s.Push(b))
	b.Release()
	before := s.Stats()
	require.Equal(t, int64(64<<10-100*pairBytes), before.Slack)
	assert.Equal(t, before.Allocated+before.Slack, before.Reserved)
	assert.Equal(t, p.Reserved(), before.Reserved, "the pool counts the slack as reserved")
	assert.Equal(t, before.Slack, before.PeakSlack, "the peak is sampled after the Push")

	freed, err := s.Spill(before.Slack)
	require.NoError(t, err)
	assert.Equal(t, before.Slack, freed)
	after := s.Stats()
	assert.Zero(t, after.Runs, "no rows spilled")
	assert.Zero(t, after.Slack)
	assert.Equal(t, before.Allocated, after.Allocated)

	freed, err = s.Spill(1)
	require.NoError(t, err)
	assert.Equal(t, int64(100*pairBytes), freed)
	assert.Equal(t, int64(1), s.Stats().Runs)
	assert.Zero(t, s.Stats().Slack, "what the spill freed went back to the pool")
	assert.Equal(t, s.Stats().Allocated, p.Reserved())
}

// TestSpillDuringMergeMovesInMemoryRowsToDisk: after Finish, a requested
// spill writes the unconsumed rows of each in-memory chunk to disk, frees
// the chunks, and the merge continues from the files with the same result.
func TestSpillDuringMergeMovesInMemoryRowsToDisk(t *testing.T) {
	p := pool.NewGreedy(64 << 20)
	inner := memory.NewCheckedAllocator(memory.NewGoAllocator())
	s, err := New(p, Options{BatchRows: 500, Inner: inner, TempDir: t.TempDir()})
	require.NoError(t, err)
	g := NewGenerator(7, 50)
	pushAll(t, s, g, memory.NewGoAllocator(), 20_000, []int{2000})
	require.NoError(t, s.Finish())
	v := &Verifier{}
	for range 3 {
		b, err := s.Next()
		require.NoError(t, err)
		require.NoError(t, v.AddBatch(b))
		b.Release()
	}
	before := s.Stats()
	freed, err := s.Spill(1 << 40)
	require.NoError(t, err)
	assert.Equal(t, before.Slack+int64(20_000*pairBytes+2*8*500), freed,
		"the account's slack, every chunk and then the spill buffer are freed")
	after := s.Stats()
	assert.Equal(t, before.Reserved-freed, after.Reserved)
	assert.Equal(t, int64(10), after.Runs, "one run per chunk")
	assert.Equal(t, int64(20_000-1500-10), after.SpilledRows, "heads stay in the heap")
	freed, err = s.Spill(1 << 40)
	require.NoError(t, err)
	assert.Zero(t, freed, "nothing left in memory")
	for {
		b, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.NoError(t, v.AddBatch(b))
		b.Release()
	}
	require.NoError(t, v.Check(g.Fingerprint()))
	checkClosed(t, s, p, inner)
}

// TestConcurrentSpillsDuringPushAndMergeKeepOutputCorrect: another
// goroutine calls Spill continuously while the driver pushes and drains;
// run under -race. Success is a correct sort and a clean close.
func TestConcurrentSpillsDuringPushAndMergeKeepOutputCorrect(t *testing.T) {
	p := pool.NewGreedy(64 << 20)
	inner := memory.NewCheckedAllocator(memory.NewGoAllocator())
	s, err := New(p, Options{BatchRows: 700, Inner: inner, TempDir: t.TempDir()})
	require.NoError(t, err)
	g := NewGenerator(8, 1000)
	var stop atomic.Bool
	var eg errgroup.Group
	eg.Go(func() error {
		for !stop.Load() {
			if _, err := s.Spill(1); err != nil {
				return err
			}
			time.Sleep(50 * time.Microsecond)
		}
		return nil
	})
	var v *Verifier
	within(t, 30*time.Second, func() {
		pushAll(t, s, g, memory.NewGoAllocator(), 60_000, []int{900, 1500})
		require.NoError(t, s.Finish())
		v = drain(t, s)
	})
	stop.Store(true)
	require.NoError(t, eg.Wait())
	require.NoError(t, v.Check(g.Fingerprint()))
	assert.Positive(t, s.Stats().RequestedSpills)
	checkClosed(t, s, p, inner)
}

// TestPushFailsWhenOneBatchExceedsTheBudget: with nothing left to spill,
// a batch that does not fit is refused with the pool's error, and the
// sorter can still be closed cleanly.
func TestPushFailsWhenOneBatchExceedsTheBudget(t *testing.T) {
	p := pool.NewGreedy(64 << 10)
	s, err := New(p, Options{BatchRows: 1024, TempDir: t.TempDir()})
	require.NoError(t, err)
	b := NewGenerator(9, 0).Next(memory.NewGoAllocator(), 10_000)
	defer b.Release()
	err = s.Push(b)
	require.ErrorIs(t, err, pool.ErrResourcesExhausted)
	assert.Equal(t, "extsort: Push(10000 rows): not enough memory even with nothing left to spill: "+
		"extsort: allocation refused: ffi: Allocate(160000) for "+s.Consumer().String()+" with 0 bytes allocated: Resources exhausted: Failed to allocate additional 156.2 KB for ExternalSorter "+
		"with 0.0 B already allocated for this reservation - 48.0 KB remain available for the total memory pool: "+
		"greedy(used: 16.0 KB, pool_size: 64.0 KB)", err.Error())
	assert.Zero(t, s.Stats().RowsIn)
	require.NoError(t, s.Close())
	assert.Zero(t, p.Reserved())
}

// TestNewFailsWhenSpillBufferDoesNotFit: the spill buffer is charged up
// front; if it is refused nothing stays registered.
func TestNewFailsWhenSpillBufferDoesNotFit(t *testing.T) {
	p := pool.NewGreedy(1 << 10)
	_, err := New(p, Options{BatchRows: 1024, TempDir: t.TempDir()})
	require.ErrorIs(t, err, pool.ErrResourcesExhausted)
	assert.Zero(t, p.Reserved())
}

// TestPushRejectsBatchesOfAnotherShape checks the whole error text of each
// rejected input.
func TestPushRejectsBatchesOfAnotherShape(t *testing.T) {
	mem := memory.NewGoAllocator()
	int64s := func(vals []int64, valid []bool) arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.AppendValues(vals, valid)
		return b.NewArray()
	}
	f64 := func() arrow.Array {
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		b.AppendValues([]float64{1, 2}, nil)
		return b.NewArray()
	}
	mk := func(cols ...arrow.Array) arrow.RecordBatch {
		fields := make([]arrow.Field, len(cols))
		for i, c := range cols {
			fields[i] = arrow.Field{Name: "c", Type: c.DataType(), Nullable: true}
		}
		return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(cols[0].Len()))
	}
	tests := []struct {
		name  string
		batch arrow.RecordBatch
		want  string
	}{
		{"one column", mk(int64s([]int64{1, 2}, nil)), "extsort: batch has 1 columns, want 2 (key, payload)"},
		{"float payload", mk(int64s([]int64{1, 2}, nil), f64()), "extsort: batch columns are int64 and float64, want int64 and int64"},
		{"null key", mk(int64s([]int64{1, 2}, []bool{true, false}), int64s([]int64{1, 2}, nil)),
			"extsort: batch has 1 null keys and 0 null payloads; nulls are not supported"},
	}
	s, err := New(pool.NewUnbounded(), Options{TempDir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.batch.Release()
			assert.EqualError(t, s.Push(tc.batch), tc.want)
		})
	}
	require.NoError(t, s.Finish())
	b := NewGenerator(1, 0).Next(mem, 1)
	defer b.Release()
	assert.EqualError(t, s.Push(b), "extsort: Push after Finish")
	assert.EqualError(t, s.Finish(), "extsort: Finish after Finish")
}

// TestCloseReportsUnreleasedOutputAsLeakAndReleasesCharge: an output
// batch still held at Close is reported with the consumer's name, its
// charge goes back to the pool at once, and its later release is a late
// free that leaves the pool alone.
func TestCloseReportsUnreleasedOutputAsLeakAndReleasesCharge(t *testing.T) {
	p := pool.NewGreedy(1 << 20)
	s, err := New(p, Options{BatchRows: 100, TempDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	b := NewGenerator(10, 0).Next(memory.NewGoAllocator(), 250)
	require.NoError(t, s.Push(b))
	b.Release()
	require.NoError(t, s.Finish())
	out, err := s.Next()
	require.NoError(t, err)
	err = s.Close()
	var leak *ffi.LeakError
	require.ErrorAs(t, err, &leak)
	assert.Equal(t, fmt.Sprintf("ffi: %s leaked 2 buffers (1600.0 B); allocation sites not recorded (use WithAllocationSites(true))",
		s.Consumer()), err.Error())
	assert.Zero(t, p.Reserved())
	assert.True(t, s.Reservation().Closed())
	out.Release()
	assert.Zero(t, p.Reserved())
	assert.Equal(t, int64(2), s.Allocator().Snapshot().LateFrees)
	require.NoError(t, s.Close())
	_, err = s.Next()
	assert.EqualError(t, err, "extsort: Next after Close")
}

// TestEmptyInputYieldsEOF: no rows in, no rows out, nothing left behind.
func TestEmptyInputYieldsEOF(t *testing.T) {
	p := pool.NewGreedy(1 << 20)
	r := runSort(t, p, Options{}, 11, 0, 0, 1)
	assert.Zero(t, r.stats.RowsOut)
}
