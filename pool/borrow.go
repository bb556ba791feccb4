package pool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
)

// loan is the ledger both unified pools keep of what they borrowed from
// their Upstream, and the one place that talks to it. The pools embed a loan
// and add their admission rule (none for greedy_unified, the fair share and
// the pool total for fair_unified).
//
// The figures, all under mu:
//
//	reserved    bytes recorded for reservations, including grows still waiting for upstream
//	committed   reserved less TryGrow bookings still waiting: what Reserved reports
//	held        bytes upstream granted and has not taken back: upstream's view of the pool,
//	            including releases in flight and give-backs that failed
//	pending     bytes of in-flight grows that slack did not cover (their Acquire is running)
//	returning   bytes handed to Release calls still in flight
//	owed        bytes whose Release failed (or panicked): still charged upstream, never spendable
//	overcommit  reserved bytes upstream never granted (Grow's short grants)
//
// Whenever mu is free these hold:
//
//	slack      = held − returning − owed − (reserved − overcommit − pending) ≥ 0
//	overcommit > 0 ⇒ slack = 0            (slack repays the debt first)
//	slack ≤ 2·chunk(reserved), or a Reclaim is running (it sweeps all slack before it returns)
//	held ≤ what upstream granted − what it took back   (never over-returned)
//
// At quiescence (no call in flight) pending = returning = 0, and upstream's
// view of the pool equals held = reserved − overcommit + slack + owed.
//
// Admission never counts on bytes upstream still holds for us: a TryGrow's
// limits count reserved (so grows in flight), returning and owed against the
// pool total, and a consumer's bytes plus its shrinks' releases in flight
// against its fair share.
//
// Slack policy (configured chunk C > 0): the chunk in force is quantised by
// the pool's size, as Velox does, so a small task keeps little slack:
// chunk(r) = min(C, 1 MiB) while reserved r < 16 MiB, min(C, 4 MiB) while
// r < 64 MiB, then C. Acquires ask for the missing bytes rounded up to a
// multiple of the chunk, so a full grant leaves slack < chunk; a shrink or
// settle that leaves slack ≤ 2·chunk stays local; above that the pool
// releases down to one chunk (hysteresis: a grow/shrink pair at a chunk
// boundary never thrashes). When the pool has no consumer left, all slack
// goes back at once. With C = 0 every non-zero grow not covered by slack and
// every non-zero shrink not repaying overcommit makes exactly one upstream
// call, as Comet does.
//
// Concurrency: no lock is held across an Upstream call. Each operation books
// its intent under mu, calls upstream with mu released (Spark may block in
// wait() and may call Reclaim on this goroutine), then settles or rolls back
// under mu. A panic in Acquire (or in a Spiller reached through it), in
// Release or in a threshold callback settles the books the same way before
// it goes on to the caller: a grow is rolled back as if never asked, a
// release is kept as owed. A loan must not be copied after first use. The
// zero loan is not usable: the pool constructors call init.
type loan struct {
	meter

	up     Upstream
	kind   string // "greedy_unified" or "fair_unified"
	label  string // kind, or kind[name] when WithName was given
	chunk  int64  // the configured chunk C
	logger *slog.Logger
	fair   bool  // fair_unified: String shows size and consumers
	size   int64 // fair_unified's pool size; 0 for greedy_unified

	counters loanCounters

	mu struct {
		sync.Mutex
		// The figures of the type's doc. (Plain fields under mu, not
		// atomics: readers are rare, and locked instructions on the
		// grow/shrink pair are measurable.)
		committed, reserved, held, pending, returning, owed, overcommit int64
		// reclaiming counts running Reclaim calls; while > 0 shrinks keep
		// their slack local and the Reclaims sweep it, so each Reclaim can
		// report exactly the bytes it released.
		reclaiming int
		closed     bool
		// consumers: every consumer's bytes across all its reservations
		// (DESIGN difference 1), keyed by Consumer.ID. An entry lives while
		// the consumer has a registration or bytes recorded (a grow that
		// raced the last Close is handed back after Unregister).
		consumers map[uint64]*consumerBytes
		// last is the entry entryLocked returned last: a one-entry cache
		// in front of the map for the common run of calls by one consumer.
		last *consumerBytes
		// spillable: registered consumers with CanSpill; unspillable: bytes
		// held by consumers without it. Both feed fair_unified's share.
		spillable   int
		unspillable int64
		// share caches fair_unified's (size − unspillable) / spillable
		// while shareFresh; every change of spillable or unspillable
		// clears shareFresh (a division per TryGrow is measurable).
		share      int64
		shareFresh bool
	}
}

// consumerBytes is one consumer's entry in a loan. Guarded by loan.mu.
type consumerBytes struct {
	c     *Consumer
	bytes int64 // across all its reservations in this pool
	// returning is the part of the releases in flight that this consumer's
	// shrinks gave back: still counted against its fair share.
	returning int64
	// trying is the part of bytes booked by TryGrow calls still waiting for
	// upstream: not reserved yet, so never reported as leaked.
	trying int64
	regs   int // open registrations
}

// loanCounters are the monotonic counters of UnifiedStats, atomics so that
// the upstream helpers can count without the lock.
type loanCounters struct {
	acquireCalls, releaseCalls, shortGrants, overGrants, upstreamErrors atomic.Int64
	reclaimRequests, reclaimedBytes, spillerFailures                    atomic.Int64
	lateReleases, lateReleaseBytes, lateGrows                           atomic.Int64
}

// admitFunc is a pool's admission rule, run under loan.mu before TryGrow
// books n bytes for e's consumer. A non-nil error refuses the request.
type admitFunc func(e *consumerBytes, n int64) error

// init prepares a zero loan in place (it holds locks and atomics, so it is
// never copied) and starts its meter.
func (l *loan) init(kind string, up Upstream, opts []UnifiedOption) {
	cfg := defaultUnifiedConfig()
	for _, o := range opts {
		o(&cfg)
	}
	l.up, l.kind, l.label, l.chunk, l.logger = up, kind, kind, cfg.chunk, cfg.logger
	if cfg.name != "" {
		l.label = kind + "[" + cfg.name + "]"
	}
	if l.logger == nil {
		l.logger = slog.Default()
	}
	l.mu.consumers = make(map[uint64]*consumerBytes)
	l.meter.init(kind, l.reserved)
}

// reserved is the committed bytes: Reserved, and the meter's load (the
// meter calls it outside rise and fall, which run after mu is released).
func (l *loan) reserved() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.committed
}

// commitLocked adds delta to the committed bytes and returns the new value.
// The caller holds l.mu.
func (l *loan) commitLocked(delta int64) int64 {
	l.mu.committed += delta
	return l.mu.committed
}

// register counts one registration of c.
func (l *loan) register(c *Consumer) {
	l.mu.Lock()
	e := l.entryLocked(c)
	e.regs++
	if e.regs == 1 && c.CanSpill() {
		l.mu.spillable++
		l.mu.shareFresh = false
	}
	l.mu.Unlock()
}

// unregister drops one registration of c. When that leaves the pool with
// no consumer at all, every byte of slack goes back upstream in this call:
// an idle pool holds nothing. It never panics on a consumer it does not
// know (it may run while unwinding).
func (l *loan) unregister(c *Consumer) {
	l.mu.Lock()
	e, ok := l.mu.consumers[c.ID()]
	if !ok || e.regs == 0 {
		l.mu.Unlock()
		return
	}
	e.regs--
	if e.regs == 0 && c.CanSpill() {
		l.mu.spillable--
		l.mu.shareFresh = false
	}
	l.dropIfIdleLocked(e)
	rel := l.trimLocked()
	l.mu.Unlock()
	_ = l.giveBack(rel, nil, 0) // failures are logged inside
}

// entryLocked returns c's entry, creating it if c was never registered (a
// Comet pool panics there; we account instead, and such a consumer does not
// divide the fair share). The caller holds l.mu.
func (l *loan) entryLocked(c *Consumer) *consumerBytes {
	if e := l.mu.last; e != nil && e.c == c {
		return e
	}
	if e, ok := l.mu.consumers[c.ID()]; ok {
		l.mu.last = e
		return e
	}
	e := &consumerBytes{c: c}
	l.mu.consumers[c.ID()] = e
	l.mu.last = e
	return e
}

// lookupLocked returns c's entry, or nil. The caller holds l.mu.
func (l *loan) lookupLocked(c *Consumer) *consumerBytes {
	if e := l.mu.last; e != nil && e.c == c {
		return e
	}
	return l.mu.consumers[c.ID()]
}

// dropIfIdleLocked forgets e once it has no registration and no bytes. The
// caller holds l.mu.
func (l *loan) dropIfIdleLocked(e *consumerBytes) {
	if e.regs > 0 || e.bytes != 0 {
		return
	}
	if l.mu.consumers[e.c.ID()] == e {
		delete(l.mu.consumers, e.c.ID())
	}
	if l.mu.last == e {
		l.mu.last = nil
	}
}

// addLocked records delta bytes for e. The caller holds l.mu.
func (l *loan) addLocked(e *consumerBytes, delta int64) {
	l.mu.reserved += delta
	e.bytes += delta
	if !e.c.CanSpill() {
		l.mu.unspillable += delta
		l.mu.shareFresh = false
	}
}

// slackLocked is held − returning − owed − (reserved − overcommit −
// pending). The caller holds l.mu.
func (l *loan) slackLocked() int64 {
	return l.mu.held - l.mu.returning - l.mu.owed - (l.mu.reserved - l.mu.overcommit - l.mu.pending)
}

// Chunk quantisation by pool size (Velox's quantizedSize): small pools
// borrow, and keep as slack, small chunks.
const (
	smallPool, smallChunk   = 16 << 20, 1 << 20
	mediumPool, mediumChunk = 64 << 20, 4 << 20
)

// chunkLocked is the chunk in force at the pool's current size: see the
// loan's slack policy. The caller holds l.mu.
func (l *loan) chunkLocked() int64 {
	switch r := l.mu.reserved; {
	case r < smallPool:
		return min(l.chunk, smallChunk)
	case r < mediumPool:
		return min(l.chunk, mediumChunk)
	}
	return l.chunk
}

// roundUp rounds need up to a multiple of chunk (need itself when chunk is
// 0), saturating instead of overflowing.
func roundUp(need, chunk int64) int64 {
	if chunk <= 0 {
		return need
	}
	r := need % chunk
	if r == 0 {
		return need
	}
	if need > maxInt64-(chunk-r) {
		return need
	}
	return need + chunk - r
}

const maxInt64 = int64(^uint64(0) >> 1)

// repayLocked uses slack to repay overcommit, and reports the slack left.
// The caller holds l.mu.
func (l *loan) repayLocked() int64 {
	slack := l.slackLocked()
	if l.mu.overcommit > 0 && slack > 0 {
		x := min(slack, l.mu.overcommit)
		l.mu.overcommit -= x
		slack -= x
	}
	return slack
}

// trimLocked repays overcommit from slack and books the release of what
// the slack policy says must go: everything (slack and owed bytes) when the
// pool has no consumer left, else, above 2 chunks, everything above 1
// chunk; nothing while a Reclaim runs (it sweeps). It returns the bytes the
// caller must hand to giveBack after unlocking. The caller holds l.mu.
func (l *loan) trimLocked() int64 {
	slack := l.repayLocked()
	if l.mu.reclaiming > 0 || l.mu.closed {
		return 0
	}
	if len(l.mu.consumers) == 0 {
		return l.sweepLocked()
	}
	chunk := l.chunkLocked()
	if slack <= 2*chunk {
		return 0
	}
	return l.bookReturnLocked(slack - chunk)
}

// sweepLocked repays overcommit from slack and books the release of all
// the remaining slack and of every owed byte. The caller holds l.mu.
func (l *loan) sweepLocked() int64 {
	slack := l.repayLocked()
	owed := l.mu.owed
	l.mu.owed = 0
	return l.bookReturnLocked(slack + owed)
}

// bookReturnLocked marks n held bytes as being handed back: they stay in
// held (upstream still counts them) but are no longer slack. The caller
// holds l.mu and passes n to giveBack after unlocking.
func (l *loan) bookReturnLocked(n int64) int64 {
	l.mu.returning += n
	return n
}

// giveBack hands n bytes, booked by bookReturnLocked, back upstream (nothing
// for n ≤ 0); part of them are e's shrink, counted against e's share until
// the call settles. It is called without l.mu. On success held drops by n.
// If Release fails, upstream released nothing (the Upstream contract): the
// bytes stay held and charged as owed, never spendable slack, and the next
// sweep or Close hands them back again. A panicking Release is settled the
// same way before the panic goes on.
func (l *loan) giveBack(n int64, e *consumerBytes, part int64) error {
	if n <= 0 {
		return nil
	}
	l.counters.releaseCalls.Add(1)
	settled := false
	defer func() {
		if !settled {
			l.counters.upstreamErrors.Add(1)
			l.settleReturn(n, e, part, false)
		}
	}()
	err := l.up.Release(n)
	settled = true
	l.settleReturn(n, e, part, err == nil)
	if err != nil {
		l.counters.upstreamErrors.Add(1)
		l.logger.Error("pool: upstream Release failed; the bytes stay charged and go back at the next sweep",
			"pool", l.label, "bytes", n, "err", err)
		return fmt.Errorf("pool: %s: releasing %d bytes upstream: %w", l.label, n, err)
	}
	return nil
}

// settleReturn ends a giveBack of n bytes.
func (l *loan) settleReturn(n int64, e *consumerBytes, part int64, released bool) {
	l.mu.Lock()
	l.mu.returning -= n
	if e != nil {
		e.returning -= part
	}
	if released {
		l.mu.held -= n
	} else {
		l.mu.owed += n
	}
	l.mu.Unlock()
}

// acquire asks upstream for ask > 0 bytes. It is called without l.mu (the
// call may block and may re-enter Reclaim). The grant is clamped to
// [0, ask]; any excess is handed back at once. On error nothing is granted.
func (l *loan) acquire(ask int64) (int64, error) {
	l.counters.acquireCalls.Add(1)
	got, err := l.up.Acquire(ask)
	if err != nil {
		l.counters.upstreamErrors.Add(1)
		if got > 0 {
			// The contract says an error grants nothing; believing the
			// error risks a stranded grant (freed at task end), believing
			// the count risks over-returning. We keep the safe side.
			l.logger.Error("pool: upstream Acquire returned bytes with an error; treating as a zero grant",
				"pool", l.label, "asked", ask, "granted", got, "err", err)
		}
		return 0, err
	}
	if got > ask {
		over := got - ask
		l.counters.overGrants.Add(1)
		l.logger.Warn("pool: upstream granted more than asked; releasing the excess",
			"pool", l.label, "asked", ask, "granted", got)
		l.mu.Lock()
		l.mu.held += over
		rel := l.bookReturnLocked(over)
		l.mu.Unlock()
		_ = l.giveBack(rel, nil, 0) // failures are logged inside
		got = ask
	}
	if got < 0 {
		got = 0
	}
	if got < ask {
		l.counters.shortGrants.Add(1)
	}
	return got, nil
}

// grow records n bytes for r unconditionally. A short grant (or an upstream
// error, logged) becomes overcommit, repaid before anything goes back
// upstream. After Close it records nothing and counts a late grow.
func (l *loan) grow(r *Reservation, n int64) {
	if n < 0 {
		panic(fmt.Sprintf("pool: Grow(%d): negative size", n))
	}
	if n == 0 {
		return
	}
	c := r.Consumer()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		l.counters.lateGrows.Add(1)
		l.logger.Error("pool: Grow after Close; nothing recorded or borrowed",
			"pool", l.label, "consumer", c.String(), "bytes", n)
		return
	}
	e := l.entryLocked(c)
	slack := l.slackLocked()
	l.addLocked(e, n)
	now := l.commitLocked(n)
	if slack >= n {
		l.mu.Unlock()
		if l.risesPast(now) {
			l.riseUndoable(e, n, now)
		}
		return
	}
	l.growSlow(e, n, n-slack, now)
}

// growSlow borrows need bytes of Grow's n (booked and committed for e at
// now) from upstream. It is called with l.mu held and returns with it
// released. A panic in a threshold callback or in Acquire takes the grow
// back out of the books before it goes on.
func (l *loan) growSlow(e *consumerBytes, n, need, now int64) {
	chunk := l.chunkLocked()
	l.mu.pending += need
	l.mu.Unlock()

	settled := false
	defer func() {
		if !settled {
			l.mu.Lock()
			l.mu.pending -= need
			if !l.mu.closed { // else Close already zeroed the books
				l.commitLocked(-n)
				l.unbookLocked(e, n)
			}
			l.mu.Unlock()
		}
	}()
	// A Grow is committed before it is backed (it cannot fail), so the
	// meter sees it now, as Reserved does.
	l.rise(now)
	// No lock across Upstream: Acquire may block and may call Reclaim here.
	got, err := l.acquire(roundUp(need, chunk))
	settled = true
	if err != nil {
		l.logger.Warn("pool: upstream Acquire failed during Grow; recording overcommit",
			"pool", l.label, "consumer", e.c.String(), "bytes", n, "err", err)
	}

	l.mu.Lock()
	l.mu.pending -= need
	var rel int64
	if l.mu.closed {
		// Close swept the ledger (reporting n as leaked) while we waited:
		// the grant goes straight back and the grow counts as late.
		l.mu.held += got
		rel = l.bookReturnLocked(got)
		l.counters.lateGrows.Add(1)
		l.logger.Error("pool: Grow completed after Close; its grant goes back",
			"pool", l.label, "consumer", e.c.String(), "bytes", n, "granted", got)
	} else {
		l.mu.held += got
		if got < need {
			l.mu.overcommit += need - got
		}
		rel = l.trimLocked()
	}
	l.mu.Unlock()
	_ = l.giveBack(rel, nil, 0) // failures are logged inside
}

// tryGrow records n bytes for r if admit allows and upstream grants what
// is missing (plus the overcommit debt, Comet's try_acquire), or returns an
// error and leaves the reservation's bytes unchanged. A partial grant first
// repays overcommit; what remains above the slack bound goes back.
func (l *loan) tryGrow(r *Reservation, n int64, admit admitFunc) error {
	if n < 0 {
		return fmt.Errorf("pool: TryGrow(%d): negative size: %w", n, ErrInvalidSize)
	}
	c := r.Consumer()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return fmt.Errorf("pool: %s: TryGrow(%d) for %s after Close: %w", l.label, n, c, ErrClosed)
	}
	if n == 0 {
		l.mu.Unlock()
		return nil
	}
	e := l.entryLocked(c)
	if admit != nil {
		if err := admit(e, n); err != nil {
			l.dropIfIdleLocked(e)
			l.mu.Unlock()
			return err
		}
	}
	if slack := l.slackLocked(); slack >= n {
		l.addLocked(e, n)
		now := l.commitLocked(n)
		l.mu.Unlock()
		if l.risesPast(now) {
			l.riseUndoable(e, n, now)
		}
		return nil
	}
	return l.tryGrowSlow(e, n)
}

// tryGrowSlow borrows what slack does not cover of TryGrow's n bytes for e.
// It is called with l.mu held and returns with it released. A panic in
// Acquire rolls the request back before it goes on.
func (l *loan) tryGrowSlow(e *consumerBytes, n int64) error {
	// slack < n, so overcommit may be > 0 (slack is 0 then): ask for it
	// too. Only the bytes of this request are pending; the debt stays
	// overcommit, so a concurrent shrink still repays it (and whatever the
	// grant then brings beyond the debt left is surplus slack, trimmed as
	// usual: Comet's "surplus goes back"). Moving the debt into pending
	// would let such a shrink count the unbacked debt bytes as slack and
	// hand upstream more than it granted.
	debt := l.mu.overcommit
	uncovered := n - l.slackLocked()
	need := uncovered + debt
	// The bytes count against the pool's limits from now until the grow
	// settles, so concurrent admissions see them.
	l.addLocked(e, n)
	e.trying += n
	l.mu.pending += uncovered
	ask := roundUp(need, l.chunkLocked())
	l.mu.Unlock()

	settled := false
	defer func() {
		if !settled {
			l.mu.Lock()
			l.mu.pending -= uncovered
			e.trying -= n
			if !l.mu.closed {
				l.unbookLocked(e, n)
			}
			l.mu.Unlock()
		}
	}()
	// No lock across Upstream: Acquire may block and may call Reclaim here.
	got, err := l.acquire(ask)
	settled = true

	l.mu.Lock()
	l.mu.pending -= uncovered
	e.trying -= n
	l.mu.held += got
	if l.mu.closed {
		rel := l.bookReturnLocked(got)
		l.mu.Unlock()
		_ = l.giveBack(rel, nil, 0) // failures are logged inside
		return fmt.Errorf("pool: %s: TryGrow(%d) for %s: pool closed while acquiring: %w", l.label, n, e.c, ErrClosed)
	}
	if err == nil && got >= need {
		now := l.commitLocked(n)
		rel := l.trimLocked()
		l.mu.Unlock()
		_ = l.giveBack(rel, nil, 0) // failures are logged inside
		if l.risesPast(now) {
			l.riseUndoable(e, n, now)
		}
		return nil
	}
	// Roll back: the bytes leave the reservation, and whatever was granted
	// repays the debt before any of it goes back upstream.
	l.addLocked(e, -n)
	l.dropIfIdleLocked(e)
	rel := l.trimLocked()
	var out error
	if err != nil {
		out = fmt.Errorf("pool: %s: acquiring %d bytes upstream for %s: %w", l.label, ask, e.c, err)
	} else {
		out = &ExhaustedError{Msg: fmt.Sprintf(
			"Failed to acquire %d bytes for %s plus %d bytes overcommitted, only got %d bytes from upstream: %s",
			n, e.c, debt, got, l.describeLocked())}
	}
	l.mu.Unlock()
	_ = l.giveBack(rel, nil, 0) // failures are logged inside
	return out
}

// riseUndoable is the meter's slow path after e's grow of n bytes,
// committed at now (the caller checked risesPast, which inlines). If a
// threshold callback panics, the grow is taken back out of the books (its
// bytes become slack, handed back by the slack policy) before the panic
// goes on to the caller, which then never adds them to the reservation.
func (l *loan) riseUndoable(e *consumerBytes, n, now int64) {
	l.riseOrUndo(now, func() {
		l.mu.Lock()
		if l.mu.closed {
			l.mu.Unlock()
			return
		}
		l.commitLocked(-n)
		l.unbookLocked(e, n)
		rel := l.trimLocked()
		l.mu.Unlock()
		_ = l.giveBack(rel, nil, 0)
	})
}

// unbookLocked takes n bytes back off e (a grow that did not happen). The
// caller holds l.mu.
func (l *loan) unbookLocked(e *consumerBytes, n int64) {
	l.addLocked(e, -n)
	l.dropIfIdleLocked(e)
}

// shrink records that r gave back n bytes: they repay overcommit first; the
// rest become slack, released upstream above the bound (while that release
// is in flight they still count against the consumer's share and the pool
// total). Giving back more than the pool recorded for the consumer is an
// accounting bug elsewhere: it panics with Comet's wording and changes
// nothing. After Close it counts and logs a late release and forwards
// nothing (Comet #2453).
func (l *loan) shrink(r *Reservation, n int64) {
	if n <= 0 {
		if n < 0 {
			panic(fmt.Sprintf("pool: Shrink(%d): negative size", n))
		}
		return
	}
	c := r.Consumer()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		l.counters.lateReleases.Add(1)
		l.counters.lateReleaseBytes.Add(n)
		l.logger.Warn("pool: release after Close; not forwarded upstream",
			"pool", l.label, "consumer", c.String(), "bytes", n)
		return
	}
	e := l.lookupLocked(c)
	if e == nil || e.bytes < n {
		var held int64
		if e != nil {
			held = e.bytes
		}
		l.mu.Unlock()
		panic(fmt.Sprintf("Failed to release %d bytes where only %d bytes tracked for the consumer %s", n, held, c))
	}
	l.addLocked(e, -n)
	now := l.commitLocked(-n)
	l.dropIfIdleLocked(e)
	rel := l.trimLocked() // the freed bytes are slack now: they repay overcommit first
	part := min(rel, n)
	e.returning += part
	l.mu.Unlock()
	_ = l.giveBack(rel, e, part) // failures are logged inside
	l.fall(now)
}

// reclaim implements Reclaimer for both pools: slack (and owed bytes)
// first, then spillable consumers with a Spiller, largest first (bytes
// across their reservations), until target bytes went upstream. After each
// spill all slack goes upstream, so freed bytes reach upstream however small
// the spill was; that is why no minimum spill size is imposed (Gluten raises
// every request to one block because its block listener would otherwise
// keep sub-block frees local; our sweep does not). It returns exactly the
// bytes this call released upstream.
func (l *loan) reclaim(target int64) (int64, error) {
	if target < 0 {
		return 0, fmt.Errorf("pool: Reclaim(%d): negative size: %w", target, ErrInvalidSize)
	}
	l.counters.reclaimRequests.Add(1)
	if target == 0 {
		return 0, nil
	}
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return 0, nil
	}
	l.mu.reclaiming++
	rel := l.sweepLocked()
	l.mu.Unlock()
	// A panicking Spiller must not leave shrinks keeping their slack
	// forever: end the reclaim on the way out (the next trim or sweep
	// releases what this one did not; no upstream call is made while the
	// panic unwinds).
	ended := false
	defer func() {
		if !ended {
			l.mu.Lock()
			l.mu.reclaiming--
			l.mu.Unlock()
		}
	}()

	var freed int64
	var errs []error
	if err := l.giveBack(rel, nil, 0); err != nil {
		errs = append(errs, err)
	} else {
		freed += rel
	}
	if freed < target && len(errs) == 0 {
		for _, cand := range l.spillCandidates() {
			want := target - freed
			got, err := cand.sp.Spill(want)
			if err != nil || got <= 0 {
				// Freeing nothing is routine (a consumer between batches);
				// an error is not.
				l.counters.spillerFailures.Add(1)
				level := slog.LevelDebug
				if err != nil {
					level = slog.LevelWarn
				}
				l.logger.Log(context.Background(), level, "pool: spiller failed or freed nothing; skipped",
					"pool", l.label, "consumer", cand.c.String(), "target", want, "freed", got, "err", err)
			}
			l.mu.Lock()
			rel := int64(0)
			if !l.mu.closed {
				rel = l.sweepLocked()
			}
			l.mu.Unlock()
			if err := l.giveBack(rel, nil, 0); err != nil {
				errs = append(errs, err)
				break
			}
			freed += rel
			if freed >= target {
				break
			}
		}
	}
	// Final sweep and end of the reclaim, atomically: slack that shrinks on
	// other goroutines kept local meanwhile is released here.
	l.mu.Lock()
	rel = 0
	if !l.mu.closed {
		rel = l.sweepLocked()
	}
	l.mu.reclaiming--
	ended = true
	l.mu.Unlock()
	if err := l.giveBack(rel, nil, 0); err != nil {
		errs = append(errs, err)
	} else {
		freed += rel
	}
	l.counters.reclaimedBytes.Add(freed)
	return freed, errors.Join(errs...)
}

type spillCandidate struct {
	c     *Consumer
	sp    Spiller
	bytes int64
}

// spillCandidates snapshots the consumers that can be asked to spill,
// largest first (ties by ID, for determinism).
func (l *loan) spillCandidates() []spillCandidate {
	l.mu.Lock()
	out := make([]spillCandidate, 0, len(l.mu.consumers))
	for _, e := range l.mu.consumers {
		if sp := e.c.Spiller(); sp != nil && e.bytes > 0 {
			out = append(out, spillCandidate{c: e.c, sp: sp, bytes: e.bytes})
		}
	}
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b spillCandidate) int {
		if c := cmp.Compare(b.bytes, a.bytes); c != 0 {
			return c
		}
		return cmp.Compare(a.c.ID(), b.c.ID())
	})
	return out
}

// close hands everything held back upstream (but the releases still in
// flight, which settle on their own) and reports, as a *LeakError, the
// consumers whose bytes were still reserved. A second close is a no-op.
func (l *loan) close() error {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return nil
	}
	l.mu.closed = true
	var leak *LeakError
	for _, e := range l.mu.consumers {
		// A TryGrow still waiting upstream was never reserved: it fails
		// with ErrClosed, so it is no leak.
		if b := e.bytes - e.trying; b != 0 {
			if leak == nil {
				leak = &LeakError{Pool: l.label}
			}
			leak.Consumers = append(leak.Consumers, LeakedConsumer{Name: e.c.Name(), ID: e.c.ID(), Bytes: b})
			leak.Bytes += b
		}
		e.bytes = 0
	}
	l.mu.reserved, l.mu.overcommit, l.mu.unspillable, l.mu.owed = 0, 0, 0, 0
	l.mu.shareFresh = false
	l.mu.committed = 0
	rel := l.bookReturnLocked(l.mu.held - l.mu.returning)
	l.mu.Unlock()

	err := l.giveBack(rel, nil, 0)
	l.fall(0)
	if leak == nil {
		return err
	}
	leak.sort()
	l.logger.Error("pool: closed with bytes still reserved", "pool", l.label, "bytes", leak.Bytes, "leak", leak.Error())
	return errors.Join(leak, err)
}

// stats snapshots the ledger (under mu) and the counters.
func (l *loan) stats() UnifiedStats {
	l.mu.Lock()
	s := UnifiedStats{
		Reserved:   l.mu.committed,
		Held:       l.mu.held,
		Slack:      max(0, l.slackLocked()),
		Overcommit: l.mu.overcommit,
		Acquiring:  l.mu.pending,
		Returning:  l.mu.returning,
		Owed:       l.mu.owed,
	}
	l.mu.Unlock()
	s.Peak = l.Peak()
	s.AcquireCalls = l.counters.acquireCalls.Load()
	s.ReleaseCalls = l.counters.releaseCalls.Load()
	s.ShortGrants = l.counters.shortGrants.Load()
	s.OverGrants = l.counters.overGrants.Load()
	s.UpstreamErrors = l.counters.upstreamErrors.Load()
	s.ReclaimRequests = l.counters.reclaimRequests.Load()
	s.ReclaimedBytes = l.counters.reclaimedBytes.Load()
	s.SpillerFailures = l.counters.spillerFailures.Load()
	s.LateReleases = l.counters.lateReleases.Load()
	s.LateReleaseBytes = l.counters.lateReleaseBytes.Load()
	s.LateGrows = l.counters.lateGrows.Load()
	return s
}

// describeLocked renders the ledger figures shared by both String forms;
// "held" is what the pool keeps once its releases in flight have landed.
// The caller holds l.mu.
func (l *loan) describeLocked() string {
	if l.fair {
		return fmt.Sprintf("%s(pool_size: %s, used: %s, held: %s, overcommit: %s, consumers: %d)", l.label,
			HumanReadableSize(l.size), HumanReadableSize(l.mu.reserved), HumanReadableSize(l.mu.held-l.mu.returning),
			HumanReadableSize(l.mu.overcommit), len(l.mu.consumers))
	}
	return fmt.Sprintf("%s(used: %s, held: %s, overcommit: %s)", l.label,
		HumanReadableSize(l.mu.reserved), HumanReadableSize(l.mu.held-l.mu.returning), HumanReadableSize(l.mu.overcommit))
}
