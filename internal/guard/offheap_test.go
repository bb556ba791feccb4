package guard_test

import (
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/guard"
)

// fakeOffHeap is Spark's off-heap memory as a whole: total bytes, what its
// consumers hold (used: Spark's own, another engine's and the native
// pools'), and what the guard holds as ballast. Acquire takes what is
// free, never so much that the consumers other than the native pools are
// left less than floor.
type fakeOffHeap struct {
	mu                          sync.Mutex
	total, used, ballast, floor int64
	native                      int64 // the native pools' held, as the last Acquire was told
	acquires, releases          int
	fail                        error
}

func (o *fakeOffHeap) Acquire(n, native int64) (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.acquires++
	o.native = native
	if o.fail != nil {
		return 0, o.fail
	}
	free := o.total - o.used - o.ballast
	room := o.total - o.ballast - native - o.floor
	got := max(0, min(n, free, room))
	o.ballast += got
	return got, nil
}

func (o *fakeOffHeap) Keep(n int64) (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.acquires++
	if o.fail != nil {
		return 0, o.fail
	}
	got := max(0, min(n, o.total-o.used-o.ballast))
	o.ballast += got
	return got, nil
}

func (o *fakeOffHeap) Release(n int64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.releases++
	if o.fail != nil {
		return o.fail
	}
	if n > o.ballast {
		return errors.New("released more than held")
	}
	o.ballast -= n
	return nil
}

func (o *fakeOffHeap) Free() (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fail != nil {
		return 0, o.fail
	}
	return o.total - o.used - o.ballast, nil
}

func (o *fakeOffHeap) set(f func(o *fakeOffHeap)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f(o)
}

func (o *fakeOffHeap) get() (used, ballast int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.used, o.ballast
}

// An executor with no native engine, beside Spark's own off-heap consumers
// (or another engine's): a 1 GiB pod with a 32 MiB reserve, the JVM at
// 700 MiB of which 100 MiB are the consumers' off-heap pages, 256 MiB of
// off-heap memory with a 16 MiB floor (the pod has room for the consumers
// to use all of it).
func newCompanionPod(t *testing.T) (*fakeProcess, *fakeOffHeap, *guard.Guard, *logRecorder, *fakeClock) {
	t.Helper()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	off := &fakeOffHeap{total: 256 * mib, used: 100 * mib, floor: 16 * mib}
	p := &fakeProcess{clock: clock, limit: 1024 * mib, jvm: 700 * mib, off: off}
	logs := &logRecorder{}
	rt := p.runtime()
	rt.OffHeap = off
	g := guard.New(guard.Config{Reserve: 32 * mib}, p, p, rt, clock, slog.New(logs))
	return p, off, g, logs, clock
}

// consumersSpill is what Spark's consumers do at their next borrow when the
// guard holds what is free: they spill n bytes of off-heap pages, which
// leave the process.
func consumersSpill(p *fakeProcess, off *fakeOffHeap, n int64) {
	off.set(func(o *fakeOffHeap) { o.used -= n })
	p.set(func(p *fakeProcess) { p.jvm -= n })
}

// consumersGrow is Spark's consumers borrowing n bytes that are free and
// touching them.
func consumersGrow(p *fakeProcess, off *fakeOffHeap, n int64) {
	off.set(func(o *fakeOffHeap) { o.used += n })
	p.set(func(p *fakeProcess) { p.jvm += n })
}

// With no native consumer at all, a burst makes the guard hold what is free
// of Spark's off-heap memory (no consumer grows while the episode lasts)
// plus what is still short, above the floor, so that the consumers give
// that up at their next borrow. What they free beyond it stays theirs, so
// that they are held down by the shortage, not starved. The episode lasts
// until the headroom would stay a reserve and a half even were they to grow
// into everything free; the ballast goes back only as far as the pod could
// take them growing into it, and all of it once the burst is gone.
func TestWithoutNativeMemoryTheGuardHoldsSparksOffHeapMemoryByTheShortage(t *testing.T) {
	p, off, g, logs, clock := newCompanionPod(t)
	g.Step()
	assert.Zero(t, off.acquires, "no pressure: nothing held")

	p.set(func(p *fakeProcess) { p.jvm += 300 * mib }) // headroom 24 MiB: 24 short of a reserve and a half
	clock.advance(time.Millisecond)
	g.Step()
	_, ballast := off.get()
	assert.Equal(t, int64(156*mib), ballast, "what is free (256 − 100) is held at once")
	e := g.Episodes()[0]
	assert.True(t, e.Open())
	assert.Equal(t, int64(156*mib), e.OffHeapTaken)
	assert.Equal(t, time.Duration(0), e.OffHeapReaction)
	assert.False(t, e.NothingLeft, "free off-heap memory was held: something was left")
	assert.Zero(t, logs.count("WARN pod guard: nothing native left to give and no free off-heap memory to hold; the kernel decides"))

	// The consumers meet no room at their next borrow and spill 80 MiB: the
	// 24 MiB short are held, the other 56 MiB stay free for them.
	consumersSpill(p, off, 80*mib)
	clock.advance(20 * time.Millisecond)
	g.Step()
	_, ballast = off.get()
	assert.Equal(t, int64(180*mib), ballast, "the shortage is held too, not all they freed")
	assert.True(t, g.Episodes()[0].Open(), "headroom 104 MiB, but 80 MiB were free to grow into")

	g.Step()
	assert.False(t, g.Episodes()[0].Open(), "headroom 104 MiB: a reserve and a half with the 56 MiB free grown into")
	_, ballast = off.get()
	assert.Equal(t, int64(180*mib), ballast, "nothing goes back that the pod could not take")
	consumersGrow(p, off, 56*mib) // they grow back into what is free
	g.Step()
	used, ballast := off.get()
	assert.Equal(t, int64(76*mib), used, "the consumers gave up the 24 MiB the pod lacked")
	assert.Equal(t, int64(180*mib), ballast)
	assert.Equal(t, int64(1), g.Stats().Episodes, "no second episode")

	p.set(func(p *fakeProcess) { p.jvm -= 300 * mib }) // the burst is over
	g.Step()
	_, ballast = off.get()
	assert.Zero(t, ballast, "all of it went back: the pod has room for the consumers to use it all")
	st := g.Stats()
	assert.Equal(t, int64(180*mib), st.OffHeapTaken)
	assert.Equal(t, int64(180*mib), st.OffHeapReleased)
	assert.Equal(t, int64(1), st.Episodes)
}

// Native consumers give way first, into their pools' ballast (held from
// Spark, spent by their own consumers only); then the guard holds what is
// free of Spark's off-heap memory and what is still short, which Spark's
// other consumers give up at their next borrow, but never so much that
// they keep less than the floor beyond what the native pools hold.
func TestNativeMemoryGivesWayFirstThenSparksConsumersGiveWhatIsStillShort(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	// 64 MiB of off-heap memory: the native sort holds 40 of it (30
	// resident and spillable), Spark's aggregation 20; 4 MiB are free.
	off := &fakeOffHeap{total: 64 * mib, used: 60 * mib, floor: 8 * mib}
	p := &fakeProcess{clock: clock, limit: 1024 * mib, jvm: 900 * mib, native: 30 * mib, held: 40 * mib, spillable: 30 * mib, off: off}
	rt := p.runtime()
	rt.OffHeap = off
	g := guard.New(guard.Config{Reserve: 32 * mib}, p, p, rt, clock, slog.New(slog.DiscardHandler))
	g.Step()

	p.set(func(p *fakeProcess) { p.jvm += 100 * mib }) // headroom −6 MiB: deficit 54 MiB
	g.Step()
	require.Equal(t, []int64{54 * mib}, p.targets, "native memory was asked first, for the deficit")
	assert.Equal(t, int64(30*mib), g.Stats().Ballast, "the sort's 30 MiB stay in its pool as ballast")
	used, ballast := off.get()
	assert.Equal(t, int64(60*mib), used)
	assert.Equal(t, int64(4*mib), ballast, "what is free is held; 24 MiB are still short")
	e := g.Episodes()[0]
	assert.Equal(t, int64(30*mib), e.Spilled)
	assert.Equal(t, int64(4*mib), e.OffHeapTaken)

	assert.Equal(t, int64(40*mib), off.native, "the guard told the off-heap side what the native pools hold")

	// The aggregation spills 8 MiB at its next borrow, all held; then 8
	// more, of which 4 are held: with the native pools' 40 MiB, the 8 MiB
	// floor leaves the hold 16, not the 28 that free + short would be.
	consumersSpill(p, off, 8*mib)
	g.Step()
	used, ballast = off.get()
	assert.Equal(t, int64(52*mib), used)
	assert.Equal(t, int64(12*mib), ballast)
	consumersSpill(p, off, 8*mib)
	g.Step()
	used, ballast = off.get()
	assert.Equal(t, int64(44*mib), used)
	assert.Equal(t, int64(16*mib), ballast, "the aggregation's 4 MiB and the 4 free are its floor")
	assert.Equal(t, int64(16*mib), g.Episodes()[0].OffHeapTaken)
}

// However short the pod is, the guard never holds so much that Spark's
// consumers are left less than the floor.
func TestTheOffHeapHoldLeavesTheConsumersTheirFloor(t *testing.T) {
	p, off, g, _, _ := newCompanionPod(t)
	p.set(func(p *fakeProcess) { p.jvm += 400 * mib }) // 124 MiB short of a reserve and a half
	g.Step()
	_, ballast := off.get()
	assert.Equal(t, int64(156*mib), ballast)
	consumersSpill(p, off, 100*mib) // everything they had
	g.Step()
	used, ballast := off.get()
	assert.Zero(t, used)
	assert.Equal(t, int64(240*mib), ballast, "256 MiB less the 16 MiB floor")
}

// The guard that stops hands back what it holds of Spark's off-heap memory.
func TestAGuardThatStopsHandsTheOffHeapBallastBack(t *testing.T) {
	p, off, g, _, _ := newCompanionPod(t)
	g.Step()
	p.set(func(p *fakeProcess) { p.jvm += 300 * mib })
	g.Step()
	_, ballast := off.get()
	require.Equal(t, int64(156*mib), ballast)
	g.Stop()
	_, ballast = off.get()
	assert.Zero(t, ballast)
	assert.Zero(t, g.Stats().OffHeapBallast)
	assert.Equal(t, int64(156*mib), g.Stats().OffHeapReleased)
}

// With nothing native to give and nothing free to hold (the consumers hold
// everything above the floor and do not borrow), the guard says so once
// per episode and leaves the decision to the kernel.
func TestWithNothingToGiveOrHoldTheGuardSaysSoOnce(t *testing.T) {
	p, off, g, logs, clock := newCompanionPod(t)
	off.set(func(o *fakeOffHeap) { o.used = o.total })
	p.set(func(p *fakeProcess) { p.jvm += 300 * mib })
	for range 3 {
		clock.advance(time.Millisecond)
		g.Step()
	}
	assert.Equal(t, 1, logs.count("WARN pod guard: nothing native left to give and no free off-heap memory to hold; the kernel decides"))
	assert.True(t, g.Episodes()[0].NothingLeft)
	assert.Equal(t, time.Duration(-1), g.Episodes()[0].OffHeapReaction)
}

// An off-heap side that fails is logged once at WARN and holds nothing;
// the guard goes on reacting with native memory alone and never gives
// back what it does not hold.
func TestAFailingOffHeapSideIsLoggedOnceAndChangesNothing(t *testing.T) {
	p, off, g, logs, clock := newCompanionPod(t)
	off.set(func(o *fakeOffHeap) { o.fail = errors.New("java.lang.IllegalStateException: no SparkEnv") })
	p.set(func(p *fakeProcess) { p.jvm += 300 * mib })
	for range 3 {
		clock.advance(time.Millisecond)
		g.Step()
	}
	assert.Equal(t, 1, logs.count("WARN pod guard: cannot take Spark's off-heap ballast")+logs.count("WARN pod guard: cannot read Spark's off-heap ballast"))
	assert.Zero(t, g.Stats().OffHeapBallast)
	g.Stop()
	assert.Zero(t, off.releases, "nothing held: nothing handed back")
}

// A native borrow Spark granted short while the guard holds its off-heap
// memory is lent what it lacks: the bytes stay held (Spark's books still
// count them) and back the pool's overcommit; while lent they are not
// handed back to Spark, and once repaid they are like the rest of the hold.
func TestANativeBorrowIsLentWhatTheGuardHolds(t *testing.T) {
	p, off, g, _, _ := newCompanionPod(t)
	p.set(func(p *fakeProcess) { p.jvm += 300 * mib })
	g.Step()
	_, ballast := off.get()
	require.Equal(t, int64(156*mib), ballast)

	assert.Equal(t, int64(4*mib), g.Lend(4*mib))
	_, ballast = off.get()
	assert.Equal(t, int64(156*mib), ballast, "a loan stays held")
	st := g.Stats()
	assert.Equal(t, int64(156*mib), st.OffHeapBallast)
	assert.Equal(t, int64(4*mib), st.OffHeapLent)

	p.set(func(p *fakeProcess) { p.jvm -= 300 * mib }) // the burst is over
	g.Step()
	_, ballast = off.get()
	assert.Equal(t, int64(4*mib), ballast, "everything went back but the loan")
	g.Repay(4 * mib)
	g.Step()
	_, ballast = off.get()
	assert.Zero(t, ballast, "repaid, it went back too")

	assert.Zero(t, g.Lend(mib), "nothing held: nothing lent")
	assert.Equal(t, int64(4*mib), g.Stats().OffHeapLentBytes)
}

// A native borrow Spark granted short while the guard holds none of its
// off-heap memory (no episode, the pod near its limit: the pools keep their
// ballast) is lent the pools' ballast: it goes back to Spark and the guard
// keeps the same bytes at once, past the floor that limits what it takes of
// free memory, since they served no other consumer; there they back the
// loan. Spark's consumers keep what they had: the pools hold less by what
// the guard holds. A repaid loan goes back to Spark with the rest.
func TestABorrowSparkGrantedShortIsLentThePoolsBallast(t *testing.T) {
	p, off, g, _, _ := newCompanionPod(t)
	// Spark's consumers 160 MiB, the pools 96 of which 64 are ballast:
	// nothing free, and a floor the guard's Acquire could not pass.
	off.set(func(o *fakeOffHeap) { o.used, o.floor = 256*mib, 200*mib })
	// The pod 60 MiB short of its limit: under two reserves, the pools'
	// ballast stays (Config.Releasable), but no episode is open.
	p.set(func(p *fakeProcess) { p.held, p.ballast, p.jvm = 96*mib, 64*mib, 964*mib })
	g.Step()
	require.Zero(t, g.Stats().OffHeapBallast)
	require.Equal(t, int64(64*mib), p.ballast)
	require.Empty(t, g.Episodes())
	require.Zero(t, g.Lend(mib), "the guard holds nothing to lend")

	assert.Equal(t, int64(3*mib), g.Gather(3*mib))
	used, held := off.get()
	assert.Equal(t, int64(253*mib), used, "the pools gave 3 MiB of ballast back")
	assert.Equal(t, int64(3*mib), held, "and the guard kept them")
	assert.Equal(t, int64(61*mib), p.ballast)
	st := g.Stats()
	assert.Equal(t, int64(3*mib), st.OffHeapLent)
	assert.Equal(t, int64(3*mib), st.OffHeapGathered)
	assert.Zero(t, st.OffHeapTaken, "nothing taken of Spark's free memory")

	g.Step()
	_, held = off.get()
	assert.Equal(t, int64(3*mib), held, "a loan stays held")
	g.Repay(3 * mib)
	g.Step()
	_, held = off.get()
	assert.Zero(t, held, "repaid, it went back to Spark")
}

// A Keep that fails (a Java exception) lends nothing beyond the hold: the
// ballast that went back is Spark's again, free, and nothing is left held
// or lent for it; the failure is logged once at WARN.
func TestAFailedKeepLendsNothingAndHoldsNothing(t *testing.T) {
	p, off, g, logs, _ := newCompanionPod(t)
	off.set(func(o *fakeOffHeap) { o.used = 256 * mib })
	p.set(func(p *fakeProcess) { p.held, p.ballast, p.jvm = 96*mib, 64*mib, 964*mib })
	g.Step()
	off.set(func(o *fakeOffHeap) { o.fail = errors.New("OutOfMemoryError") })

	assert.Zero(t, g.Gather(2*mib))
	used, held := off.get()
	assert.Equal(t, int64(254*mib), used, "the ballast went back to Spark")
	assert.Zero(t, held)
	st := g.Stats()
	assert.Zero(t, st.OffHeapBallast)
	assert.Zero(t, st.OffHeapLent)
	assert.Zero(t, st.OffHeapGathered)
	assert.Equal(t, 1, logs.count("WARN pod guard: cannot keep Spark's off-heap ballast"))
}

// Without Spark's off-heap memory the guard lends nothing.
func TestWithoutAnOffHeapSideTheGuardLendsNothing(t *testing.T) {
	p, g, _, _ := newPod(t)
	p.set(func(p *fakeProcess) { p.held, p.ballast = 8*mib, 8*mib })
	assert.Zero(t, g.Lend(mib))
	assert.Zero(t, g.Gather(mib))
	assert.Equal(t, int64(8*mib), p.ballast, "the pools keep their ballast")
	g.Repay(mib)
	assert.Zero(t, g.Stats().OffHeapLent)
}
