package guard

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/timandy/routine"

	"github.com/nativepool/nativepool/pool"
)

// Source reads a Sample: the memory group's figures and the native side's.
type Source interface {
	Read() (Sample, error)
}

// Spill is what one consumer gave up to ballast during an episode.
type Spill struct {
	Consumer string
	Bytes    int64
}

// Native is the native side the guard makes give way: every task pool of
// the executor.
type Native interface {
	// SpillToBallast makes native consumers spill, across every task pool,
	// largest first, until target bytes were set aside as ballast (kept
	// held from Spark, not resident); it returns the bytes and who gave
	// them up.
	SpillToBallast(target int64) (freed int64, spills []Spill)
	// ReleaseBallast hands up to n bytes of ballast back to Spark and
	// returns how many went back.
	ReleaseBallast(n int64) int64
}

// OffHeap is Spark's off-heap memory as a whole, as the guard holds it: the
// memory manager every consumer of the executor borrows from (Spark's own
// sorters, aggregations and joins in off-heap mode, another engine's pools,
// nativepool's). Acquire sets aside up to n bytes of what is free as
// ballast and returns how many; it never takes so much that the executor's
// other consumers, beyond the native bytes nativepool's own pools hold of
// it (their claim and their ballast), are left less than a floor, so that
// each task can still get pages and spill into files of a useful size (a
// consumer held to a sliver spills again and again, and Spark merges all
// of a sorter's spill files at once, a read buffer each). Release hands n
// bytes of the ballast back. Neither blocks, makes a consumer spill or
// calls back into the guard: what the guard holds makes every consumer
// meet less room at its next borrow and spill then, on its own thread. The
// JVM side's implementation is one.
type OffHeap interface {
	Acquire(n, native int64) (granted int64, err error)
	// Keep takes up to n bytes of what is free as ballast, with no floor:
	// bytes nativepool's pools held as ballast a moment ago and handed
	// back to move them into the guard's hold (Guard.Gather). They served
	// no other consumer, so taking them leaves the others what they had.
	Keep(n int64) (kept int64, err error)
	Release(n int64) error
	// Free is what is free of Spark's off-heap memory now, not held by
	// anyone: what its consumers may still grow into. The guard hands its
	// ballast back only as far as the pod could take them doing so.
	Free() (int64, error)
}

// Runtime is what else the process can give back after native consumers:
// the Go runtime's idle heap and the C allocator's free memory, and Spark's
// off-heap memory as a whole, whose free bytes the guard holds while the
// headroom is short. Any field may be nil.
type Runtime struct {
	// FreeOSMemory returns the Go runtime's idle heap to the OS and
	// returns how many bytes that released.
	FreeOSMemory func() int64
	// MallocTrim returns the C allocator's free memory to the OS.
	MallocTrim func()
	// Writeback writes the dirty pages of the files spills wrote to disk
	// and drops them from the page cache, and returns when they are
	// written: a spill's freed memory leaves the memory group only once its
	// file's pages can (a memory group cannot reclaim a dirty page). It
	// runs on a goroutine of its own, one at a time.
	Writeback func()
	// OffHeap is Spark's off-heap memory as a whole (nil: none). With it,
	// once native consumers gave way, the guard holds what is free of it
	// and what is still short as ballast while the episode lasts: every
	// consumer of the executor, Spark's own and another engine's included,
	// meets no room at its next borrow and spills instead of growing.
	OffHeap OffHeap
}

// Clock is the guard's time: the real one in production, a fake in tests.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

// RealClock is the system clock.
type RealClock struct{}

// Now is time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// After is time.After.
func (RealClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Episode is one stretch of time with less headroom than the reserve: from
// the sample that saw it to the one that saw the headroom back where
// admission keeps it (a reserve and a half).
type Episode struct {
	// ID numbers episodes from 1 in the guard's life.
	ID int64
	// Start is when a sample first saw the headroom under the reserve; End
	// when one saw it back (zero while the episode lasts).
	Start, End time.Time
	// Limit and Reserve as they were at the start.
	Limit, Reserve int64
	// Unreclaimable at the start and at its highest during the episode.
	StartUnreclaimable, PeakUnreclaimable int64
	// StartNonNative is what was resident outside native memory at the last
	// sample before the episode, with the reserve free; PeakNonNative its
	// highest during the episode: what grew outside native memory.
	StartNonNative, PeakNonNative int64
	// Spilled is what native consumers gave up to ballast, and Spills who.
	Spilled int64
	Spills  []Spill
	// GoFreed is idle Go heap returned to the OS; Trims the calls to the C
	// allocator's trim; Writebacks the writebacks of dirty pages started.
	GoFreed    int64
	Trims      int
	Writebacks int
	// Reaction is the time from Start to the first native spill that freed
	// something; -1 if none did.
	Reaction time.Duration
	// OffHeapTaken is what the guard took of Spark's free off-heap memory
	// as ballast during the episode (bytes freed by any consumer, taken as
	// they became free), OffHeapPeak the most it held at once, and
	// OffHeapReaction the time from Start to the first byte taken (-1 if
	// none was).
	OffHeapTaken, OffHeapPeak int64
	OffHeapReaction           time.Duration
	// NothingLeft says that a reaction found nothing native to give, and no
	// free off-heap memory to hold, while the headroom was still short: the
	// guard then left it to the kernel.
	NothingLeft bool
}

// Open reports whether the episode still lasts.
func (e Episode) Open() bool { return e.End.IsZero() }

// Recovery is the episode's length: Start to End, or to now while it lasts.
func (e Episode) Recovery(now time.Time) time.Duration {
	if e.Open() {
		return now.Sub(e.Start)
	}
	return e.End.Sub(e.Start)
}

// Stats are the guard's figures since it started.
type Stats struct {
	// Active says whether the guard found a limit to keep.
	Active bool
	// Limit, Unreclaimable, Headroom and Ballast as of the latest sample
	// (the first three -1 while inactive); Reserve as configured.
	Limit, Unreclaimable, Headroom, Reserve, Ballast int64
	// Episodes counts episodes started; Spilled the bytes native consumers
	// gave up to ballast, SpilledForBorrows the part of it spilled to make
	// room for waiting borrows (outside episodes); Released the ballast
	// handed back to Spark.
	Episodes, Spilled, SpilledForBorrows, Released int64
	// LastReaction is the last episode's reaction time (-1 if none).
	LastReaction time.Duration
	// Samples counts samples taken; Wakes the notifications that woke the
	// guard early.
	Samples, Wakes int64
	// AdmissionWaits counts borrows that had to wait for room; AdmittedShort
	// those admitted when their wait ran out with the reserve still short.
	AdmissionWaits, AdmittedShort int64
	// RefusedNow counts optional borrows refused at once (AdmitNow).
	RefusedNow int64
	// Writebacks counts the writebacks of spill files' dirty pages started,
	// in episodes and before them (Config.WriteBack).
	Writebacks int64
	// OffHeapBallast is what the guard holds of Spark's off-heap memory
	// now, OffHeapLent the part of it lent to native pools (Lend, Gather)
	// that back their overcommit; OffHeapTaken and OffHeapReleased what it
	// took and handed back since it started, OffHeapLentBytes what it
	// lent, OffHeapGathered what it moved from pools' ballast into its
	// hold to lend (Gather; not in OffHeapTaken).
	OffHeapBallast, OffHeapLent, OffHeapTaken, OffHeapReleased, OffHeapLentBytes, OffHeapGathered int64
}

// keptEpisodes is how many past episodes the guard keeps for Episodes.
const keptEpisodes = 32

// returnInterval is the least time between two returns of the runtimes'
// free memory by reactions that spilled nothing.
const returnInterval = 100 * time.Millisecond

// Guard keeps native memory under what the process may use: it samples the
// memory group, holds back native borrows that would eat into the reserve
// until it has made room (Admit, a pool.Admission), and when the headroom
// falls under the reserve
// it makes native memory give way: spills to ballast across every task
// pool, then the Go runtime's idle heap, then the C allocator's free memory.
// The ballast goes back to Spark once the headroom is back.
//
// A Guard is safe for concurrent use: Admit runs on the pools' goroutines,
// Wake on a notifier's, and one goroutine (Start, or a test calling Step)
// drives the rest. It never fails anything by itself: a borrow waits at most
// Config.AdmitWait, and when nothing native is left to give it says so once
// per episode and leaves the decision to the kernel.
type Guard struct {
	cfg    Config
	src    Source
	native Native
	rt     Runtime
	clock  Clock
	logger *slog.Logger

	latest  atomic.Pointer[Sample]
	pending atomic.Int64 // bytes admitted since latest was read
	wake    chan struct{}
	waits   atomic.Int64
	short   atomic.Int64
	// refusedNow counts optional borrows AdmitNow refused.
	refusedNow atomic.Int64
	samples    atomic.Int64
	// roomMade is the bytes spilled for waiting borrows.
	roomMade atomic.Int64
	wakes    atomic.Int64
	// next is closed when the next sample is published (and replaced):
	// what waiting borrows wait on. Only the stepping goroutine replaces it.
	next atomic.Pointer[chan struct{}]
	// stepping is the goroutine running Step (0: none): a borrow made on it
	// (a spill for the guard growing its pool) cannot wait for the guard.
	stepping atomic.Uint64
	// exhausted says that the last reaction found nothing native to give:
	// a waiting borrow then has nothing to wait for.
	exhausted atomic.Bool
	// waiting is the bytes of the borrows waiting for room: a step makes
	// room for them.
	waiting atomic.Int64
	// writing says that a writeback of dirty pages runs; writebacks counts
	// those started.
	writing    atomic.Bool
	writebacks atomic.Int64
	// offHeapMu serialises the calls to Runtime.OffHeap that change what
	// the guard holds (the driving goroutine's and Stop's) and the loans
	// (Lend, Gather), so that offHeapHeld is always what the OffHeap side
	// holds for the guard and never less than offHeapLent. A pool calls
	// Lend and Gather without its lock (Gather releases the pools' ballast
	// before it takes offHeapMu), and Repay, under it, takes no lock: so
	// offHeapMu is never held while a pool's lock is waited for.
	offHeapMu sync.Mutex
	// offHeapHeld is what the guard holds of Spark's off-heap memory
	// (Runtime.OffHeap); written under offHeapMu, read without it.
	offHeapHeld atomic.Int64
	// offHeapLent is the part of offHeapHeld that backs native pools'
	// overcommit (Lend, until Repay): held, but not handed back.
	offHeapLent      atomic.Int64
	offHeapLentBytes atomic.Int64
	offHeapGathered  atomic.Int64
	// offHeapTarget is what the guard means to hold of Spark's off-heap
	// memory while the episode lasts (0 outside one): set when the episode
	// opens to what is held and free, plus what is still short once native
	// consumers gave way, raised by what is short later beyond what the
	// consumers still owe of it, and by the ballast of pools that close
	// meanwhile (Absorb). Written by the driving goroutine, and by Absorb.
	offHeapTarget   atomic.Int64
	offHeapTaken    atomic.Int64
	offHeapReleased atomic.Int64
	// offHeapLogged says that a failure of Runtime.OffHeap was logged once.
	offHeapLogged atomic.Bool

	// The driving goroutine's state, and what Stats and Episodes read.
	mu struct {
		sync.Mutex
		episodes []Episode // the last keptEpisodes, oldest first; the last may be open
		nextID   int64
		count    int64
		spilled  int64
		released int64
		warned   bool // the open episode's "nothing left" was logged
		// calm is what was resident outside native memory at the last sample
		// with the reserve free (-1 before any): an episode's baseline.
		calm int64
		// lastReturn is when a reaction last made the runtimes give memory
		// back.
		lastReturn time.Time
	}

	started  atomic.Bool
	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// New returns a guard with policy cfg over src and native. A nil clock is
// the real one; a nil logger is slog.Default().
func New(cfg Config, src Source, native Native, rt Runtime, clock Clock, logger *slog.Logger) *Guard {
	if clock == nil {
		clock = RealClock{}
	}
	if logger == nil {
		logger = slog.Default()
	}
	g := &Guard{
		cfg: cfg, src: src, native: native, rt: rt, clock: clock, logger: logger,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	g.mu.calm = -1
	ch := make(chan struct{})
	g.next.Store(&ch)
	return g
}

// nextSample returns a channel closed when the next sample is published.
func (g *Guard) nextSample() <-chan struct{} { return *g.next.Load() }

// published wakes the borrows waiting for a sample.
func (g *Guard) published() {
	ch := make(chan struct{})
	close(*g.next.Swap(&ch))
}

var _ pool.Admission = (*Guard)(nil)

// Admit implements pool.Admission: a native borrow of n bytes is admitted
// at once while native memory's footprint after it, plus what is resident
// outside native memory as of the latest sample, leaves the reserve free.
// Bytes admitted since that sample count too, so a burst of borrows between
// two samples cannot all pass. Otherwise the borrow waits: the guard is
// woken to react (native consumers spill, the borrower's included, largest
// first), and the borrow is admitted at the first sample that has room for
// it, or when Config.AdmitWait runs out — it is never refused, since a
// refusal fails the task of a consumer that cannot spill at that moment (a
// sort merging its runs), and the guard never fails a task. Before the
// first sample, without a limit, and on the guard's own goroutine (a
// spill for the guard that grows its pool), everything is admitted at once.
func (g *Guard) Admit(n int64) error {
	var deadline <-chan time.Time
	for {
		next := g.nextSample() // before the check: a sample published after it wakes us
		if g.tryAdmit(n) == nil {
			return nil
		}
		// No room. Nothing to wait for on the guard's own goroutine, or when
		// its last reaction found nothing native to give.
		if g.stepping.Load() == routine.Goid() || (deadline != nil && g.exhausted.Load()) {
			g.short.Add(1)
			return nil // still counted in pending
		}
		g.pending.Add(-n)
		if deadline == nil {
			g.waits.Add(1)
			g.waiting.Add(n)
			defer g.waiting.Add(-n)
			deadline = g.clock.After(g.cfg.admitWait())
			g.Wake()
		}
		select {
		case <-next:
		case <-deadline:
			g.short.Add(1)
			g.pending.Add(n)
			return nil
		case <-g.stop:
			g.pending.Add(n)
			return nil
		}
	}
}

var _ pool.ImmediateAdmission = (*Guard)(nil)

// AdmitNow implements pool.ImmediateAdmission: Admit's check for a borrow
// its consumer can do without (pool.Reservation.WithoutWaiting). Where
// Admit would wait it refuses at once, and it neither wakes the guard nor
// makes anything spill: room made for growth that could have been done
// without would be memory taken from the consumers that cannot. Before the
// first sample and without a limit it admits.
func (g *Guard) AdmitNow(n int64) error {
	if err := g.tryAdmit(n); err != nil {
		g.pending.Add(-n)
		g.refusedNow.Add(1)
		return err
	}
	return nil
}

// tryAdmit is the check Admit and AdmitNow share: n is counted in pending
// and checked, with the bytes admitted before it, against the latest
// sample. It returns nil when n fits or there is no sample yet (and then
// counts nothing); on a refusal n stays counted, and the caller takes it
// back or keeps it.
func (g *Guard) tryAdmit(n int64) error {
	s := g.latest.Load()
	if s == nil {
		return nil
	}
	pending := g.pending.Add(n)
	return g.cfg.Admit(*s, pending-n, n)
}

// Wake makes the driving goroutine sample now (a memory notification came).
func (g *Guard) Wake() {
	g.wakes.Add(1)
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// Start runs the guard on a goroutine of its own until Stop; a second Start
// does nothing.
func (g *Guard) Start() {
	if !g.started.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer close(g.done)
		for {
			s := g.Step()
			select {
			case <-g.clock.After(g.cfg.Period(s)):
			case <-g.wake:
			case <-g.stop:
				return
			}
		}
	}()
}

// Stop ends the goroutine Start began and waits for it (one step at most),
// then hands back what the guard held of Spark's off-heap memory. The
// ballast the pools keep goes back with them as they close, or when a later
// guard releases it. Idempotent; a guard never started may be stopped; a
// test stepping the guard itself must not step it during Stop.
func (g *Guard) Stop() {
	g.stopOnce.Do(func() { close(g.stop) })
	if g.started.Load() {
		<-g.done
	}
	g.offHeapLent.Store(0) // the pools' loans go unbacked: nothing is held any more
	g.releaseOffHeap(g.offHeapHeld.Load())
}

// Step samples once and reacts: it is the driving goroutine's body, and
// what a test calls with a fake clock and source. It returns the sample it
// acted on (the last one it took).
func (g *Guard) Step() Sample {
	g.stepping.Store(routine.Goid())
	defer g.stepping.Store(0)
	s, ok := g.sample()
	if !ok {
		return Sample{Limit: -1}
	}
	if g.rt.OffHeap != nil && g.offHeapHeld.Load() > 0 {
		s.OffHeapFree = g.offHeapFree()
	}
	// Spill files' dirty pages go to disk near the limit, before they eat
	// the headroom as well as once they have: one writeback per sample.
	wroteBack := g.writeBack(s)
	if deficit := g.cfg.Deficit(s); deficit > 0 {
		s = g.react(s, deficit, wroteBack)
	} else {
		// An episode ends once the headroom is back where admission keeps
		// it (a reserve and a half), so that a headroom hovering at the
		// reserve is one episode, not many; with Spark's off-heap memory
		// held, once it would stay there even if Spark's consumers grew
		// into everything free of it (OffHeapFree), so that what they gave
		// up is not borrowed back meanwhile.
		if s.Limit < 0 || s.Headroom() >= g.cfg.Reserve+g.cfg.band()+s.OffHeapFree {
			g.endEpisode(s)
		} else if g.updateOpen(s) {
			// While the episode lasts, what any consumer frees is held too.
			took := g.holdOffHeap(s)
			s.OffHeapBallast = g.offHeapHeld.Load() - g.offHeapLent.Load()
			s.OffHeapFree = max(0, s.OffHeapFree-took)
		}
		if need := g.cfg.Shortfall(s, g.pending.Load()+g.waiting.Load()); need > 0 {
			s = g.makeRoom(s, need)
		}
	}
	if g.waiting.Load() == 0 && !g.episodeOpen() {
		// Spark's off-heap ballast first: it holds every consumer back, the
		// pools' only their own. What goes back is free for Spark's
		// consumers to grow into, which the pools' release counts.
		released := g.releaseOffHeap(g.cfg.OffHeapReleasable(s))
		s.OffHeapBallast -= released
		s.OffHeapFree += released
		if n := g.cfg.Releasable(s); n > 0 {
			released += g.native.ReleaseBallast(n)
		}
		if released > 0 {
			g.mu.Lock()
			g.mu.released += released
			g.mu.Unlock()
			g.logger.Debug("pod guard: ballast back to Spark", "bytes", released, "headroom", s.Headroom())
		}
	}
	return s
}

// holdOffHeap takes what is free of Spark's off-heap memory as ballast, up
// to the episode's target and never below the floor the OffHeap side
// keeps beyond what the native pools hold in s (Runtime.OffHeap; nothing
// without one), and returns how many bytes it took; the open episode
// counts them. A failure is logged (at WARN once) and takes nothing: the
// guard goes on without the off-heap ballast.
func (g *Guard) holdOffHeap(s Sample) int64 {
	if g.rt.OffHeap == nil {
		return 0
	}
	ask := g.offHeapTarget.Load() - g.offHeapHeld.Load()
	if ask <= 0 {
		return 0
	}
	g.offHeapMu.Lock()
	got, err := g.rt.OffHeap.Acquire(ask, s.Held)
	if err != nil {
		g.offHeapFailed("take", err)
	}
	if got <= 0 {
		g.offHeapMu.Unlock()
		return 0
	}
	held := g.offHeapHeld.Add(got)
	g.offHeapMu.Unlock()
	g.offHeapTaken.Add(got)
	now := g.clock.Now()
	g.mu.Lock()
	if n := len(g.mu.episodes); n > 0 && g.mu.episodes[n-1].Open() {
		e := &g.mu.episodes[n-1]
		e.OffHeapTaken += got
		e.OffHeapPeak = max(e.OffHeapPeak, held)
		if e.OffHeapReaction < 0 {
			e.OffHeapReaction = now.Sub(e.Start)
		}
	}
	g.mu.Unlock()
	g.logger.Debug("pod guard: Spark's free off-heap memory held as ballast", "took", got, "held", held)
	return got
}

// offHeapFree is Runtime.OffHeap's Free; on a failure (logged) it is
// counted as all the ballast held, so that nothing goes back on a guess.
func (g *Guard) offHeapFree() int64 {
	free, err := g.rt.OffHeap.Free()
	if err != nil {
		g.offHeapFailed("read", err)
		return 1 << 62
	}
	return max(free, 0)
}

// releaseOffHeap hands up to n bytes of the off-heap ballast back to Spark
// and returns how many went back (0 if the release failed: the bytes stay
// held and are tried again at the next release).
func (g *Guard) releaseOffHeap(n int64) int64 {
	if n <= 0 || g.rt.OffHeap == nil {
		return 0
	}
	g.offHeapMu.Lock()
	defer g.offHeapMu.Unlock()
	n = min(n, g.offHeapHeld.Load()-g.offHeapLent.Load())
	if n <= 0 {
		return 0
	}
	if err := g.rt.OffHeap.Release(n); err != nil {
		g.offHeapFailed("hand back", err)
		return 0
	}
	g.offHeapHeld.Add(-n)
	g.offHeapReleased.Add(n)
	return n
}

// Absorb tells the guard that n bytes of its pools' ballast went back to
// Spark with a pool that closed (a task's end): while an episode lasts, the
// guard takes them into its own off-heap hold at its next step, so that the
// memory the pool gave up is not borrowed back by the next task. Outside an
// episode, or without an off-heap hold, it does nothing.
func (g *Guard) Absorb(n int64) {
	if n <= 0 || g.rt.OffHeap == nil || !g.episodeOpen() {
		return
	}
	g.offHeapTarget.Add(n)
}

var _ pool.Lender = (*Guard)(nil)

// Lend implements pool.Lender: a native borrow that Spark granted short
// (the guard admitted it, or it is a Grow) is made up by up to n bytes of
// what the guard holds of Spark's off-heap memory, which stay held (Spark's
// books still count them) and back the pool's overcommit until it repays
// them (Repay). Native memory grows where the guard's admission lets it;
// the off-heap hold is there to hold Spark's other consumers back, not to
// starve native ones, which Spark's per-task limits would while the hold
// lasts. Without an off-heap hold it lends nothing. It waits at most for a
// call of the off-heap side in flight (the guard's own, or a Gather's
// Keep), which holds only Spark's memory manager's lock, never a pool's.
func (g *Guard) Lend(n int64) int64 {
	if n <= 0 || g.rt.OffHeap == nil {
		return 0
	}
	g.offHeapMu.Lock() // held and lent move together
	defer g.offHeapMu.Unlock()
	k := min(n, g.offHeapHeld.Load()-g.offHeapLent.Load())
	if k <= 0 {
		return 0
	}
	g.offHeapLent.Add(k)
	g.offHeapLentBytes.Add(k)
	return k
}

var _ pool.Gatherer = (*Guard)(nil)

// Gather implements pool.Gatherer: a borrow Spark granted n bytes short is
// lent what the guard holds of Spark's off-heap memory (Lend), and for the
// rest, the open pools' ballast (bytes their consumers spilled, which Spark
// still counts against the tasks that hold them, and which the guard keeps
// from Spark while the pod is near its limit) goes back to Spark and the
// guard takes the same bytes into its own hold at once (OffHeap.Keep),
// where they back the loan. So a task whose consumer cannot spill (a merge
// needing a page) is not failed by Spark because other tasks' pools keep
// memory nobody uses: the process's memory does not grow by it, since the
// borrow was admitted and the ballast was never resident. Without an
// off-heap hold it lends nothing. It runs on the borrowing task's thread,
// without any pool's lock.
func (g *Guard) Gather(n int64) int64 {
	if n <= 0 || g.rt.OffHeap == nil {
		return 0
	}
	lent := g.Lend(n)
	if lent == n {
		return lent
	}
	released := g.native.ReleaseBallast(n - lent)
	if released <= 0 {
		return lent
	}
	// What Keep takes is at most what went back (released ≤ n − lent):
	// all of it is lent.
	g.offHeapMu.Lock()
	kept, err := g.rt.OffHeap.Keep(released)
	if err != nil {
		g.offHeapFailed("keep", err)
	}
	kept = max(kept, 0)
	g.offHeapHeld.Add(kept)
	g.offHeapLent.Add(kept)
	g.offHeapMu.Unlock()
	g.offHeapLentBytes.Add(kept)
	g.offHeapGathered.Add(kept)
	g.mu.Lock()
	g.mu.released += released
	g.mu.Unlock()
	g.logger.Debug("pod guard: pools' ballast gathered to lend to a borrow Spark granted short",
		"short", n, "lentOfHold", lent, "released", released, "kept", kept)
	return lent + kept
}

// Repay implements pool.Lender: n bytes of loans are no longer used by the
// pool that borrowed them, and may go back to Spark with the rest of the
// hold. It does not block.
func (g *Guard) Repay(n int64) {
	for {
		lent := g.offHeapLent.Load()
		if g.offHeapLent.CompareAndSwap(lent, max(0, lent-n)) {
			return
		}
	}
}

// offHeapFailed logs a failure of Runtime.OffHeap: at WARN the first time,
// at DEBUG after that.
func (g *Guard) offHeapFailed(what string, err error) {
	level := slog.LevelDebug
	if g.offHeapLogged.CompareAndSwap(false, true) {
		level = slog.LevelWarn
	}
	g.logger.Log(context.Background(), level, "pod guard: cannot "+what+" Spark's off-heap ballast", "err", err)
}

// sample reads and publishes a sample for Admit.
func (g *Guard) sample() (Sample, bool) {
	s, err := g.src.Read()
	if err != nil {
		g.logger.Debug("pod guard: no sample", "err", err)
		return Sample{}, false
	}
	s.OffHeapBallast = g.offHeapHeld.Load() - g.offHeapLent.Load()
	g.samples.Add(1)
	g.latest.Store(&s)
	g.pending.Store(0)
	g.published()
	return s, true
}

// gaveWay is what one giveWay did.
type gaveWay struct {
	at      time.Time // when the spills returned
	freed   int64
	spills  []Spill
	goFreed int64
	trimmed bool
}

// giveWay makes native memory give way for target bytes: native consumers
// spill into ballast, then the runtimes give back what is free. It returns
// the sample it took after (s if it could not take one).
func (g *Guard) giveWay(s Sample, target int64) (Sample, gaveWay) {
	var w gaveWay
	w.freed, w.spills = g.native.SpillToBallast(target)
	w.at = g.clock.Now()
	// What consumers freed leaves the process only when the runtimes give
	// it back: the Go heap after a collection, malloc's arenas after a trim.
	// Both run after every spill that freed something, and otherwise (the
	// headroom still short, with garbage perhaps left) at most every
	// returnInterval: a full collection is not free.
	g.mu.Lock()
	ret := w.freed > 0 || g.mu.lastReturn.IsZero() || w.at.Sub(g.mu.lastReturn) >= returnInterval
	if ret {
		g.mu.lastReturn = w.at
	}
	g.mu.spilled += w.freed
	g.mu.Unlock()
	if ret {
		if g.rt.FreeOSMemory != nil {
			w.goFreed = g.rt.FreeOSMemory()
		}
		if g.rt.MallocTrim != nil {
			g.rt.MallocTrim()
			w.trimmed = true
		}
	}
	g.exhausted.Store(w.freed == 0)
	after, ok := g.sample()
	if !ok {
		after = s
	}
	return after, w
}

// writeBack starts a writeback of the spill files' dirty pages on a
// goroutine of its own when s has enough of them near the limit
// (Config.WriteBack) and none runs, and says whether it started one.
func (g *Guard) writeBack(s Sample) bool {
	if g.rt.Writeback == nil || !g.cfg.WriteBack(s) || !g.writing.CompareAndSwap(false, true) {
		return false
	}
	g.writebacks.Add(1)
	go func() {
		defer g.writing.Store(false)
		g.rt.Writeback()
	}()
	return true
}

// makeRoom makes native memory give way for need bytes that waiting
// borrows lack, with the headroom over the reserve (no episode): the
// largest consumers spill, the borrowers included, as a refused borrow
// would have made its consumer spill.
func (g *Guard) makeRoom(s Sample, need int64) Sample {
	after, w := g.giveWay(s, need)
	g.roomMade.Add(w.freed)
	if w.freed > 0 {
		g.logger.Debug("pod guard: native memory gave way for waiting borrows", "need", need,
			"spilled", w.freed, "headroom", after.Headroom())
	}
	return after
}

// react makes native memory give way for deficit bytes during the episode
// s belongs to (opening it if needed), and returns the sample it took after;
// wroteBack says that the step started a writeback, which the episode counts.
func (g *Guard) react(s Sample, deficit int64, wroteBack bool) Sample {
	g.openOrUpdate(s)
	after, w := g.giveWay(s, deficit)
	freed, spills, goFreed, trimmed, now := w.freed, w.spills, w.goFreed, w.trimmed, w.at
	// Native consumers gave way first. Where that was not enough, Spark's
	// off-heap memory: the guard holds what is free of it, so that no
	// consumer grows while the episode lasts, plus what is still short,
	// which Spark's other consumers give up at their next borrow. It is
	// raised later only by what is short beyond what they still owe, so
	// that they are held down by the shortage, not starved: a consumer held
	// far below what it needs spills again and again, and every spill writes
	// pages the memory group holds until they are on disk.
	var took int64
	if short := g.cfg.Deficit(after); g.rt.OffHeap != nil && (short > 0 || g.offHeapTarget.Load() > 0) {
		free, held := g.offHeapFree(), g.offHeapHeld.Load()
		if owed := max(0, g.offHeapTarget.Load()-held-free); short > owed {
			g.offHeapTarget.Store(held + free + short)
		}
		took = g.holdOffHeap(after)
		after.OffHeapBallast = g.offHeapHeld.Load() - g.offHeapLent.Load()
		after.OffHeapFree = max(0, free-took)
	}
	g.mu.Lock()
	e := &g.mu.episodes[len(g.mu.episodes)-1]
	if freed > 0 {
		if e.Reaction < 0 {
			e.Reaction = now.Sub(e.Start)
		}
		e.Spilled += freed
		e.Spills = mergeSpills(e.Spills, spills)
	}
	e.GoFreed += goFreed
	if trimmed {
		e.Trims++
	}
	if wroteBack {
		e.Writebacks++
	}
	stillShort := g.cfg.Deficit(after) > 0
	nothing := freed == 0 && took == 0 && stillShort
	warn := nothing && !g.mu.warned
	if warn {
		g.mu.warned = true
		e.NothingLeft = true
	}
	ep := *e
	g.mu.Unlock()
	if warn {
		msg := "pod guard: nothing native left to give; the kernel decides"
		if g.rt.OffHeap != nil {
			msg = "pod guard: nothing native left to give and no free off-heap memory to hold; the kernel decides"
		}
		g.logger.Warn(msg,
			"limit", after.Limit, "unreclaimable", after.Unreclaimable, "reserve", g.cfg.Reserve,
			"nonNative", after.NonNative(), "nonNativeAtStart", ep.StartNonNative,
			"grewOutsideNative", after.NonNative()-ep.StartNonNative, "nativeHeld", after.Held,
			"offHeapBallast", after.OffHeapBallast)
	}
	if freed > 0 {
		g.logger.Debug("pod guard: native memory gave way", "deficit", deficit, "spilled", freed,
			"goFreed", goFreed, "headroom", after.Headroom())
	}
	return after
}

// openOrUpdate opens an episode for s unless one is open, and raises the
// open one's peaks.
func (g *Guard) openOrUpdate(s Sample) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.mu.episodes)
	if n == 0 || !g.mu.episodes[n-1].Open() {
		base := g.mu.calm
		if base < 0 {
			base = s.NonNative()
		}
		g.mu.nextID++
		g.mu.count++
		g.mu.warned = false
		g.mu.episodes = append(g.mu.episodes, Episode{
			ID: g.mu.nextID, Start: s.Time, Limit: s.Limit, Reserve: g.cfg.Reserve,
			StartUnreclaimable: s.Unreclaimable, PeakUnreclaimable: s.Unreclaimable,
			StartNonNative: base, PeakNonNative: s.NonNative(), Reaction: -1, OffHeapReaction: -1,
		})
		if len(g.mu.episodes) > keptEpisodes {
			g.mu.episodes = slices.Delete(g.mu.episodes, 0, len(g.mu.episodes)-keptEpisodes)
		}
		g.logger.Debug("pod guard: headroom under the reserve", "limit", s.Limit,
			"unreclaimable", s.Unreclaimable, "headroom", s.Headroom(), "reserve", g.cfg.Reserve)
		return
	}
	e := &g.mu.episodes[n-1]
	e.PeakUnreclaimable = max(e.PeakUnreclaimable, s.Unreclaimable)
	e.PeakNonNative = max(e.PeakNonNative, s.NonNative())
}

// episodeOpen says whether an episode lasts.
func (g *Guard) episodeOpen() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.mu.episodes)
	return n > 0 && g.mu.episodes[n-1].Open()
}

// updateOpen raises the open episode's peaks, if one is open, and says
// whether one is.
func (g *Guard) updateOpen(s Sample) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := len(g.mu.episodes); n > 0 && g.mu.episodes[n-1].Open() {
		e := &g.mu.episodes[n-1]
		e.PeakUnreclaimable = max(e.PeakUnreclaimable, s.Unreclaimable)
		e.PeakNonNative = max(e.PeakNonNative, s.NonNative())
		return true
	}
	return false
}

// endEpisode closes the open episode, if any, at s: the headroom is back.
func (g *Guard) endEpisode(s Sample) {
	g.exhausted.Store(false)
	g.offHeapTarget.Store(0)
	g.mu.Lock()
	g.mu.calm = s.NonNative()
	n := len(g.mu.episodes)
	if n == 0 || !g.mu.episodes[n-1].Open() {
		g.mu.Unlock()
		return
	}
	e := &g.mu.episodes[n-1]
	e.End = s.Time
	ep := *e
	g.mu.Unlock()
	g.logger.Log(context.Background(), slog.LevelInfo, "pod guard: headroom back over the reserve",
		"episode", ep.ID, "recovery", ep.Recovery(s.Time), "spilled", ep.Spilled,
		"reaction", ep.Reaction, "offHeapTaken", ep.OffHeapTaken, "offHeapPeak", ep.OffHeapPeak,
		"offHeapReaction", ep.OffHeapReaction, "nothingLeft", ep.NothingLeft)
}

// mergeSpills adds more to a list of spills by consumer, largest first.
func mergeSpills(list, more []Spill) []Spill {
	for _, m := range more {
		found := false
		for i := range list {
			if list[i].Consumer == m.Consumer {
				list[i].Bytes += m.Bytes
				found = true
				break
			}
		}
		if !found {
			list = append(list, m)
		}
	}
	slices.SortStableFunc(list, func(a, b Spill) int {
		switch {
		case a.Bytes > b.Bytes:
			return -1
		case a.Bytes < b.Bytes:
			return 1
		}
		return 0
	})
	return list
}

// Stats returns the guard's figures.
func (g *Guard) Stats() Stats {
	st := Stats{Reserve: g.cfg.Reserve, Limit: -1, Unreclaimable: -1, Headroom: -1, LastReaction: -1}
	if s := g.latest.Load(); s != nil && s.Limit >= 0 {
		st.Active = true
		st.Limit, st.Unreclaimable, st.Headroom, st.Ballast = s.Limit, s.Unreclaimable, s.Headroom(), s.Ballast
	}
	g.mu.Lock()
	st.Episodes, st.Spilled, st.Released = g.mu.count, g.mu.spilled, g.mu.released
	st.SpilledForBorrows = g.roomMade.Load()
	if n := len(g.mu.episodes); n > 0 {
		st.LastReaction = g.mu.episodes[n-1].Reaction
	}
	g.mu.Unlock()
	st.Samples, st.Wakes = g.samples.Load(), g.wakes.Load()
	st.AdmissionWaits, st.AdmittedShort = g.waits.Load(), g.short.Load()
	st.RefusedNow = g.refusedNow.Load()
	st.Writebacks = g.writebacks.Load()
	st.OffHeapBallast, st.OffHeapTaken = g.offHeapHeld.Load(), g.offHeapTaken.Load()
	st.OffHeapReleased, st.OffHeapLent = g.offHeapReleased.Load(), g.offHeapLent.Load()
	st.OffHeapLentBytes, st.OffHeapGathered = g.offHeapLentBytes.Load(), g.offHeapGathered.Load()
	return st
}

// Episodes returns the last episodes, oldest first; the last may still
// last (Open).
func (g *Guard) Episodes() []Episode {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Episode, len(g.mu.episodes))
	for i, e := range g.mu.episodes {
		e.Spills = slices.Clone(e.Spills)
		out[i] = e
	}
	return out
}
