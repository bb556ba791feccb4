package arrowruntime

import (
	"context"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/internal/bridge"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/nativepool/nativepool/pool"
)

// cStructs returns a zeroed ArrowArray and ArrowSchema in C memory, as Arrow
// Java's allocateNew gives them; they are freed when the test ends.
func cStructs(t testing.TB) (*cdata.CArrowArray, *cdata.CArrowSchema) {
	t.Helper()
	m := mallocator.NewMallocator()
	a := m.Allocate(int(unsafe.Sizeof(cdata.CArrowArray{})))
	s := m.Allocate(int(unsafe.Sizeof(cdata.CArrowSchema{})))
	t.Cleanup(func() { m.Free(a); m.Free(s) })
	return cdata.ArrayFromPtr(uintptr(unsafe.Pointer(&a[0]))), cdata.SchemaFromPtr(uintptr(unsafe.Pointer(&s[0])))
}

var arrowTestSchema = arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)

// producer stands in for Java's producer allocator: it builds batches in C
// memory it counts, and exports them into C structs. Its memory is freed
// only when the importer calls the export's release callback.
type producer struct {
	mem *memory.CheckedAllocator
}

func newProducer() *producer {
	return &producer{mem: memory.NewCheckedAllocator(mallocator.NewMallocator())}
}

// export builds v = first … first+n-1 and exports it into fresh C structs.
func (p *producer) export(t testing.TB, first, n int64) (*cdata.CArrowArray, *cdata.CArrowSchema) {
	t.Helper()
	b := array.NewRecordBuilder(p.mem, arrowTestSchema)
	defer b.Release()
	col := b.Field(0).(*array.Int64Builder)
	for i := range n {
		col.Append(first + i)
	}
	rb := b.NewRecordBatch()
	defer rb.Release() // the export keeps its own reference
	arr, sc := cStructs(t)
	cdata.ExportArrowRecordBatch(rb, arr, sc)
	return arr, sc
}

// sumExported imports an exported batch with arrow-go (as Java would read
// it), sums column 0 and releases it.
func sumExported(t testing.TB, arr *cdata.CArrowArray, sc *cdata.CArrowSchema) int64 {
	t.Helper()
	rb, err := cdata.ImportCRecordBatch(arr, sc)
	require.NoError(t, err)
	defer rb.Release()
	var s int64
	for _, v := range rb.Column(0).(*array.Int64).Int64Values() {
		s += v
	}
	return s
}

type arrowFixture struct {
	b    *bridge.Bridge
	logs *logBuffer
	up   *fakeUpstream
	pool int64
}

func newArrowFixture(t testing.TB, budget int64) *arrowFixture {
	t.Helper()
	b, logs := newTestBridge(t)
	up := newFakeUpstream(budget)
	return &arrowFixture{b: b, logs: logs, up: up, pool: mustOpen(t, b, 77, bridge.KindGreedyUnified, 0, 0, up)}
}

func (f *arrowFixture) stats(t testing.TB, res int64) []int64 {
	t.Helper()
	s, err := f.b.ArrowStats(res)
	require.NoError(t, err)
	return s
}

func TestImportBatchTracksWithoutChargingUntilGoReleasesIt(t *testing.T) {
	f := newArrowFixture(t, 1<<30)
	p := newProducer()
	res := mustReserve(t, f.b, f.pool, "consumer", false, nil)
	arr, sc := p.export(t, 1, 1000)
	produced := p.mem.CurrentAlloc()
	require.Positive(t, produced)

	h, err := importBatch(f.b, res, arr, sc)
	require.NoError(t, err)
	s := f.stats(t, res)
	assert.Equal(t, int64(0), s[bridge.ArrowStatAllocated], "Go tracks an import and charges nothing")
	assert.Equal(t, int64(0), s[bridge.ArrowStatReserved])
	assert.Equal(t, int64(1), s[bridge.ArrowStatImportsLive])
	assert.GreaterOrEqual(t, s[bridge.ArrowStatImported], int64(8000))
	assert.Equal(t, int64(1), s[bridge.ArrowStatBatches])
	assert.Equal(t, int64(0), f.up.Held(), "Spark is not told twice")
	assert.Equal(t, produced, p.mem.CurrentAlloc(), "the producer keeps its buffers (and its charge)")

	require.NoError(t, f.b.ReleaseBatch(h))
	assert.Equal(t, 0, p.mem.CurrentAlloc(), "Go's release called the producer's release")
	s = f.stats(t, res)
	assert.Equal(t, int64(0), s[bridge.ArrowStatImportsLive])
	assert.Equal(t, int64(0), s[bridge.ArrowStatBatches])
	require.NoError(t, f.b.CloseReservation(res))
	require.NoError(t, f.b.ClosePool(f.pool))
	f.up.requireSane(t)
}

func TestCopyBatchChargesTheReservationUntilTheCopyIsReleased(t *testing.T) {
	f := newArrowFixture(t, 1<<30)
	p := newProducer()
	res := mustReserve(t, f.b, f.pool, "owner", false, nil)
	arr, sc := p.export(t, 1, 1000)
	in, err := importBatch(f.b, res, arr, sc)
	require.NoError(t, err)
	cp, err := CopyBatch(f.b, res, in, "")
	require.NoError(t, err)
	require.NoError(t, f.b.ReleaseBatch(in))
	assert.Equal(t, 0, p.mem.CurrentAlloc(), "the copy does not pin the producer's buffers")

	s := f.stats(t, res)
	assert.GreaterOrEqual(t, s[bridge.ArrowStatAllocated], int64(8000))
	assert.Equal(t, s[bridge.ArrowStatAllocated], s[bridge.ArrowStatReserved], "exact: reserved = allocated")
	assert.Equal(t, s[bridge.ArrowStatAllocated], f.up.Held(), "Spark holds what Go charges")

	out, outSchema := cStructs(t)
	require.NoError(t, exportBatch(f.b, cp, out, outSchema))
	require.NoError(t, f.b.ReleaseBatch(cp))
	s2 := f.stats(t, res)
	assert.Equal(t, s[bridge.ArrowStatAllocated], s2[bridge.ArrowStatAllocated], "the charge lives until the consumer releases")
	assert.Equal(t, int64(1), s2[bridge.ArrowStatExportsLive])
	assert.Equal(t, int64(1000*1+999*1000/2), sumExported(t, out, outSchema))
	s3 := f.stats(t, res)
	assert.Equal(t, int64(0), s3[bridge.ArrowStatAllocated])
	assert.Equal(t, int64(0), s3[bridge.ArrowStatReserved])
	assert.Equal(t, int64(0), s3[bridge.ArrowStatExportsLive])
	assert.Equal(t, int64(0), f.up.Held())
	require.NoError(t, f.b.ClosePool(f.pool))
	f.up.requireSane(t)
}

// TestCopyBatchChargesItsOwnReservationAndLeavesTheHandlesSizeAlone: the
// copy is charged to the Arrow reservation (a sibling of the same
// consumer), so Size of the handle stays what Java grew (Java's
// memory.Reservation.size(): one account of the reservation's bytes), while
// Spark still holds both.
func TestCopyBatchChargesItsOwnReservationAndLeavesTheHandlesSizeAlone(t *testing.T) {
	f := newArrowFixture(t, 1<<30)
	p := newProducer()
	res := mustReserve(t, f.b, f.pool, "owner", false, nil)
	require.NoError(t, f.b.TryGrow(res, 100))
	arr, sc := p.export(t, 1, 1000)
	in, err := importBatch(f.b, res, arr, sc)
	require.NoError(t, err)
	cp, err := CopyBatch(f.b, res, in, "")
	require.NoError(t, err)

	size, err := f.b.Size(res)
	require.NoError(t, err)
	assert.Equal(t, int64(100), size, "the copy is not in the handle's reservation")
	s := f.stats(t, res)
	assert.GreaterOrEqual(t, s[bridge.ArrowStatAllocated], int64(8000))
	assert.Equal(t, s[bridge.ArrowStatAllocated], s[bridge.ArrowStatReserved], "the Arrow reservation holds the copy")
	assert.Equal(t, 100+s[bridge.ArrowStatAllocated], f.up.Held(), "Spark holds both reservations' bytes")

	freed, err := f.b.Free(res)
	require.NoError(t, err)
	assert.Equal(t, int64(100), freed, "Free gives back what Java grew, never the copy")
	assert.Equal(t, s[bridge.ArrowStatAllocated], f.up.Held(), "the copy stays charged")

	require.NoError(t, f.b.ReleaseBatch(cp))
	require.NoError(t, f.b.ReleaseBatch(in))
	assert.Equal(t, int64(0), f.stats(t, res)[bridge.ArrowStatReserved])
	assert.Equal(t, int64(0), f.up.Held())
	require.NoError(t, f.b.CloseReservation(res))
	require.NoError(t, f.b.ClosePool(f.pool))
	f.up.requireSane(t)
}

func TestReleaseBatchTwiceIsIllegalStateAndReleasesNothingTwice(t *testing.T) {
	f := newArrowFixture(t, 1<<30)
	p := newProducer()
	res := mustReserve(t, f.b, f.pool, "twice", false, nil)
	arr, sc := p.export(t, 0, 100)
	h, err := importBatch(f.b, res, arr, sc)
	require.NoError(t, err)
	require.NoError(t, f.b.ReleaseBatch(h))
	err = f.b.ReleaseBatch(h)
	require.EqualError(t, err, fmt.Sprintf("nativepool: batch handle 0x%x is closed: stale handle", uint64(h)))
	assert.Equal(t, bridge.ThrowIllegalState, bridge.Classify(err))
	_, err = CopyBatch(f.b, res, h, "")
	assert.Equal(t, bridge.ThrowIllegalState, bridge.Classify(err))
	out, outSchema := cStructs(t)
	assert.Equal(t, bridge.ThrowIllegalState, bridge.Classify(exportBatch(f.b, h, out, outSchema)))
	assert.Equal(t, 0, p.mem.CurrentAlloc())

	// A reservation handle is not a batch handle, and 0 is nothing.
	assert.Equal(t, bridge.ThrowIllegalArgument, bridge.Classify(f.b.ReleaseBatch(res)))
	assert.Equal(t, bridge.ThrowIllegalArgument, bridge.Classify(f.b.ReleaseBatch(0)))
	require.NoError(t, f.b.ClosePool(f.pool))
}

func TestImportOfAReleasedOrNullArrayIsIllegalArgumentAndTouchesNothing(t *testing.T) {
	f := newArrowFixture(t, 1<<30)
	p := newProducer()
	res := mustReserve(t, f.b, f.pool, "bad", false, nil)
	arr, sc := p.export(t, 0, 10)
	cdata.ReleaseCArrowArray(arr)
	_, err := importBatch(f.b, res, arr, sc)
	require.Error(t, err)
	assert.Equal(t, bridge.ThrowIllegalArgument, bridge.Classify(err))
	cdata.ReleaseCArrowSchema(sc)
	_, err = importBatch(f.b, res, nil, sc)
	assert.Equal(t, bridge.ThrowIllegalArgument, bridge.Classify(err))
	assert.Equal(t, 0, p.mem.CurrentAlloc())
	assert.Equal(t, int64(0), f.stats(t, res)[bridge.ArrowStatBatches])
	require.NoError(t, f.b.ClosePool(f.pool))
}

func TestACopyThePoolRefusesWrapsResourcesExhaustedAndChargesNothing(t *testing.T) {
	f := newArrowFixture(t, 4096) // Spark grants at most 4 KiB
	p := newProducer()
	res := mustReserve(t, f.b, f.pool, "small", false, nil)
	arr, sc := p.export(t, 0, 1000)
	in, err := importBatch(f.b, res, arr, sc)
	require.NoError(t, err)
	_, err = CopyBatch(f.b, res, in, "")
	require.ErrorIs(t, err, pool.ErrResourcesExhausted)
	assert.Regexp(t, `^nativepool: copyBatch into small#\d+: arrow/concat: ffi: Allocate\(8000\) for small#\d+ with 0 bytes allocated: Resources exhausted`, err.Error())
	s := f.stats(t, res)
	assert.Equal(t, int64(0), s[bridge.ArrowStatAllocated])
	assert.Equal(t, int64(0), s[bridge.ArrowStatReserved])
	assert.Equal(t, int64(1), s[bridge.ArrowStatRefusals])
	assert.Equal(t, int64(1), s[bridge.ArrowStatBatches], "the source is untouched")
	assert.Equal(t, int64(0), f.up.Held())
	require.NoError(t, f.b.ReleaseBatch(in))
	require.NoError(t, f.b.ClosePool(f.pool))
	f.up.requireSane(t)
}

func TestClosingAReservationReportsItsLeakedBatchWithItsCallerNotOurCopyAndReleasesIt(t *testing.T) {
	f := newArrowFixture(t, 1<<30)
	f.b.ConfigureArrow(bridge.ArrowSettings{AllocationSites: true})
	p := newProducer()
	res := mustReserve(t, f.b, f.pool, "leaky", false, nil)
	arr, sc := p.export(t, 0, 1000)
	in, err := importBatch(f.b, res, arr, sc)
	require.NoError(t, err)
	cp, err := CopyBatch(f.b, res, in, "")
	require.NoError(t, err)
	require.Positive(t, f.up.Held())

	require.NoError(t, f.b.CloseReservation(res))
	leak := f.logs.lines("ffi: leak at Close")
	require.Len(t, leak, 1, f.logs.String())
	// The first frame outside nativepool's own packages: this test (a caller), not copyRecordBatch.
	assert.Regexp(t, `consumer=leaky#\d+ .*leaked 1 buffers .*1 imported batches .* from github.com/nativepool/nativepool/internal/arrowruntime.TestClosingAReservationReportsItsLeakedBatchWithItsCallerNotOurCopyAndReleasesIt `, leak[0])
	assert.NotContains(t, leak[0], "copyRecordBatch")
	leaks := f.b.RecentLeaks()
	require.Len(t, leaks, 1)
	assert.Equal(t, "leaky", leaks[0].Consumer)
	assert.Equal(t, bridge.LeakArrow, leaks[0].Kind)
	assert.Contains(t, leaks[0].Site, "arrowruntime.TestClosingAReservationReportsItsLeakedBatchWithItsCallerNotOurCopyAndReleasesIt (")
	assert.Equal(t, int64(1), f.b.ProcessStats().Leaks, "counted in the process leaks too")
	assert.Len(t, f.logs.lines("nativepool: Arrow batches never released; released at allocator close"), 1)
	assert.Equal(t, int64(0), f.up.Held(), "the charge went back before the reservation closed")
	assert.Equal(t, 0, p.mem.CurrentAlloc(), "the leaked import was released: the producer got its buffers back")
	assert.Equal(t, bridge.ThrowIllegalState, bridge.Classify(f.b.ReleaseBatch(cp)), "released once, by the close")
	assert.Equal(t, bridge.ThrowIllegalState, bridge.Classify(f.b.ReleaseBatch(in)))
	ps := f.b.ProcessArrowStats()
	assert.Equal(t, int64(0), ps[bridge.ArrowPStatLiveBatches])
	assert.Equal(t, int64(0), ps[bridge.ArrowPStatLiveAllocators])
	assert.Equal(t, int64(1), ps[bridge.ArrowPStatLeaks])
	assert.Empty(t, f.logs.lines("reservation closed before its allocator"))
	require.NoError(t, f.b.ClosePool(f.pool))
	f.up.requireSane(t)
}

func TestClosingThePoolClosesTheAllocatorsOfReservationsStillOpen(t *testing.T) {
	f := newArrowFixture(t, 1<<30)
	p := newProducer()
	res := mustReserve(t, f.b, f.pool, "open", false, nil)
	arr, sc := p.export(t, 0, 100)
	in, err := importBatch(f.b, res, arr, sc)
	require.NoError(t, err)
	cp, err := CopyBatch(f.b, res, in, "")
	require.NoError(t, err)

	require.NoError(t, f.b.ClosePool(f.pool))
	assert.Equal(t, int64(0), f.up.Held())
	assert.Empty(t, f.logs.lines("reservation closed before its allocator"), "allocators close first")
	s := f.stats(t, res)
	assert.Equal(t, int64(1), s[bridge.ArrowStatClosed])
	assert.Equal(t, int64(0), s[bridge.ArrowStatBatches])
	out, outSchema := cStructs(t)
	assert.Equal(t, bridge.ThrowIllegalState, bridge.Classify(exportBatch(f.b, cp, out, outSchema)), "exporting after the pool closed")
	arr2, sc2 := p.export(t, 0, 10)
	_, err = importBatch(f.b, res, arr2, sc2)
	require.ErrorIs(t, err, pool.ErrClosed)
	assert.Regexp(t, `^nativepool: importBatch: the Arrow allocator of open#\d+: closed$`, err.Error())
	cdata.ReleaseCArrowArray(arr2) // the caller still owns what a failed import did not take
	cdata.ReleaseCArrowSchema(sc2)
	assert.Equal(t, 0, p.mem.CurrentAlloc())
	require.NoError(t, f.b.CloseReservation(res))
	f.up.requireSane(t)
}

// An export the consumer never releases cannot be freed at task end (it may
// still be read): its bytes linger on the process books, with their owner,
// until the consumer's late release frees them.
func TestAnExportUnreleasedAtTaskEndLingersOnTheBooksUntilItsLateReleaseFreesIt(t *testing.T) {
	f := newArrowFixture(t, 1<<30)
	p := newProducer()
	res := mustReserve(t, f.b, f.pool, "exporter", false, nil)
	arr, sc := p.export(t, 0, 1000)
	in, err := importBatch(f.b, res, arr, sc)
	require.NoError(t, err)
	cp, err := CopyBatch(f.b, res, in, "")
	require.NoError(t, err)
	out, outSchema := cStructs(t)
	require.NoError(t, exportBatch(f.b, cp, out, outSchema))
	bytes := f.stats(t, res)[bridge.ArrowStatAllocated]
	require.Positive(t, bytes)
	before := f.b.ProcessArrowStats()

	require.NoError(t, f.b.ClosePool(f.pool))
	assert.Equal(t, int64(0), f.up.Held(), "Spark gets every byte back at task end")
	ps := f.b.ProcessArrowStats()
	assert.Equal(t, before[bridge.ArrowPStatLingering]+bytes, ps[bridge.ArrowPStatLingering])
	assert.Equal(t, before[bridge.ArrowPStatLingeringAlloc]+1, ps[bridge.ArrowPStatLingeringAlloc])
	lines := f.logs.lines("Arrow memory outlives its task")
	require.Len(t, lines, 1)
	assert.Contains(t, lines[0], "consumer=exporter#")
	assert.Contains(t, lines[0], "task=77")

	assert.Equal(t, int64(999*1000/2), sumExported(t, out, outSchema), "still readable; released now")
	ps = f.b.ProcessArrowStats()
	assert.Equal(t, before[bridge.ArrowPStatLingering], ps[bridge.ArrowPStatLingering])
	assert.Equal(t, before[bridge.ArrowPStatLingeringAlloc], ps[bridge.ArrowPStatLingeringAlloc])
	assert.Len(t, f.logs.lines("Arrow memory that outlived its task is freed"), 1)
	assert.Equal(t, 0, p.mem.CurrentAlloc())
	assert.Equal(t, int64(0), f.up.Held(), "the late release gives nothing back twice")
	f.up.requireSane(t)
}

// TestConcurrentImportsCopiesExportsAndReleasesKeepSparkAndTheBooksEqual
// runs importers, copiers, exporters and releasers on many goroutines
// against one task, then checks the invariant: once every batch and export
// is released, Go charges nothing, Spark holds nothing, and every producer
// buffer came back.
func TestConcurrentImportsCopiesExportsAndReleasesKeepSparkAndTheBooksEqual(t *testing.T) {
	f := newArrowFixture(t, 1<<30)
	p := newProducer()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, ctx := errgroup.WithContext(ctx)
	const workers, rounds = 8, 50
	for w := range workers {
		g.Go(func() error {
			res, err := f.b.NewReservation(f.pool, fmt.Sprintf("w%d", w), false, nil)
			if err != nil {
				return err
			}
			for i := range rounds {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				arr, sc := p.export(t, int64(i), 64+int64(i))
				in, err := importBatch(f.b, res, arr, sc)
				if err != nil {
					return err
				}
				cp, err := CopyBatch(f.b, res, in, "")
				if err != nil {
					return err
				}
				if err := f.b.ReleaseBatch(in); err != nil {
					return err
				}
				out, outSchema := cStructs(t)
				if err := exportBatch(f.b, cp, out, outSchema); err != nil {
					return err
				}
				if err := f.b.ReleaseBatch(cp); err != nil {
					return err
				}
				n := 64 + int64(i)
				if got, want := sumExported(t, out, outSchema), n*int64(i)+n*(n-1)/2; got != want {
					return fmt.Errorf("worker %d round %d: sum %d, want %d", w, i, got, want)
				}
				if s, _ := f.b.ArrowStats(res); s[bridge.ArrowStatAllocated] != 0 || s[bridge.ArrowStatReserved] != 0 {
					return fmt.Errorf("worker %d round %d: still charged %v", w, i, s)
				}
			}
			return f.b.CloseReservation(res)
		})
	}
	require.NoError(t, g.Wait())
	assert.Equal(t, int64(0), f.up.Held())
	assert.Equal(t, 0, p.mem.CurrentAlloc())
	assert.Empty(t, f.logs.lines("leak"), f.logs.String())
	require.NoError(t, f.b.ClosePool(f.pool))
	f.up.requireSane(t)
}

func TestArrowSettingsApplyToAllocatorsMadeAfterwards(t *testing.T) {
	b, _ := newTestBridge(t)
	assert.Equal(t, bridge.ArrowSettings{}, b.ArrowSettings())
	b.ConfigureArrow(bridge.ArrowSettings{AllocationSites: true})
	assert.Equal(t, bridge.ArrowSettings{AllocationSites: true}, b.ArrowSettings())
}

func TestProcessArrowStatsSamplesRSS(t *testing.T) {
	b, _ := newTestBridge(t)
	s := b.ProcessArrowStats()
	require.Len(t, s, bridge.ArrowPStatCount)
	assert.Positive(t, s[bridge.ArrowPStatRSS])
	assert.Positive(t, s[bridge.ArrowPStatGoRuntime])
	assert.Equal(t, s[bridge.ArrowPStatRSS]-s[bridge.ArrowPStatGoRuntime]-s[bridge.ArrowPStatAllocated], s[bridge.ArrowPStatRSSOther])
}

// An engine's own ffi allocator, wrapped by Wrap and tracked by the Bridge
// (what jni.TrackAllocator does), counts in native.allocated (ALLOCATED)
// and in LiveNative under its consumer while tracked: the demo's sorter
// buffers were in no executor memory ledger part before.
func TestATrackedEngineAllocatorIsNativeAllocatedMemory(t *testing.T) {
	b, _ := newTestBridge(t)
	ph := mustOpen(t, b, 12, bridge.KindGreedyUnified, 0, 0, newFakeUpstream(1<<20))
	h, err := b.JoinTaskPool(12)
	require.NoError(t, err)
	res := pool.NewConsumer("engine-sort").Register(h.Pool())
	a := ffi.NewAllocator(nil, res)
	buf := a.Allocate(64 << 10)
	before := b.ProcessArrowStats()[bridge.ArrowPStatAllocated]
	untrack := b.TrackAllocator("engine-sort", Wrap(a))
	assert.Equal(t, before+64<<10, b.ProcessArrowStats()[bridge.ArrowPStatAllocated])
	live := b.LiveNative(5)
	require.Len(t, live, 1)
	assert.Equal(t, "engine-sort", live[0].Consumer)
	assert.Equal(t, int64(64<<10), live[0].Bytes)
	a.Free(buf)
	require.NoError(t, a.Close())
	untrack()
	assert.Equal(t, before, b.ProcessArrowStats()[bridge.ArrowPStatAllocated])
	res.Close()
	h.Close()
	require.NoError(t, b.ClosePool(ph))
}
