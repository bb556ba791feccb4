package bridge

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/pool"
)

func TestRecordLeakCountsLogsAtWarnAndKeepsTheLast256(t *testing.T) {
	b, logs := newTestBridge(t)
	for i := range 300 {
		require.NoError(t, b.RecordLeak(Leak{TaskAttemptID: int64(i), Consumer: "op", Kind: LeakReservation, Bytes: 10}))
	}
	s := b.ProcessStats()
	assert.Equal(t, int64(300), s.Leaks)
	assert.Equal(t, int64(3000), s.LeakedBytes)
	recent := b.RecentLeaks()
	require.Len(t, recent, maxRecentLeaks)
	assert.Equal(t, int64(300-maxRecentLeaks), recent[0].TaskAttemptID, "oldest kept first")
	assert.Equal(t, int64(299), recent[len(recent)-1].TaskAttemptID)
	lines := logs.lines("leak at task end")
	require.Len(t, lines, 300)
	assert.Contains(t, lines[0], "level=WARN")
	assert.Contains(t, lines[0], "task=0")
	assert.Contains(t, lines[0], "consumer=op")
	assert.Contains(t, lines[0], "bytes=10")
	assert.Contains(t, lines[0], "site=\"not recorded")
}

func TestRecordLeakRefusesAnUnknownKindANegativeSizeAndNoConsumer(t *testing.T) {
	b, _ := newTestBridge(t)
	for _, l := range []Leak{
		{Consumer: "op", Kind: "nonsense", Bytes: 1},
		{Consumer: "op", Kind: LeakArrow, Bytes: -1},
		{Consumer: "op", Kind: LeakArrow, Bytes: 1, Resident: -1},
		{Kind: LeakArrow, Bytes: 1},
	} {
		assert.ErrorIs(t, b.RecordLeak(l), ErrInvalidArgument, "%+v", l)
	}
	assert.Zero(t, b.ProcessStats().Leaks, "nothing recorded")
	assert.Empty(t, b.RecentLeaks())
	assert.ErrorIs(t, b.SetJavaLeakResident(-1), ErrInvalidArgument)
}

func TestAGoReservationLeftInAClosingPoolIsOneLeakPerConsumer(t *testing.T) {
	b, _ := newTestBridge(t)
	up := newFakeUpstream(1 << 30)
	p := mustOpen(t, b, 41, KindGreedyUnified, 0, 0, up)
	r1 := mustReserve(t, b, p, "sort", false, nil)
	r2 := mustReserve(t, b, p, "agg", false, nil)
	require.NoError(t, b.TryGrow(r1, 10<<20))
	require.NoError(t, b.TryGrow(r2, 1<<20))
	require.NoError(t, b.ClosePool(p))

	s := b.ProcessStats()
	assert.Equal(t, int64(2), s.Leaks, "one per consumer")
	assert.Equal(t, int64(11<<20), s.LeakedBytes)
	assert.Zero(t, s.LeakedResident, "a reservation leak is accounting: its bytes went back")
	assert.Equal(t, []Leak{
		{TaskAttemptID: 41, Consumer: "sort", Kind: LeakReservation, Bytes: 10 << 20},
		{TaskAttemptID: 41, Consumer: "agg", Kind: LeakReservation, Bytes: 1 << 20},
	}, b.RecentLeaks())
	require.NoError(t, b.CloseReservation(r1))
	require.NoError(t, b.CloseReservation(r2))
}

// siteArrow is a fakeArrow with a leak site and a listing by site.
type siteArrow struct{ *fakeArrow }

func (a siteArrow) Close() *ArrowLeak {
	l := a.fakeArrow.Close()
	if l != nil {
		l.Site, l.Exports = "example.com/engine.Op (op.go:9)", 1
	}
	return l
}

func (a siteArrow) LiveBySite() []LiveOwner {
	return []LiveOwner{{Site: "example.com/engine.Op (op.go:9)", Bytes: int64(a.mem.CurrentAlloc()), Buffers: 1}}
}

func TestAnArrowLeakCountsOnceInProcessLeaksAndWhatLingersIsResidentUntilFreed(t *testing.T) {
	rt := &fakeArrowRuntime{}
	withSites := rt.runtime()
	made := withSites.NewAllocator
	withSites.NewAllocator = func(res *pool.Reservation, sites bool, l *slog.Logger) ArrowAllocator {
		return siteArrow{made(res, sites, l).(*fakeArrow)}
	}
	b := NewBridge(slog.New(slog.DiscardHandler), withSites)
	up := newFakeUpstream(1 << 30)
	p := mustOpen(t, b, 42, KindGreedyUnified, 0, 0, up)
	res := mustReserve(t, b, p, "exporter", false, nil)
	h, err := b.ImportBatch(res, noCheck, func(a ArrowAllocator) (arrow.RecordBatch, error) {
		return int64Batch(a.(siteArrow).mem, 100), nil
	})
	require.NoError(t, err)
	var pinned arrow.RecordBatch // Java still holds the export after the task
	require.NoError(t, b.ExportBatch(h, func() error { return nil }, func(rb arrow.RecordBatch, _ ArrowAllocator) error {
		rb.Retain()
		pinned = rb
		return nil
	}))
	live := b.LiveNative(10)
	require.Len(t, live, 1)
	assert.Equal(t, "exporter", live[0].Consumer)
	assert.Equal(t, "example.com/engine.Op (op.go:9)", live[0].Site)
	held := live[0].Bytes
	require.Positive(t, held)

	require.NoError(t, b.CloseReservation(res)) // the allocator closes first, then the reservation
	require.NoError(t, b.ClosePool(p))

	s := b.ProcessStats()
	assert.Equal(t, int64(1), s.Leaks, "the allocator's leak, not also the reservation's or the pool's")
	assert.Equal(t, held, s.LeakedBytes)
	assert.Equal(t, held, s.LeakedResident, "the export Java holds keeps the buffers")
	require.Len(t, b.RecentLeaks(), 1)
	assert.Equal(t, Leak{TaskAttemptID: 42, Consumer: "exporter", Kind: LeakExport, Bytes: held,
		Site: "example.com/engine.Op (op.go:9)", Resident: held}, b.RecentLeaks()[0])
	assert.Equal(t, []LiveOwner{{Consumer: "exporter", Site: "example.com/engine.Op (op.go:9)", Bytes: held, Buffers: 1}},
		b.LiveNative(10), "a lingering allocator is still live memory")

	require.NoError(t, b.SetJavaLeakResident(64))
	assert.Equal(t, held+64, b.ProcessStats().LeakedResident, "Java's leaked buffers add")
	require.NoError(t, b.SetJavaLeakResident(0))

	pinned.Release()
	s = b.ProcessStats()
	assert.Zero(t, s.LeakedResident, "freed: off the books")
	assert.Equal(t, int64(1), s.Leaks, "the count stays")
	assert.Empty(t, b.LiveNative(10))
}

func TestLiveNativeSumsByConsumerLargestFirstAndStopsAtMax(t *testing.T) {
	b, rt, _, p := newRegistryFixture(t)
	var hs []int64
	for i, name := range []string{"small", "big", "big"} {
		res := mustReserve(t, b, p, name, false, nil)
		hs = append(hs, importInto(t, b, res, 10*(i+1)))
	}
	live := b.LiveNative(10)
	require.Len(t, live, 2, "the two 'big' reservations are one consumer")
	assert.Equal(t, "big", live[0].Consumer)
	assert.Empty(t, live[0].Site, "sites off")
	assert.Equal(t, int64(rt.made[1].mem.CurrentAlloc()+rt.made[2].mem.CurrentAlloc()), live[0].Bytes)
	assert.Equal(t, "small", live[1].Consumer)
	assert.Len(t, b.LiveNative(1), 1)
	assert.Empty(t, b.LiveNative(0))
	for _, h := range hs {
		require.NoError(t, b.ReleaseBatch(h))
	}
	assert.Empty(t, b.LiveNative(10), "nothing live")
}

func TestFormatLeaksAndLiveOwnersFlattenTabsAndLineBreaks(t *testing.T) {
	got := FormatLeaks([]Leak{
		{TaskAttemptID: 7, Consumer: "a\tb", Kind: LeakJavaArrow, Bytes: 3, Resident: 2, Site: "x\ny"},
		{TaskAttemptID: 8, Consumer: "c", Kind: LeakReservation, Bytes: 1},
	})
	assert.Equal(t, "7\ta b\tjava-arrow\t3\t2\tx y\n8\tc\treservation\t1\t0\t\n", got)
	assert.Equal(t, "op\t\t5\t1\n", FormatLiveOwners([]LiveOwner{{Consumer: "op", Bytes: 5, Buffers: 1}}))
	assert.Empty(t, FormatLeaks(nil))
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		assert.Len(t, strings.Split(line, "\t"), 6, fmt.Sprintf("%q", line))
	}
}

// Go lets a consumer register without a name. Its leak was refused by
// RecordLeak's check for Java's input and so never counted; the Bridge's own
// records now count it, named as unnamed.
func TestALeakOfAnUnnamedGoConsumerIsCounted(t *testing.T) {
	b, logs := newTestBridge(t)
	p := mustOpen(t, b, 42, KindGreedyUnified, 0, 0, newFakeUpstream(1<<20))
	r := mustReserve(t, b, p, "", false, nil)
	require.NoError(t, b.TryGrow(r, 4096))
	require.NoError(t, b.ClosePool(p))
	s := b.ProcessStats()
	assert.Equal(t, int64(1), s.Leaks)
	assert.Equal(t, int64(4096), s.LeakedBytes)
	assert.Equal(t, []Leak{{TaskAttemptID: 42, Consumer: unnamedConsumer, Kind: LeakReservation, Bytes: 4096}}, b.RecentLeaks())
	assert.Len(t, logs.lines("leak at task end"), 1)
	require.NoError(t, b.CloseReservation(r))
}

// processArrowStats0's LEAKS counts what the Go Arrow allocators' closes
// found, not Java's reports of its own open exports (also kind export), which
// count only in the process's leaks.
func TestJavasExportReportsAreNotGoArrowLeaks(t *testing.T) {
	b, _ := newTestBridge(t)
	require.NoError(t, b.RecordLeak(Leak{TaskAttemptID: 1, Consumer: "java", Kind: LeakExport, Bytes: 64}))
	assert.Zero(t, b.ProcessArrowStats()[ArrowPStatLeaks])
	assert.Zero(t, b.ProcessArrowStats()[ArrowPStatLeakedBytes])
	assert.Equal(t, int64(1), b.ProcessStats().Leaks)
}
