package guard_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/nativepool/nativepool/internal/guard"
)

const mib = 1 << 20

// fakeClock is a clock that moves only when told to; its timers fire only
// when fire is called.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []chan time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) After(time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.timers = append(c.timers, ch)
	return ch
}

// fire fires every timer made so far and returns how many.
func (c *fakeClock) fire() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.timers {
		ch <- c.now
	}
	n := len(c.timers)
	c.timers = nil
	return n
}

// timersMade is how many timers are waiting to fire.
func (c *fakeClock) timersMade() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// fakeProcess is a memory group and its native side: JVM memory outside
// native (jvm), native memory resident (native), what the pools hold from
// Spark (held) and keep as ballast (ballast), under a limit. Spills free
// native memory into ballast, as the pools do.
type fakeProcess struct {
	mu                       sync.Mutex
	clock                    *fakeClock
	limit, jvm, native, held int64
	ballast, spillable       int64
	// dirty is page cache not yet written (spill files), charged to the
	// group until written back.
	dirty      int64
	spillDelay time.Duration
	targets    []int64
	released   int64
	goIdle     int64
	trims      int
	failRead   bool
	// off is Spark's off-heap memory, when the guard holds it.
	off *fakeOffHeap
}

func (p *fakeProcess) Read() (guard.Sample, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failRead {
		return guard.Sample{}, errors.New("no cgroup")
	}
	return guard.Sample{
		Time: p.clock.Now(), Limit: p.limit, Unreclaimable: p.jvm + p.native + p.goIdle + p.dirty,
		Native: p.native + p.goIdle, Held: p.held, Ballast: p.ballast, Dirty: p.dirty,
	}, nil
}

func (p *fakeProcess) SpillToBallast(target int64) (int64, []guard.Spill) {
	p.clock.advance(p.spillDelay)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.targets = append(p.targets, target)
	n := min(target, p.spillable)
	p.spillable -= n
	p.native -= n
	p.ballast += n
	if n == 0 {
		return 0, nil
	}
	return n, []guard.Spill{{Consumer: "sorter", Bytes: n}}
}

func (p *fakeProcess) ReleaseBallast(n int64) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n = min(n, p.ballast)
	p.ballast -= n
	p.held -= n
	p.released += n
	if p.off != nil { // the pools' held is part of Spark's off-heap memory used
		p.off.set(func(o *fakeOffHeap) { o.used -= n })
	}
	return n
}

func (p *fakeProcess) runtime() guard.Runtime {
	return guard.Runtime{
		FreeOSMemory: func() int64 {
			p.mu.Lock()
			defer p.mu.Unlock()
			n := p.goIdle
			p.goIdle = 0
			return n
		},
		MallocTrim: func() {
			p.mu.Lock()
			p.trims++
			p.mu.Unlock()
		},
	}
}

func (p *fakeProcess) set(f func(p *fakeProcess)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// logRecorder keeps every record's level and message.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Level.String()+" "+r.Message)
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

func (h *logRecorder) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// A pod of 1 GiB with a 32 MiB reserve: the JVM holds 700 MiB outside
// native memory, the native sort 200 MiB resident of 250 MiB held.
func newPod(t *testing.T) (*fakeProcess, *guard.Guard, *logRecorder, *fakeClock) {
	t.Helper()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	p := &fakeProcess{clock: clock, limit: 1024 * mib, jvm: 700 * mib, native: 200 * mib, held: 250 * mib, spillable: 200 * mib}
	logs := &logRecorder{}
	g := guard.New(guard.Config{Reserve: 32 * mib}, p, p, p.runtime(), clock, slog.New(logs))
	return p, g, logs, clock
}

// Admission counts everything resident outside native memory and native
// memory's whole claim (what its pools hold), so that a borrow never eats
// into the reserve and the half reserve above it: here 1024 − 32 − 16 − 700
// = 276 MiB for native memory, of which 250 are claimed. A borrow that does
// not fit waits, and the guard makes room for it: native consumers spill
// into ballast, as a refused borrow would have made its consumer spill, but
// without failing anything. When nothing native is left to spill, the
// waiting borrow is admitted at once: the guard never refuses.
func TestABorrowThatWouldEatIntoTheReserveWaitsWhileTheGuardMakesRoom(t *testing.T) {
	p, g, _, clock := newPod(t)
	require.NoError(t, g.Admit(1<<40), "before the first sample, everything is admitted")
	g.Step()
	require.NoError(t, g.Admit(26*mib))

	admitted := make(chan error, 1)
	go func() { admitted <- g.Admit(4 * mib) }() // 26 MiB admitted since the sample: no room left
	require.Eventually(t, func() bool { return clock.timersMade() == 1 }, 5*time.Second, time.Millisecond)
	select {
	case <-admitted:
		t.Fatal("admitted without room")
	case <-time.After(20 * time.Millisecond):
	}
	p.set(func(p *fakeProcess) { p.held += 26 * mib }) // the pool booked the 26 MiB
	g.Step()
	require.NoError(t, <-admitted)
	assert.Equal(t, []int64{4 * mib}, p.targets, "the guard spilled what the waiting borrow lacked")
	st := g.Stats()
	assert.Equal(t, int64(1), st.AdmissionWaits)
	assert.Equal(t, int64(0), st.AdmittedShort)
	assert.Equal(t, int64(4*mib), st.SpilledForBorrows)
	assert.Equal(t, int64(0), st.Episodes, "the headroom never fell under the reserve")

	p.set(func(p *fakeProcess) { p.spillable = 0; p.held += 4 * mib })
	go func() { admitted <- g.Admit(100 * mib) }()
	require.Eventually(t, func() bool { return clock.timersMade() == 2 }, 5*time.Second, time.Millisecond) // the first wait's, unfired, and this one's
	g.Step()
	require.NoError(t, <-admitted, "nothing native left to spill: admitted at once, never refused")
	st = g.Stats()
	assert.Equal(t, int64(2), st.AdmissionWaits)
	assert.Equal(t, int64(1), st.AdmittedShort)
}

// AdmitNow, for growth its consumer can do without, answers at once with
// Admit's check: room (26 MiB here, pending bytes counted) admits; no room
// refuses, with nothing waiting, nothing spilled, no sample asked for and
// nothing left pending. Before the first sample and without a limit it
// admits.
func TestAnOptionalBorrowWithoutRoomIsRefusedAtOnce(t *testing.T) {
	p, g, _, clock := newPod(t)
	require.NoError(t, g.AdmitNow(1<<40), "before the first sample, everything is admitted")
	g.Step()
	require.NoError(t, g.AdmitNow(20*mib))
	err := g.AdmitNow(7 * mib) // 20 MiB admitted since the sample: 6 MiB of room left
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the pod guard keeps 32.0 MB free")
	require.NoError(t, g.AdmitNow(6*mib), "the refused bytes were not left pending")
	require.Error(t, g.AdmitNow(1))
	assert.Zero(t, clock.timersMade(), "nothing waited")
	assert.Empty(t, p.targets, "nothing spilled")
	st := g.Stats()
	assert.Equal(t, int64(2), st.RefusedNow)
	assert.Zero(t, st.AdmissionWaits)
	assert.Zero(t, st.AdmittedShort)

	p.set(func(p *fakeProcess) { p.limit = -1 })
	g.Step()
	require.NoError(t, g.AdmitNow(1<<40), "without a limit, everything is admitted")
}

// Without a limit the guard stands by: it admits everything and never
// reacts.
func TestWithoutALimitTheGuardStandsBy(t *testing.T) {
	p, g, _, _ := newPod(t)
	p.set(func(p *fakeProcess) { p.limit = -1; p.jvm = 5000 * mib })
	s := g.Step()
	require.NoError(t, g.Admit(1<<40))
	assert.False(t, g.Stats().Active)
	assert.Empty(t, p.targets)
	assert.Equal(t, 200*time.Millisecond, guard.Config{Reserve: 32 * mib}.Period(s))
}

// A burst outside native memory: the JVM grows by 150 MiB, the headroom
// (1024 − 1050) is gone, and the guard makes native memory give way by the
// deficit and a quarter reserve more. The episode records when it started,
// the reaction time, who spilled and what grew; it ends at the first
// sample with the reserve free, and the ballast goes back to Spark once
// the headroom is two reserves.
func TestABurstOutsideNativeMemoryMakesNativeMemoryGiveWayAndTheBallastComesBack(t *testing.T) {
	p, g, _, clock := newPod(t)
	g.Step()
	assert.Empty(t, p.targets, "no pressure: no reaction")

	p.set(func(p *fakeProcess) { p.jvm += 150 * mib; p.spillDelay = 3 * time.Millisecond })
	start := clock.Now()
	s := g.Step()
	require.Len(t, p.targets, 1)
	assert.Equal(t, int64(32*mib+16*mib+26*mib), p.targets[0], "the headroom is −26 MiB: a reserve and a half more")
	assert.GreaterOrEqual(t, s.Headroom(), int64(32*mib), "the sample after the reaction sees the reserve free")
	eps := g.Episodes()
	require.Len(t, eps, 1)
	e := eps[0]
	assert.True(t, e.Open())
	assert.Equal(t, start, e.Start)
	assert.Equal(t, 3*time.Millisecond, e.Reaction)
	assert.Equal(t, int64(74*mib), e.Spilled)
	assert.Equal(t, []guard.Spill{{Consumer: "sorter", Bytes: 74 * mib}}, e.Spills)
	assert.Equal(t, int64(700*mib), e.StartNonNative)
	assert.Equal(t, int64(850*mib), e.PeakNonNative)
	assert.Equal(t, int64(74*mib), g.Stats().Ballast)

	clock.advance(5 * time.Millisecond)
	g.Step()
	e = g.Episodes()[0]
	require.False(t, e.Open(), "the reserve is free: the episode ends")
	assert.Equal(t, 8*time.Millisecond, e.Recovery(clock.Now()))
	assert.Equal(t, int64(0), p.released, "headroom 32.5 MiB < two reserves: the ballast stays")

	p.set(func(p *fakeProcess) { p.jvm -= 150 * mib }) // the burst is over
	g.Step()
	assert.Equal(t, int64(74*mib), p.released, "the ballast went back to Spark")
	st := g.Stats()
	assert.Equal(t, int64(1), st.Episodes)
	assert.Equal(t, int64(74*mib), st.Spilled)
	assert.Equal(t, int64(74*mib), st.Released)
	assert.Equal(t, 3*time.Millisecond, st.LastReaction)
}

// When native memory has nothing left to give, the guard returns the Go
// runtime's idle heap and trims the C allocator (at most every 100 ms while
// nothing spills), and says once per episode that it leaves the decision to
// the kernel: it never fails anything.
func TestWhenNothingNativeIsLeftTheGuardSaysSoOncePerEpisode(t *testing.T) {
	p, g, logs, clock := newPod(t)
	p.set(func(p *fakeProcess) { p.spillable = 0; p.goIdle = 4 * mib; p.jvm += 200 * mib })
	for range 5 {
		clock.advance(time.Millisecond)
		g.Step()
	}
	assert.Equal(t, 1, logs.count("WARN pod guard: nothing native left to give; the kernel decides"))
	e := g.Episodes()[0]
	assert.True(t, e.NothingLeft)
	assert.Equal(t, int64(4*mib), e.GoFreed, "the idle Go heap went back")
	assert.Equal(t, 1, e.Trims, "with nothing spilled, the runtimes are asked at most every 100 ms")
	clock.advance(100 * time.Millisecond)
	g.Step()
	assert.Equal(t, 2, g.Episodes()[0].Trims)
	assert.Equal(t, time.Duration(-1), e.Reaction)

	p.set(func(p *fakeProcess) { p.jvm -= 200 * mib })
	g.Step()
	p.set(func(p *fakeProcess) { p.jvm += 200 * mib })
	g.Step()
	assert.Equal(t, 2, logs.count("WARN pod guard: nothing native left to give; the kernel decides"), "a new episode says it again")
	assert.Len(t, g.Episodes(), 2)
}

// Spill files' dirty pages are charged to the memory group until written,
// and the kernel writes them on its own only after about 30 s. Near the
// limit (headroom under four reserves) the guard has them written as soon as
// a quarter reserve of them is dirty, before they eat the reserve; far from
// it, and with fewer of them, it leaves them to the kernel.
func TestNearTheLimitSpillFilesAreWrittenBackBeforeTheHeadroomIsShort(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	p := &fakeProcess{clock: clock, limit: 1024 * mib, jvm: 600 * mib, native: 100 * mib, held: 100 * mib}
	written := make(chan int64, 4)
	rt := p.runtime()
	rt.Writeback = func() {
		p.mu.Lock()
		n := p.dirty
		p.dirty = 0
		p.mu.Unlock()
		written <- n
	}
	g := guard.New(guard.Config{Reserve: 32 * mib}, p, p, rt, clock, slog.New(&logRecorder{}))

	p.set(func(p *fakeProcess) { p.dirty = 100 * mib }) // headroom 224 MiB: far from the limit
	g.Step()
	assert.Zero(t, g.Stats().Writebacks, "with the headroom at four reserves or more, the kernel's schedule stands")

	p.set(func(p *fakeProcess) { p.jvm, p.dirty = 850*mib, 7*mib }) // headroom 67 MiB
	g.Step()
	assert.Zero(t, g.Stats().Writebacks, "under a quarter reserve of dirty pages, nothing is written")

	p.set(func(p *fakeProcess) { p.dirty = 40 * mib }) // headroom 34 MiB: near, but no episode yet
	s := g.Step()
	require.Greater(t, s.Headroom(), int64(32*mib))
	select {
	case n := <-written:
		assert.Equal(t, int64(40*mib), n, "near the limit the dirty pages are written before the headroom is short")
	case <-time.After(10 * time.Second):
		t.Fatal("near the limit, no writeback started before the headroom was short")
	}
	assert.Equal(t, int64(1), g.Stats().Writebacks)
	assert.Zero(t, g.Stats().Episodes)
}

// The sampling period shrinks with the headroom.
func TestThePeriodShrinksWithTheHeadroom(t *testing.T) {
	c := guard.Config{Reserve: 32 * mib}
	at := func(headroom int64) time.Duration {
		return c.Period(guard.Sample{Limit: 1024 * mib, Unreclaimable: 1024*mib - headroom})
	}
	assert.Equal(t, 200*time.Millisecond, at(200*mib))
	assert.Equal(t, 50*time.Millisecond, at(100*mib))
	assert.Equal(t, 5*time.Millisecond, at(40*mib))
	assert.Equal(t, 5*time.Millisecond, at(-10*mib))
}

// The default reserve is 32 MiB, or 2% of a large limit.
func TestDefaultReserve(t *testing.T) {
	assert.Equal(t, int64(32*mib), guard.DefaultReserve(1300*mib))
	assert.Equal(t, int64(16<<30/50), guard.DefaultReserve(16<<30))
}

// A source that fails leaves the guard waiting for the next sample; Admit
// keeps the last good one.
func TestAFailedReadChangesNothing(t *testing.T) {
	p, g, _, _ := newPod(t)
	g.Step()
	p.set(func(p *fakeProcess) { p.failRead = true; p.jvm += 500 * mib })
	g.Step()
	assert.Empty(t, p.targets)
	require.NoError(t, g.Admit(mib))
}

// Admit runs on many goroutines at once: together they never pass the
// room a sample leaves at once (run under -race). The room here is 26 MiB;
// 64 goroutines ask for 1 MiB each: 26 are admitted, the other 38 wait, and
// their waits running out admits them.
func TestConcurrentBorrowsNeverPassTheRoomTogether(t *testing.T) {
	_, g, _, clock := newPod(t)
	g.Step()
	var admitted atomic.Int64
	var eg errgroup.Group
	for range 64 {
		eg.Go(func() error {
			err := g.Admit(mib)
			admitted.Add(1)
			return err
		})
	}
	require.Eventually(t, func() bool { return admitted.Load() == 26 && clock.timersMade() == 38 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, int64(26), admitted.Load(), "no more before a sample or the end of a wait")
	assert.Equal(t, 38, clock.fire())
	require.NoError(t, eg.Wait())
	assert.Equal(t, int64(64), admitted.Load())
	assert.Equal(t, int64(38), g.Stats().AdmittedShort)
}

// A borrow made on the goroutine stepping the guard (a spill for the guard
// that grows its own pool) is admitted at once: nothing else would make
// room while it waited.
func TestABorrowInsideTheGuardsOwnSpillDoesNotWait(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	p := &fakeProcess{clock: clock, limit: 1024 * mib, jvm: 700 * mib, native: 200 * mib, held: 250 * mib, spillable: 200 * mib}
	var g *guard.Guard
	var inside error
	spilling := &growingSpill{fakeProcess: p, grow: func() { inside = g.Admit(100 * mib) }}
	g = guard.New(guard.Config{Reserve: 32 * mib}, p, spilling, p.runtime(), clock, slog.New(slog.DiscardHandler))
	g.Step()
	p.set(func(p *fakeProcess) { p.jvm += 150 * mib })
	g.Step()
	require.NoError(t, inside)
	assert.Equal(t, int64(1), g.Stats().AdmittedShort)
	assert.Zero(t, clock.timersMade())
}

// growingSpill is a native side whose spill borrows (calls grow) first.
type growingSpill struct {
	*fakeProcess
	grow func()
}

func (s *growingSpill) SpillToBallast(target int64) (int64, []guard.Spill) {
	s.grow()
	return s.fakeProcess.SpillToBallast(target)
}

// Start and Stop: the loop runs on the real clock and ends without
// leaving a goroutine behind; Stop twice, and Stop of a guard never
// started, return at once.
func TestStartAndStop(t *testing.T) {
	clock := &fakeClock{now: time.Now()}
	p := &fakeProcess{clock: clock, limit: 1024 * mib, jvm: 100 * mib}
	g := guard.New(guard.Config{Reserve: 32 * mib}, p, p, guard.Runtime{}, nil, slog.New(slog.DiscardHandler))
	g.Start()
	g.Wake()
	require.Eventually(t, func() bool { return g.Stats().Samples >= 1 }, 5*time.Second, time.Millisecond)
	g.Stop()
	g.Stop()
	guard.New(guard.Config{}, p, p, guard.Runtime{}, nil, nil).Stop()
}
