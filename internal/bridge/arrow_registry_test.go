package bridge

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/pool"
)

// The batch registry's own tests: pure Go, with a fake allocator over
// arrow-go's Go allocator, so they run without cgo. The C Data paths (ffi's
// allocator, validation, import and export) are tested in jni/arrow_test.go.

// fakeArrow is an ArrowAllocator that counts what its batches hold in Go
// memory (memory.CheckedAllocator) and charges nothing.
type fakeArrow struct {
	mem    *memory.CheckedAllocator
	res    *pool.Reservation
	closed bool
}

func (a *fakeArrow) Snapshot() ArrowSnapshot {
	return ArrowSnapshot{Allocated: int64(a.mem.CurrentAlloc()), Reserved: a.res.Size()}
}

func (a *fakeArrow) Close() *ArrowLeak {
	a.closed = true
	if n := a.mem.CurrentAlloc(); n > 0 {
		return &ArrowLeak{Bytes: int64(n), Report: fmt.Sprintf("fake: %s leaked %d bytes", a.res.Consumer(), n)}
	}
	return nil
}

// fakeArrowRuntime makes fakeArrow allocators and records them.
type fakeArrowRuntime struct{ made []*fakeArrow }

func (r *fakeArrowRuntime) runtime() ArrowRuntime {
	return ArrowRuntime{
		NewAllocator: func(res *pool.Reservation, _ bool, _ *slog.Logger) ArrowAllocator {
			a := &fakeArrow{mem: memory.NewCheckedAllocator(memory.NewGoAllocator()), res: res}
			r.made = append(r.made, a)
			return a
		},
		MeasureDrift: func(int64, int64) (Drift, error) { return Drift{RSS: 1, GoRuntime: 2, RSSOther: 3}, nil },
	}
}

// int64Batch is a one-column batch of n int64s from mem.
func int64Batch(mem memory.Allocator, n int) arrow.RecordBatch {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for i := range n {
		b.Append(int64(i))
	}
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{col}, int64(n))
}

func noCheck(string) error { return nil }

// importInto registers a batch made by res's allocator, as importBatch0
// does with one it imported.
func importInto(t testing.TB, b *Bridge, res int64, rows int) int64 {
	t.Helper()
	h, err := b.ImportBatch(res, noCheck, func(a ArrowAllocator) (arrow.RecordBatch, error) {
		return int64Batch(a.(*fakeArrow).mem, rows), nil
	})
	require.NoError(t, err)
	return h
}

func newRegistryFixture(t testing.TB) (*Bridge, *fakeArrowRuntime, *fakeUpstream, int64) {
	t.Helper()
	rt := &fakeArrowRuntime{}
	b := NewBridge(slog.New(slog.DiscardHandler), rt.runtime())
	up := newFakeUpstream(1 << 30)
	return b, rt, up, mustOpen(t, b, 5, KindGreedyUnified, 0, 0, up)
}

func TestBatchHandlesAreReleasedOnceAndStaleAfterwards(t *testing.T) {
	b, rt, _, p := newRegistryFixture(t)
	res := mustReserve(t, b, p, "scan", false, nil)
	h := importInto(t, b, res, 100)
	require.Len(t, rt.made, 1, "the allocator is made on first use")
	st, err := b.ArrowStats(res)
	require.NoError(t, err)
	assert.Equal(t, int64(1), st[ArrowStatBatches])
	assert.Positive(t, st[ArrowStatAllocated])

	require.NoError(t, b.ReleaseBatch(h))
	assert.Zero(t, rt.made[0].mem.CurrentAlloc(), "released: the buffers are freed")
	assert.Equal(t, ThrowIllegalState, Classify(b.ReleaseBatch(h)), "a second release is stale")
	_, err = b.CopyBatch(res, h, func(ArrowAllocator, arrow.RecordBatch) (arrow.RecordBatch, error) {
		t.Fatal("a stale batch is never copied")
		return nil, nil
	})
	assert.Equal(t, ThrowIllegalState, Classify(err))
	assert.Equal(t, ThrowIllegalArgument, Classify(b.ReleaseBatch(res)), "a reservation handle is not a batch handle")
	require.NoError(t, b.CloseReservation(res))
	require.NoError(t, b.ClosePool(p))
}

func TestCopyAndExportRunInsideTheCallOnTheRightAllocator(t *testing.T) {
	b, rt, _, p := newRegistryFixture(t)
	src := mustReserve(t, b, p, "src", false, nil)
	dst := mustReserve(t, b, p, "dst", false, nil)
	in := importInto(t, b, src, 10)

	cp, err := b.CopyBatch(dst, in, func(a ArrowAllocator, rb arrow.RecordBatch) (arrow.RecordBatch, error) {
		assert.Same(t, rt.made[1], a, "the copy is made by the destination's allocator")
		return int64Batch(a.(*fakeArrow).mem, int(rb.NumRows())), nil
	})
	require.NoError(t, err)
	var exported arrow.RecordBatch
	require.NoError(t, b.ExportBatch(cp, func() error { return nil }, func(rb arrow.RecordBatch, a ArrowAllocator) error {
		assert.Same(t, rt.made[1], a, "an export uses the allocator that made the batch")
		rb.Retain() // the consumer now holds it, as Java holds an exported struct
		exported = rb
		return nil
	}))
	require.NoError(t, b.ReleaseBatch(cp))
	assert.Positive(t, rt.made[1].mem.CurrentAlloc(), "the export keeps the copy alive after its handle is released")
	exported.Release()
	assert.Zero(t, rt.made[1].mem.CurrentAlloc())

	checkFailed := fmt.Errorf("bad target: %w", ErrInvalidArgument)
	err = b.ExportBatch(in, func() error { return checkFailed }, func(arrow.RecordBatch, ArrowAllocator) error {
		t.Fatal("nothing is exported when the target fails its check")
		return nil
	})
	require.ErrorIs(t, err, checkFailed)
	require.NoError(t, b.ReleaseBatch(in))
	require.NoError(t, b.ClosePool(p))
}

// A batch still held when its reservation closes is named in the leak
// report, counted, and released; memory an export still pins lingers on the
// books until the consumer frees it.
func TestClosingAReservationReportsReleasesAndKeepsWhatAnExportStillPins(t *testing.T) {
	b, rt, _, p := newRegistryFixture(t)
	res := mustReserve(t, b, p, "leaky", false, nil)
	h := importInto(t, b, res, 50)
	var pinned arrow.RecordBatch
	require.NoError(t, b.ExportBatch(h, func() error { return nil }, func(rb arrow.RecordBatch, _ ArrowAllocator) error {
		rb.Retain()
		pinned = rb
		return nil
	}))

	report, err := b.CloseArrow(res)
	require.NoError(t, err)
	assert.Contains(t, report, "leaky")
	assert.True(t, rt.made[0].closed)
	assert.Equal(t, ThrowIllegalState, Classify(b.ReleaseBatch(h)), "the close released the batch handle")
	ps := b.ProcessArrowStats()
	assert.Equal(t, int64(1), ps[ArrowPStatLeaks])
	assert.Equal(t, int64(1), ps[ArrowPStatLingeringAlloc], "the export still pins the buffers")
	assert.Equal(t, int64(1), ps[ArrowPStatRSS], "the runtime's drift sample is reported")

	pinned.Release()
	ps = b.ProcessArrowStats()
	assert.Zero(t, ps[ArrowPStatLingeringAlloc], "freed: no longer on the books")
	_, err = b.ImportBatch(res, noCheck, func(ArrowAllocator) (arrow.RecordBatch, error) {
		t.Fatal("a closed allocator imports nothing")
		return nil, nil
	})
	require.ErrorIs(t, err, pool.ErrClosed)
	require.NoError(t, b.CloseReservation(res))
	require.NoError(t, b.ClosePool(p))
}

func TestCloseArrowRefusesWhileACallUsesTheAllocatorAndTheLastCallFinishesAReservationsClose(t *testing.T) {
	b, rt, _, p := newRegistryFixture(t)
	res := mustReserve(t, b, p, "busy", false, nil)
	rh, err := b.reservation(res)
	require.NoError(t, err)
	_, err = b.enterArrow("test", rh)
	require.NoError(t, err)

	_, err = b.CloseArrow(res)
	require.ErrorIs(t, err, pool.ErrClosed)
	assert.Regexp(t, `in use by 1 call\(s\); close refused`, err.Error())
	b.closeArrow(rh) // what closeReservation does: the close waits for the call
	assert.False(t, rt.made[0].closed, "not closed under a running call")
	_, err = b.enterArrow("test", rh)
	require.ErrorIs(t, err, pool.ErrClosed, "no new call starts")
	b.exitArrow(rh)
	assert.True(t, rt.made[0].closed, "the last call finished the close")
	require.NoError(t, b.CloseReservation(res))
	require.NoError(t, b.ClosePool(p))
}

func TestABridgeWithoutArrowRuntimeFailsArrowCallsAndReportsNoRSS(t *testing.T) {
	b := NewBridge(slog.New(slog.DiscardHandler), ArrowRuntime{})
	up := newFakeUpstream(1 << 20)
	p := mustOpen(t, b, 6, KindGreedyUnified, 0, 0, up)
	res := mustReserve(t, b, p, "r", false, nil)
	_, err := b.ImportBatch(res, noCheck, func(ArrowAllocator) (arrow.RecordBatch, error) {
		t.Fatal("no allocator to import with")
		return nil, nil
	})
	require.ErrorContains(t, err, "no Arrow runtime")
	assert.Equal(t, int64(-1), b.ProcessArrowStats()[ArrowPStatRSS])
	require.NoError(t, b.CloseReservation(res))
	require.NoError(t, b.ClosePool(p))
}

// An allocator an engine made itself counts in the process's Arrow figures
// and in LiveNative under its consumer while it is tracked; the Bridge never
// closes it. Before TrackAllocator, such memory showed in no ledger part.
func TestTrackedEngineAllocatorsCountUntilUntracked(t *testing.T) {
	b, _ := newTestBridge(t)
	p := mustOpen(t, b, 1, KindGreedyUnified, 0, 0, newFakeUpstream(1<<20))
	res := pool.NewConsumer("engine-sort").Register(pool.NewUnbounded())
	a := &fakeArrow{mem: memory.NewCheckedAllocator(memory.NewGoAllocator()), res: res}
	buf := a.mem.Allocate(4096)
	before := b.ProcessArrowStats()
	untrack := b.TrackAllocator("engine-sort", a)
	during := b.ProcessArrowStats()
	assert.Equal(t, before[ArrowPStatAllocated]+4096, during[ArrowPStatAllocated])
	assert.Equal(t, before[ArrowPStatLiveAllocators]+1, during[ArrowPStatLiveAllocators])
	assert.Equal(t, []LiveOwner{{Consumer: "engine-sort", Bytes: 4096}}, b.LiveNative(10))
	untrack()
	untrack() // once only
	assert.Equal(t, before, b.ProcessArrowStats())
	assert.Empty(t, b.LiveNative(10))
	assert.False(t, a.closed, "the engine closes its own allocator")
	a.mem.Free(buf)
	require.NoError(t, b.ClosePool(p))
}
