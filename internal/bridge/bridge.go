package bridge

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nativepool/nativepool/internal/writeback"
	"github.com/nativepool/nativepool/pool"
	"github.com/nativepool/nativepool/taskshared"
)

// topConsumers is how many consumers a refusal names (DataFusion's
// TrackConsumersPool default in Comet is 10).
const topConsumers = 10

// Bridge is the pure-Go core behind the natives of jni.Natives: the pool
// and reservation handle tables, the task-shared registry, the settings of
// configure0, and the process-wide counters. The exports in jni/exports.go only
// convert JNI values, call a Bridge method, and throw what it returns; a
// Bridge needs no JVM, so tests drive it with fake upstreams.
//
// The library keeps exactly one Bridge, the process registry (jni/exports.go):
// it is the only package-level state of this module besides pool's
// consumer-ID counter and taskshared's current-task variable.
//
// A Bridge is safe for concurrent use by any number of JVM threads; no Go
// lock is held across an upcall (acquireMemory may block in Spark's wait and
// may re-enter the Bridge on the same thread through spill → reclaimTask0). Make
// one with NewBridge; the zero Bridge is not valid.
type Bridge struct {
	pools        *HandleTable[*poolHandle]
	reservations *HandleTable[*reservationHandle]
	tasks        *HandleTable[*taskSlot] // one per open task pool (tasks.go)
	registry     *taskshared.Registry
	logger       *slog.Logger
	settings     atomic.Pointer[Settings]
	arrow        arrowState     // Arrow batches and allocators (arrow.go); zero value ready
	rts          runtimeState   // the process's own memory (goruntime.go)
	spills       spillTally     // engines' spill bytes for Spark's task metrics (spills.go)
	leaks        leakBook       // leaks at task end, every kind (leaks.go); zero value ready
	guard        guardState     // the pod guard (guard.go)
	spillDirs    writeback.Dirs // where spills write, for the guard's writeback (guard.go); zero value ready

	// mu guards the process totals. Lock order: mu, then a pool's own lock
	// (Stats); never the reverse, and never across an upcall.
	mu struct {
		sync.Mutex
		// tasks are the task pools that can still change: open, or closed
		// with reservation handles left (whose shrinks count as late
		// releases). ProcessStats sums over them.
		tasks map[*taskPool]struct{}
	}
	// retired holds the cumulative counters of pools that are closed and
	// have no open reservation handle left (they can no longer change).
	// Guarded by mu.
	retired retiredTotals
}

// retiredTotals accumulates what retired pools contributed (leaks are
// counted by Bridge.leaks). Guarded by Bridge.mu.
type retiredTotals struct {
	upstreamCalls, spillRequests, spillBytesFreed, lateReleases, spillReentries int64
	// peak is the highest Peak any pool reached, updated at retirement and
	// by ProcessStats.
	peak int64
}

// Settings are the process-wide options of configure0. They apply to pools
// opened after they are set; pools already open keep theirs. The zero
// Settings log nothing and watch no threshold.
type Settings struct {
	// Logging wraps every new pool in pool.NewLogging: one slog record per
	// pool operation.
	Logging bool
	// Thresholds are levels (bytes) of a task pool's reserved bytes; an
	// upward or downward crossing logs a slog warning.
	Thresholds []int64
}

// JoinTaskPool returns a new reference to the pool of task taskAttemptID,
// which must be open (jni.JoinTaskPool, for Go engines linking the bridge
// into their own library). It fails, creating nothing, if the task has no
// open pool.
func (b *Bridge) JoinTaskPool(taskAttemptID int64) (*taskshared.Handle, error) {
	return b.registry.Acquire(taskAttemptID, func() (pool.Pool, error) {
		return nil, fmt.Errorf("JoinTaskPool(task %d): the task has no open pool (open it from Java with TaskPool first)", taskAttemptID)
	})
}

// Logger is the logger the Bridge was made with.
func (b *Bridge) Logger() *slog.Logger { return b.logger }

// NewBridge returns an empty Bridge that logs through logger (slog.Default()
// if nil) and makes Arrow allocators with arrow (the zero ArrowRuntime: no
// Arrow support, every Arrow call fails).
func NewBridge(logger *slog.Logger, arrow ArrowRuntime) *Bridge {
	if logger == nil {
		logger = slog.Default()
	}
	b := &Bridge{
		pools:        NewHandleTable[*poolHandle](tagPool),
		reservations: NewHandleTable[*reservationHandle](tagReservation),
		tasks:        NewHandleTable[*taskSlot](tagTask),
		registry:     taskshared.NewRegistry(taskshared.WithLogger(logger)),
		logger:       logger,
	}
	b.arrow.runtime = arrow
	b.guard.admission = guardAdmission{b}
	b.rts.rt = DefaultProcessRuntime()
	b.rts.baseline = -1
	b.rts.mallocRetained = -1
	b.settings.Store(&Settings{})
	b.mu.tasks = make(map[*taskPool]struct{})
	return b
}

// OwnedUpstream is a pool.Upstream holding a resource (a JVM global ref)
// that Close frees once the pool no longer calls it.
type OwnedUpstream interface {
	pool.Upstream
	Close()
}

// OwnedSpiller is a pool.Spiller holding a resource (a JVM global ref) that
// Close frees; after Close, Spill returns 0 without calling out.
type OwnedSpiller interface {
	pool.Spiller
	Close()
}

// taskPool is one task attempt's pool as the registry keeps it. It is a
// pool.Pool (forwarding to the decorated pool) with the Close the registry
// calls when the task's last handle closes: the unified pool hands back
// everything it holds, the thresholds stop, and the upstream's global ref is
// released. Reservations register with top directly.
type taskPool struct {
	pool.Pool // top
	bridge    *Bridge
	taskID    int64
	top       pool.Pool    // TrackConsumers(Logging?(unified))
	unified   pool.Unified // the pool itself, for Stats, Reclaim and Close
	upstream  OwnedUpstream
	// task is the pool's task handle (tasks.go), removed by Close.
	task int64
	// logger is the Bridge's logger with the task's LogTask attribute:
	// the pool's, its Logging decorator's, its thresholds' and its Arrow
	// allocators' records name the task on whatever thread they are made.
	logger *slog.Logger
	stops  []func()
	// calls counts the Bridge calls in flight on this pool; Close waits
	// for them (callgate.go).
	calls *callGate

	// Guarded by Bridge.mu.
	closed       bool
	reservations int // open reservation handles
}

// closingError is the refusal of an acquiring call that arrives once the
// pool's close has begun: it wraps pool.ErrClosed (IllegalStateException).
func (tp *taskPool) closingError(op string, n int64, r *pool.Reservation) error {
	return fmt.Errorf("nativepool: %s(%d) on %s: the pool of task %d is closed: %w", op, n, r, tp.taskID, pool.ErrClosed)
}

// Unwrap lets pool.As reach the decorated pools.
func (tp *taskPool) Unwrap() pool.Pool { return tp.top }

// Close is called by the registry, once, on the goroutine of the last
// closePool0 of the task, without registry locks. It first removes the
// pool's task handle (a later reclaimTask0 reclaims nothing), refuses new
// acquiring calls and waits for the Bridge calls in flight on the pool (a
// tryGrow0 may be waiting in Spark's 1/2N wait on another thread: its grant
// lands in the open pool and goes back with the close, and its bytes are
// never reported as leaked; see callGate). Then it closes the unified pool
// (releasing everything it holds through releaseMemory; the pool logs a leak
// with the consumers' names, and the Bridge counts it), stops the threshold
// watches, and releases the upstream's global ref once no upcall uses it.
//
// It returns a failed final release (a *JavaException when releaseMemory
// threw), which closePool0 rethrows; not the leak, which the pool has
// logged already (the registry would log it a second time) and the Bridge
// counts.
func (tp *taskPool) Close() error {
	tp.bridge.removeTask(tp) // a spill through the task handle now reclaims nothing
	tp.calls.closeAndWait()
	tp.bridge.closeArrowOfPool(tp) // before the pool takes the reservations' bytes back
	if ballast := tp.unified.Stats().Ballast; ballast > 0 {
		// The close hands the pool's ballast back to Spark: the guard holds
		// it from there while its episode lasts.
		tp.bridge.absorbBallast(ballast)
	}
	err := tp.unified.Close()
	for _, stop := range tp.stops {
		stop()
	}
	tp.upstream.Close()
	var leak *pool.LeakError
	errors.As(err, &leak)
	tp.bridge.markClosed(tp, leak)
	return withoutLeak(err)
}

// withoutLeak is a unified pool's Close error without its *pool.LeakError.
func withoutLeak(err error) error {
	if _, ok := err.(*pool.LeakError); ok {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	var rest []error
	for _, e := range j.Unwrap() {
		if _, leak := e.(*pool.LeakError); !leak {
			rest = append(rest, e)
		}
	}
	return errors.Join(rest...)
}

// poolHandle is one openPool0 result: a reference to the task's pool.
type poolHandle struct {
	shared *taskshared.Handle
	tp     *taskPool
}

// reservationHandle is one newReservation0 result.
type reservationHandle struct {
	r       *pool.Reservation
	tp      *taskPool
	spiller OwnedSpiller // nil without a spiller
	arrow   arrowSlot    // the reservation's Arrow allocator, made on first use (arrow.go)
}

// OpenPool opens the task's pool, or joins it if the task has one open with
// the same kind, size and chunk (an error wrapping
// taskshared.ErrSpecMismatch names both configurations otherwise). It
// returns a new pool handle.
//
// Only the open that creates the pool calls newOwner, once, on the calling
// goroutine, inside the registry's create and so before any other open can
// reach the pool: it is given the pool's new task handle and returns the
// upstream the pool borrows from (the export makes the owner's global ref
// there and stores the task handle in the owner). A join, and an open that
// fails before creating, never calls it: a join makes no upstream at all.
// If newOwner fails, the task handle is removed and the open fails with its
// error.
//
// Errors: an unknown kind or a negative size or chunk wraps
// ErrInvalidArgument. On error nothing stays open.
func (b *Bridge) OpenPool(taskID int64, kind int32, poolSize, chunk int64, newOwner OwnerFactory) (int64, error) {
	if kind != KindFairUnified && kind != KindGreedyUnified {
		return 0, fmt.Errorf("nativepool: openPool(task %d): unknown pool kind %d: %w", taskID, kind, ErrInvalidArgument)
	}
	if poolSize < 0 {
		return 0, fmt.Errorf("nativepool: openPool(task %d): negative pool size %d: %w", taskID, poolSize, ErrInvalidArgument)
	}
	if chunk < 0 {
		return 0, fmt.Errorf("nativepool: openPool(task %d): negative chunk size %d: %w", taskID, chunk, ErrInvalidArgument)
	}
	spec := taskshared.Spec{Kind: kindName(kind), Size: poolSize, Chunk: chunk}
	if kind == KindGreedyUnified {
		spec.Size = 0 // ignored by greedy_unified, so not part of the agreement
	}
	shared, err := b.registry.AcquireSpec(taskID, spec, func() (pool.Pool, error) {
		return b.createTaskPool(taskID, kind, poolSize, chunk, newOwner)
	})
	if err != nil {
		return 0, err
	}
	tp := shared.Pool().(*taskPool)
	h, err := b.pools.Insert(&poolHandle{shared: shared, tp: tp})
	if err != nil {
		shared.Close()
		return 0, err
	}
	return h, nil
}

// newTaskPool builds a task's pool stack under the current settings.
func (b *Bridge) newTaskPool(taskID int64, kind int32, poolSize, chunk int64, up OwnedUpstream) *taskPool {
	set := b.settings.Load()
	logger := b.logger.With(LogTask(taskID))
	opts := []pool.UnifiedOption{
		pool.WithChunkSize(chunk),
		pool.WithName(fmt.Sprintf("task %d", taskID)),
		pool.WithLogger(logger),
		pool.WithAdmission(b.guard.admission),
	}
	var unified pool.Pool
	if kind == KindFairUnified {
		unified = pool.NewFairUnified(up, poolSize, opts...)
	} else {
		unified = pool.NewGreedyUnified(up, opts...)
	}
	u, ok := pool.As[pool.Unified](unified)
	if !ok {
		panic(fmt.Sprintf("jni: %s pool does not implement pool.Unified", unified.Name()))
	}
	inner := unified
	if set.Logging {
		inner = pool.NewLogging(inner, logger)
	}
	top := pool.NewTrackConsumers(inner, topConsumers)
	tp := &taskPool{Pool: top, bridge: b, taskID: taskID, top: top, unified: u, upstream: up, calls: newCallGate(), logger: logger}
	for _, level := range set.Thresholds {
		tp.stops = append(tp.stops, u.OnThreshold(pool.Threshold{Level: level}, func(c pool.Crossing) {
			dir := "rose to"
			if !c.Up {
				dir = "fell below"
			}
			logger.Warn("nativepool: task pool reserved bytes "+dir+" a threshold",
				"pool", c.Pool, "threshold", c.Level, "reserved", c.Reserved)
		}))
	}
	b.mu.Lock()
	b.mu.tasks[tp] = struct{}{}
	b.mu.Unlock()
	return tp
}

// markClosed records that tp's pool closed, and its leak, one per consumer
// still holding bytes (Go reservations: Java's own are recorded by Java
// before the pool closes, leaks.go); it retires tp if no reservation handle
// is left.
func (b *Bridge) markClosed(tp *taskPool, leak *pool.LeakError) {
	if leak != nil {
		for _, c := range leak.Consumers {
			b.record(Leak{TaskAttemptID: tp.taskID, Consumer: c.Name, Kind: LeakReservation, Bytes: c.Bytes}, false)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	tp.closed = true
	if tp.reservations == 0 {
		b.retireLocked(tp)
	}
}

// retireLocked folds a pool that can no longer change into the cumulative
// totals and forgets it. The caller holds b.mu (pool locks nest inside it:
// pools never call the Bridge with their own lock held).
func (b *Bridge) retireLocked(tp *taskPool) {
	delete(b.mu.tasks, tp)
	s := tp.unified.Stats()
	b.retired.upstreamCalls += s.AcquireCalls + s.ReleaseCalls
	b.retired.spillRequests += s.ReclaimRequests
	b.retired.spillBytesFreed += s.ReclaimedBytes
	b.retired.lateReleases += s.LateReleases
	b.retired.spillReentries += s.ReclaimReentries
	b.retired.peak = max(b.retired.peak, s.Peak)
}

// ClosePool releases a pool handle. The last handle of a task closes the
// pool (taskPool.Close): everything still held goes back through the
// upstream, leaks are logged with consumer names and counted, the upstream
// is released. A second close of the same handle fails with ErrStaleHandle.
// A failed final release (a *JavaException when releaseMemory threw) is
// returned by the close that closed the pool.
func (b *Bridge) ClosePool(h int64) error {
	ph, err := b.pools.Remove(h)
	if err != nil {
		return err
	}
	return ph.shared.CloseReporting()
}

// pool looks up a pool handle.
func (b *Bridge) pool(h int64) (*poolHandle, error) { return b.pools.Get(h) }

// NewReservation registers a new consumer named name in the pool of handle
// h and returns a reservation handle. spiller may be nil; a non-nil spiller
// implies canSpill and is closed when the reservation closes (or now, on
// error).
func (b *Bridge) NewReservation(h int64, name string, canSpill bool, spiller OwnedSpiller) (int64, error) {
	ph, err := b.pool(h)
	if err != nil {
		if spiller != nil {
			spiller.Close()
		}
		return 0, err
	}
	tp := ph.tp
	if !tp.calls.enterAcquire() {
		if spiller != nil {
			spiller.Close()
		}
		return 0, fmt.Errorf("nativepool: newReservation(%q) on the closed pool of task %d: %w", name, tp.taskID, pool.ErrClosed)
	}
	defer tp.calls.exit()
	b.mu.Lock()
	tp.reservations++
	b.mu.Unlock()
	c := pool.NewConsumer(name).WithCanSpill(canSpill || spiller != nil)
	if spiller != nil {
		c = c.WithSpiller(spiller)
	}
	rh := &reservationHandle{r: c.Register(tp.top), tp: tp, spiller: spiller}
	id, err := b.reservations.Insert(rh)
	if err != nil {
		_ = b.closeReservation(rh) // empty: nothing to release
		return 0, err
	}
	return id, nil
}

// reservation looks up a reservation handle.
func (b *Bridge) reservation(h int64) (*reservationHandle, error) { return b.reservations.Get(h) }

// TryGrow reserves n more bytes or returns an error and changes nothing: a
// refusal wraps pool.ErrResourcesExhausted (its text is DataFusion's, with
// the top consumers); a negative n wraps pool.ErrInvalidSize; a closed
// reservation or pool wraps pool.ErrClosed; an upcall failure is a
// *JavaException.
func (b *Bridge) TryGrow(h, n int64) error {
	rh, err := b.reservation(h)
	if err != nil {
		return err
	}
	if !rh.tp.calls.enterAcquire() {
		return rh.tp.closingError("TryGrow", n, rh.r)
	}
	defer rh.tp.calls.exit()
	return rh.r.TryGrow(n)
}

// Grow reserves n more bytes unconditionally: a short grant becomes
// overcommit, and so does a failed acquire, whose *JavaException is then
// returned (the bytes are recorded all the same, API.md). A negative n wraps
// pool.ErrInvalidSize and a closed reservation pool.ErrClosed; the
// reservation is then unchanged.
func (b *Bridge) Grow(h, n int64) error {
	rh, err := b.reservation(h)
	if err != nil {
		return err
	}
	if !rh.tp.calls.enterAcquire() {
		return rh.tp.closingError("Grow", n, rh.r)
	}
	defer rh.tp.calls.exit()
	return rh.r.GrowReporting(n)
}

// Shrink gives back n bytes. n > size or n < 0 wraps pool.ErrInvalidSize
// (with DataFusion's "Cannot free the capacity" text), a closed reservation
// pool.ErrClosed; the reservation is then unchanged. A failed release is
// returned after the shrink took effect (the pool keeps the bytes owed).
func (b *Bridge) Shrink(h, n int64) error {
	rh, err := b.reservation(h)
	if err != nil {
		return err
	}
	if rh.tp.calls.enterRelease() {
		defer rh.tp.calls.exit()
	}
	return rh.r.ShrinkReporting(n)
}

// Free gives back every byte of the reservation and returns how many, and
// a failed release as Shrink does.
func (b *Bridge) Free(h int64) (int64, error) {
	rh, err := b.reservation(h)
	if err != nil {
		return 0, err
	}
	if rh.tp.calls.enterRelease() {
		defer rh.tp.calls.exit()
	}
	return rh.r.FreeReporting()
}

// Size is the reservation's current size.
func (b *Bridge) Size(h int64) (int64, error) {
	rh, err := b.reservation(h)
	if err != nil {
		return 0, err
	}
	return rh.r.Size(), nil
}

// CloseReservation frees and closes the reservation; its handle becomes
// stale (a second close fails with ErrStaleHandle) and its spiller is
// released once no reclaim is calling it. A failed final release is
// returned after the close.
func (b *Bridge) CloseReservation(h int64) error {
	rh, err := b.reservations.Remove(h)
	if err != nil {
		return err
	}
	return b.closeReservation(rh)
}

// closeReservation closes rh's Arrow allocator and reservation and
// releases its spiller; it returns a failed final release (the close has
// happened all the same).
func (b *Bridge) closeReservation(rh *reservationHandle) error {
	if rh.tp.calls.enterRelease() {
		defer rh.tp.calls.exit()
	}
	defer func() {
		if rh.spiller != nil {
			rh.spiller.Close()
		}
		tp := rh.tp
		b.mu.Lock()
		tp.reservations--
		if tp.closed && tp.reservations == 0 {
			b.retireLocked(tp)
		}
		b.mu.Unlock()
	}()
	b.closeArrow(rh) // the allocator gives its charge back before the reservation closes
	return rh.r.CloseReporting()
}

// Reclaim is TaskPool.reclaim (Spark's spill of the task's consumer takes
// the task handle instead: ReclaimTask): it returns the pool's slack, then
// asks spillable consumers (largest first) to spill, and returns exactly
// the bytes released to Spark during the call. A closed or closing pool
// reclaims nothing (its close returns everything). A failed spiller is
// counted and skipped, and its error returned with any failed release,
// joined, after the reclaim has finished (a *JavaException when spill or
// releaseMemory threw).
func (b *Bridge) Reclaim(h, target int64) (int64, error) {
	ph, err := b.pool(h)
	if err != nil {
		return 0, err
	}
	if !ph.tp.calls.enterAcquire() {
		return 0, nil
	}
	defer ph.tp.calls.exit()
	return b.reclaim(ph.tp, target)
}

// reclaim runs tp's reclaim for Reclaim and ReclaimTask, inside tp's
// callGate. A reclaim that found nothing to spill returns idle Go heap to
// the OS; one refused because tp's spill already runs on this thread (a
// spiller growing its own pool) answers 0 at once, as Spark's spill()
// answers when there is nothing to give, and does nothing else.
func (b *Bridge) reclaim(tp *taskPool, target int64) (int64, error) {
	n, err := tp.unified.ReclaimReporting(target)
	if errors.Is(err, pool.ErrReclaimReentered) {
		return 0, nil
	}
	b.afterReclaim(n, err)
	return n, thrownByReclaim(err)
}

// thrownByReclaim is what a reclaim hands to Spark's spill() out of
// ReclaimReporting's error: every failed release, and the spillers that
// failed with a Java exception (rethrown, as API.md says). A spiller that
// failed with a Go error (an engine's spiller) was counted and logged by
// the pool and skipped; the reclaim freed what it could without it, and
// failing Spark's spill for it would fail the task.
func thrownByReclaim(err error) error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return keepUnlessGoSpiller(err)
	}
	var kept []error
	for _, e := range j.Unwrap() {
		if e = keepUnlessGoSpiller(e); e != nil {
			kept = append(kept, e)
		}
	}
	return errors.Join(kept...)
}

func keepUnlessGoSpiller(err error) error {
	var se *pool.SpillerError
	if errors.As(err, &se) && len(JavaExceptions(err)) == 0 {
		return nil
	}
	return err
}

// PoolStats returns the pool's statistics laid out as poolStats0 (poolStatFields).
func (b *Bridge) PoolStats(h int64) ([]int64, error) {
	ph, err := b.pool(h)
	if err != nil {
		return nil, err
	}
	return poolStatsArray(ph.tp.unified.Stats()), nil
}

// ConsumerPeaks returns the highest reserved bytes of every consumer the
// pool of handle h has had, by name (pool.TrackConsumers.PeaksByName): the
// per-consumer high-water marks of the executor memory ledger, read when the
// task's pool closes.
func (b *Bridge) ConsumerPeaks(h int64) (map[string]int64, error) {
	ph, err := b.pool(h)
	if err != nil {
		return nil, err
	}
	tc, ok := pool.As[*pool.TrackConsumers](ph.tp.top)
	if !ok {
		return map[string]int64{}, nil
	}
	return tc.PeaksByName(), nil
}

// EncodeConsumerPeaks lays peaks out as consumerPeaks0 returns them: one
// "name<TAB>bytes" line per consumer, largest first (ties by name), with
// tabs and line breaks in names replaced by spaces.
func EncodeConsumerPeaks(peaks map[string]int64) string {
	names := make([]string, 0, len(peaks))
	for n := range peaks {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(peaks[b], peaks[a]), cmp.Compare(a, b))
	})
	var sb strings.Builder
	for _, n := range names {
		sb.WriteString(flatField(n))
		sb.WriteByte('\t')
		sb.WriteString(strconv.FormatInt(peaks[n], 10))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// ProcessStats sums the open pools' gauges and every pool's counters. It
// is one consistent snapshot of the set of pools (each pool's own figures
// are read one pool at a time). The process memory figures are read after
// b.mu is released: they go to the kernel, the Go runtime and glibc
// (mallinfo2 locks every malloc arena), about 100 µs, and b.mu is taken
// on a task's path (opening a pool, a new reservation, a task's end).
func (b *Bridge) ProcessStats() ProcessStats {
	leaks, leaked := b.leakTotals()
	resident := b.LeakedResident()
	s := b.poolTotals(leaks, leaked, resident)
	b.processMemory(&s)
	s.Guard = b.GuardStats()
	return s
}

// poolTotals is ProcessStats' part under b.mu: the pools' sums.
func (b *Bridge) poolTotals(leaks, leaked, resident int64) ProcessStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := &b.retired
	s := ProcessStats{
		UpstreamCalls:   r.upstreamCalls,
		SpillRequests:   r.spillRequests,
		SpillBytesFreed: r.spillBytesFreed,
		LateReleases:    r.lateReleases,
		SpillReentries:  r.spillReentries,
		Leaks:           leaks,
		LeakedBytes:     leaked,
		LeakedResident:  resident,
	}
	for tp := range b.mu.tasks {
		st := tp.unified.Stats()
		if !tp.closed {
			s.LiveTasks++
			s.Reserved += st.Reserved
			s.Held += st.Held
			s.Slack += st.Slack
			s.Overcommit += st.Overcommit
		}
		s.UpstreamCalls += st.AcquireCalls + st.ReleaseCalls
		s.SpillRequests += st.ReclaimRequests
		s.SpillBytesFreed += st.ReclaimedBytes
		s.LateReleases += st.LateReleases
		s.SpillReentries += st.ReclaimReentries
		if !tp.closed {
			s.Ballast += st.Ballast
		}
		r.peak = max(r.peak, st.Peak)
	}
	s.Peak = r.peak
	return s
}

// Configure replaces the process-wide settings; pools opened afterwards use
// them. A threshold that is not positive wraps ErrInvalidArgument and
// nothing changes. Thresholds are sorted and deduplicated.
func (b *Bridge) Configure(s Settings) error {
	th := slices.Clone(s.Thresholds)
	for _, t := range th {
		if t <= 0 {
			return fmt.Errorf("nativepool: configure: threshold %d must be positive: %w", t, ErrInvalidArgument)
		}
	}
	slices.Sort(th)
	s.Thresholds = slices.Compact(th)
	b.settings.Store(&s)
	return nil
}

// Settings returns the current process-wide settings.
func (b *Bridge) Settings() Settings {
	s := *b.settings.Load()
	s.Thresholds = slices.Clone(s.Thresholds)
	return s
}

var (
	_ pool.Pool                       = (*taskPool)(nil)
	_ interface{ Close() error }      = (*taskPool)(nil)
	_ interface{ Unwrap() pool.Pool } = (*taskPool)(nil)
)
