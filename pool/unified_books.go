package pool

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
)

// unifiedPool is both unified pools: Comet's greedy_unified
// (CometUnifiedMemoryPool) and fair_unified (CometFairMemoryPool, Comet's
// default), one type made by NewGreedyUnified or NewFairUnified. It keeps
// the books of what it borrowed from its Upstream and is the one place that
// talks to it; fair_unified adds its admission rule (admitLocked). The
// files split its work by job: this one holds the books, their invariants and
// its booking; unified_grow.go the grow and shrink paths; unified_reclaim.go
// Reclaim and Close; unified.go the constructors and the Pool surface.
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
//	ballast     bytes held and kept back on purpose (ReclaimToBallast): never spendable, never
//	            released but by ReleaseBallast, a sweep of an idle pool, or Close
//	overcommit  reserved bytes upstream never granted (Grow's short grants, and loans)
//	loaned      the part of overcommit a Lender backs (Lender.Lend): given back to it
//	            (Lender.Repay) as overcommit is repaid, the plain debt first, and at Close
//
// Whenever mu is free these hold:
//
//	slack      = held − returning − owed − ballast − (reserved − overcommit − pending) ≥ 0
//	overcommit > 0 ⇒ slack = 0            (slack repays the debt first)
//	0 ≤ loaned ≤ overcommit
//	slack ≤ 2·chunk(reserved), or a Reclaim is running (it sweeps all slack before it returns)
//	held ≤ what upstream granted − what it took back   (never over-returned)
//
// At quiescence (no call in flight) pending = returning = 0, and upstream's
// view of the pool equals held = reserved − overcommit + slack + owed + ballast.
//
// Admission never counts on bytes upstream still holds for us: a TryGrow's
// limits count reserved (so grows in flight), returning and owed against the
// pool total, and, against a consumer's fair share, its bytes plus what it
// gave back that upstream has not taken yet: the releases in flight and the
// failed (owed) releases of its shrinks and of its rolled-back grows.
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
// Concurrency: it is safe for concurrent use, and no lock is held across an
// Upstream call. Each operation books its intent under mu, calls upstream
// with mu released (Spark may block in wait() and may call Reclaim on this
// goroutine), then settles or rolls back under mu. A panic in Acquire (or in
// a Spiller reached through it), in Release or in a threshold callback
// settles the books the same way before it goes on to the caller: a grow is
// rolled back as if never asked, a release is kept as owed. A unifiedPool
// must not be copied after first use; there is no useful zero value.
type unifiedPool struct {
	meter

	up     Upstream
	kind   string // "greedy_unified" or "fair_unified"
	label  string // kind, or kind[name] when WithName was given
	chunk  int64  // the configured chunk C
	logger *slog.Logger
	// admission is the check of the process's memory a spillable
	// consumer's borrow must pass (WithAdmission), or nil. Immutable.
	admission Admission
	// admitNow is admission when it is an ImmediateAdmission (the check of
	// an optional borrow, Reservation.WithoutWaiting), else nil. Immutable.
	admitNow ImmediateAdmission
	// lender is admission when it is a Lender (what it holds back from
	// upstream is lent to a borrow upstream granted short), else nil.
	// Immutable.
	lender Lender
	// gatherer is admission when it is a Gatherer (it moves other pools'
	// ballast into what lender lends).
	gatherer Gatherer
	fair     bool  // fair_unified: String shows size and consumers
	size     int64 // fair_unified's pool size; 0 for greedy_unified

	counters unifiedCounters
	// reentryLogged is set by the first refused re-entry of Reclaim, which
	// alone is logged (see Reclaim).
	reentryLogged atomic.Bool

	mu struct {
		sync.Mutex
		// The figures of the type's doc. (Plain fields under mu, not
		// atomics: readers are rare, and locked instructions on the
		// grow/shrink pair are measurable.)
		committed, reserved, held, pending, returning, owed, overcommit, ballast int64
		// loaned is the part of overcommit the lender backs (see the figures).
		loaned int64
		// reclaimers are the running Reclaim calls, one per goroutine:
		// while there is one, shrinks keep their slack local and the
		// Reclaims sweep it, so each Reclaim can report exactly the bytes it
		// released; and a Reclaim asked on a goroutine already listed (a
		// Spiller growing its own pool, whose Acquire made upstream spill
		// this pool again) is refused instead of entered again.
		reclaimers []reclaimer
		closed     bool
		// consumers: every consumer's bytes across all its reservations
		// (docs/SEMANTICS.md, difference 1), keyed by Consumer.ID. An entry lives while
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

// consumerBytes is one consumer's entry in a unified pool. Guarded by unifiedPool.mu.
type consumerBytes struct {
	c     *Consumer
	pool  *unifiedPool // whose entry this is (registration.unified is used only by it)
	bytes int64        // across all its reservations in this pool
	// returning is the part of the releases in flight that this consumer
	// gave back (its shrinks, its rolled-back grows, and its owed bytes a
	// sweep is handing back again); owed is the part of the pool's owed
	// bytes that came from its failed releases. Both still count against
	// its fair share: upstream charges them to the pool until it has them
	// back. Σ returning ≤ the pool's returning and Σ owed ≤ its owed (an
	// entry dropped while idle takes its parts with it; the pool's figures
	// keep counting them).
	returning, owed int64
	// trying is the part of bytes booked by TryGrow calls still waiting for
	// upstream: not reserved yet, so never reported as leaked.
	trying int64
	regs   int // open registrations
}

// held is what the pool recorded for the consumer (0 for no entry). The
// caller holds unifiedPool.mu.
func (e *consumerBytes) held() int64 {
	if e == nil {
		return 0
	}
	return e.bytes
}

// unifiedCounters are the monotonic counters of UnifiedStats, atomics so that
// the upstream helpers can count without the lock.
type unifiedCounters struct {
	acquireCalls, releaseCalls, shortGrants, overGrants, upstreamErrors atomic.Int64
	reclaimRequests, reclaimedBytes, spillerFailures, reclaimReentries  atomic.Int64
	lateReleases, lateReleaseBytes, lateGrows, admissionRefusals        atomic.Int64
	ballastedBytes                                                      atomic.Int64
	loans                                                               atomic.Int64
}

// init prepares a zero pool in place (it holds locks and atomics, so it is
// never copied) and starts its meter.
func (p *unifiedPool) init(kind string, up Upstream, opts []UnifiedOption) {
	cfg := defaultUnifiedConfig()
	for _, o := range opts {
		o(&cfg)
	}
	p.up, p.kind, p.label, p.chunk, p.logger = up, kind, kind, cfg.chunk, cfg.logger
	p.admission = cfg.admission
	p.admitNow, _ = cfg.admission.(ImmediateAdmission)
	p.lender, _ = cfg.admission.(Lender)
	p.gatherer, _ = cfg.admission.(Gatherer)
	if cfg.name != "" {
		p.label = kind + "[" + cfg.name + "]"
	}
	if p.logger == nil {
		p.logger = slog.Default()
	}
	p.mu.consumers = make(map[uint64]*consumerBytes)
	p.meter.init(kind, p.Reserved)
}

// Reserved implements Pool: the committed bytes (see UnifiedStats for what
// that means while calls are in flight). It is also the meter's load, which
// the meter reads outside rise and fall (they run after mu is released).
func (p *unifiedPool) Reserved() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.committed
}

// commitLocked adds delta to the committed bytes and returns the new value.
// The caller holds p.mu.
func (p *unifiedPool) commitLocked(delta int64) int64 {
	p.mu.committed += delta
	return p.mu.committed
}

// Register implements Pool: it counts one registration of c (as spillable
// for fair_unified's share if c.CanSpill()); it never calls upstream.
func (p *unifiedPool) Register(c *Consumer) {
	p.mu.Lock()
	e := p.entryLocked(c)
	e.regs++
	if e.regs == 1 && c.CanSpill() {
		p.mu.spillable++
		p.mu.shareFresh = false
	}
	p.mu.Unlock()
}

// Unregister implements Pool: it drops one registration of c, which raises
// the other spillable consumers' share. When that leaves the pool with no
// consumer at all, every byte of slack goes back upstream in this call: an
// idle pool holds nothing. It never panics on a consumer it does not know
// (it may run while unwinding).
func (p *unifiedPool) Unregister(c *Consumer) {
	p.mu.Lock()
	e, ok := p.mu.consumers[c.ID()]
	if !ok || e.regs == 0 {
		p.mu.Unlock()
		return
	}
	e.regs--
	if e.regs == 0 && c.CanSpill() {
		p.mu.spillable--
		p.mu.shareFresh = false
	}
	p.dropIfIdleLocked(e)
	rel := p.trimLocked()
	p.mu.Unlock()
	_ = p.giveBack(rel) // failures are logged inside
}

// entryLocked returns c's entry, creating it if c was never registered (a
// Comet pool panics there; we account instead, and such a consumer does not
// divide the fair share). The caller holds p.mu.
func (p *unifiedPool) entryLocked(c *Consumer) *consumerBytes {
	if e := p.mu.last; e != nil && e.c == c {
		return e
	}
	if e, ok := p.mu.consumers[c.ID()]; ok {
		p.mu.last = e
		return e
	}
	e := &consumerBytes{c: c, pool: p}
	p.mu.consumers[c.ID()] = e
	p.mu.last = e
	return e
}

// entryOfLocked is entryLocked for r's consumer, through r's registration
// when it was made on p: a run of calls rotating through many consumers
// then pays no map lookup. The entry of a live registration is never
// dropped (regs is positive). The caller holds p.mu.
func (p *unifiedPool) entryOfLocked(r *Reservation) *consumerBytes {
	if e := r.reg.unified; e != nil && e.pool == p {
		return e
	}
	return p.entryLocked(r.Consumer())
}

// lookupOfLocked is lookupLocked for r's consumer, through r's registration
// as entryOfLocked. The caller holds p.mu.
func (p *unifiedPool) lookupOfLocked(r *Reservation) *consumerBytes {
	if e := r.reg.unified; e != nil && e.pool == p {
		return e
	}
	return p.lookupLocked(r.Consumer())
}

// entryOf returns c's entry, for Consumer.Register to keep in the
// registration it makes on p.
func (p *unifiedPool) entryOf(c *Consumer) *consumerBytes {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.consumers[c.ID()]
}

// lookupLocked returns c's entry, or nil. The caller holds p.mu.
func (p *unifiedPool) lookupLocked(c *Consumer) *consumerBytes {
	if e := p.mu.last; e != nil && e.c == c {
		return e
	}
	return p.mu.consumers[c.ID()]
}

// dropIfIdleLocked forgets e once it has no registration and no bytes. The
// caller holds p.mu.
func (p *unifiedPool) dropIfIdleLocked(e *consumerBytes) {
	if e.regs > 0 || e.bytes != 0 {
		return
	}
	if p.mu.consumers[e.c.ID()] == e {
		delete(p.mu.consumers, e.c.ID())
	}
	if p.mu.last == e {
		p.mu.last = nil
	}
}

// addLocked records delta bytes for e. The caller holds p.mu.
func (p *unifiedPool) addLocked(e *consumerBytes, delta int64) {
	p.mu.reserved += delta
	e.bytes += delta
	if !e.c.CanSpill() {
		p.mu.unspillable += delta
		p.mu.shareFresh = false
	}
}

// slackLocked is held − returning − owed − ballast − (reserved −
// overcommit − pending). The caller holds p.mu.
func (p *unifiedPool) slackLocked() int64 {
	return p.mu.held - p.mu.returning - p.mu.owed - p.mu.ballast - (p.mu.reserved - p.mu.overcommit - p.mu.pending)
}

// Chunk quantisation by pool size (Velox's quantizedSize): small pools
// borrow, and keep as slack, small chunks.
const (
	smallPool, smallChunk   = 16 << 20, 1 << 20
	mediumPool, mediumChunk = 64 << 20, 4 << 20
)

// chunkLocked is the chunk in force at the pool's current size: see the
// pool's slack policy. The caller holds p.mu.
func (p *unifiedPool) chunkLocked() int64 {
	switch r := p.mu.reserved; {
	case r < smallPool:
		return min(p.chunk, smallChunk)
	case r < mediumPool:
		return min(p.chunk, mediumChunk)
	}
	return p.chunk
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
// The caller holds p.mu.
func (p *unifiedPool) repayLocked() int64 {
	slack := p.slackLocked()
	if p.mu.overcommit > 0 && slack > 0 {
		x := min(slack, p.mu.overcommit)
		// The plain debt first: loans hold the lender's memory back, so they
		// go back as soon as the plain debt is paid.
		if paid := x - (p.mu.overcommit - p.mu.loaned); paid > 0 {
			p.mu.loaned -= paid
			p.lender.Repay(paid)
		}
		p.mu.overcommit -= x
		slack -= x
	}
	return slack
}

// recordLoanLocked books n bytes of loans (pool.Lender) that back
// overcommit just recorded. The caller holds p.mu.
func (p *unifiedPool) recordLoanLocked(n int64) {
	if n > 0 {
		p.mu.loaned += n
		p.counters.loans.Add(1)
	}
}

// trimLocked repays overcommit from slack and books the release of what
// the slack policy says must go: everything (slack and owed bytes) when the
// pool has no consumer left, else, above 2 chunks, everything above 1
// chunk; nothing while a Reclaim runs (it sweeps). It returns the bytes the
// caller must hand to giveBack after unlocking. The caller holds p.mu.
func (p *unifiedPool) trimLocked() int64 {
	slack := p.repayLocked()
	if len(p.mu.reclaimers) > 0 || p.mu.closed {
		return 0
	}
	if len(p.mu.consumers) == 0 {
		// No consumer left: an idle pool holds nothing, ballast included (it
		// only kept a consumer's bytes from others while the consumer ran).
		p.mu.ballast = 0
		rel, _ := p.sweepLocked() // no consumer left: no share to count owed bytes against
		return rel
	}
	chunk := p.chunkLocked()
	if slack <= 2*chunk {
		return 0
	}
	return p.bookReturnLocked(slack - chunk)
}

// sweepLocked repays overcommit from slack and books the release of all
// the remaining slack and of every owed byte (ballast stays: only
// ReleaseBallast, a Reclaim asked by upstream, a pool left with no
// consumer, and Close return it). The consumers' owed parts go
// into their returning, listed in parts, so that their shares count them
// until the release settles. The caller holds p.mu and passes both results
// to giveBack after unlocking.
func (p *unifiedPool) sweepLocked() (n int64, parts []returnPart) {
	slack := p.repayLocked()
	owed := p.mu.owed
	p.mu.owed = 0
	if owed > 0 {
		for _, e := range p.mu.consumers {
			if e.owed > 0 {
				parts = append(parts, returnPart{e: e, n: e.owed})
				e.returning += e.owed
				e.owed = 0
			}
		}
	}
	return p.bookReturnLocked(slack + owed), parts
}

// returnPart is the part n of a release booked by bookReturnLocked that
// consumer e gave back: counted in e.returning (so against e's fair share)
// while the release is in flight, and in e.owed if it fails.
type returnPart struct {
	e *consumerBytes
	n int64
}

// bookPartLocked counts part bytes of a release being booked as e's (see
// returnPart) and returns the part for giveBack. The caller holds p.mu.
func bookPartLocked(e *consumerBytes, part int64) returnPart {
	e.returning += part
	return returnPart{e: e, n: part}
}

// bookReturnLocked marks n held bytes as being handed back: they stay in
// held (upstream still counts them) but are no longer slack. The caller
// holds p.mu and passes n to giveBack after unlocking.
func (p *unifiedPool) bookReturnLocked(n int64) int64 {
	p.mu.returning += n
	return n
}

// Stats implements Unified: a snapshot of the books (under mu) and the counters.
func (p *unifiedPool) Stats() UnifiedStats {
	p.mu.Lock()
	s := UnifiedStats{
		Reserved:   p.mu.committed,
		Held:       p.mu.held,
		Slack:      max(0, p.slackLocked()),
		Overcommit: p.mu.overcommit,
		Acquiring:  p.mu.pending,
		Returning:  p.mu.returning,
		Owed:       p.mu.owed,
		Ballast:    p.mu.ballast,
	}
	p.mu.Unlock()
	s.Peak = p.Peak()
	s.AcquireCalls = p.counters.acquireCalls.Load()
	s.ReleaseCalls = p.counters.releaseCalls.Load()
	s.ShortGrants = p.counters.shortGrants.Load()
	s.OverGrants = p.counters.overGrants.Load()
	s.UpstreamErrors = p.counters.upstreamErrors.Load()
	s.ReclaimRequests = p.counters.reclaimRequests.Load()
	s.ReclaimedBytes = p.counters.reclaimedBytes.Load()
	s.SpillerFailures = p.counters.spillerFailures.Load()
	s.ReclaimReentries = p.counters.reclaimReentries.Load()
	s.AdmissionRefusals = p.counters.admissionRefusals.Load()
	s.BallastedBytes = p.counters.ballastedBytes.Load()
	s.Loans = p.counters.loans.Load()
	s.Loaned = p.mu.loaned
	s.LateReleases = p.counters.lateReleases.Load()
	s.LateReleaseBytes = p.counters.lateReleaseBytes.Load()
	s.LateGrows = p.counters.lateGrows.Load()
	return s
}

// describeLocked renders the figures of the books shared by both String forms;
// "held" is what the pool keeps once its releases in flight have landed.
// The caller holds p.mu.
func (p *unifiedPool) describeLocked() string {
	if p.fair {
		return fmt.Sprintf("%s(pool_size: %s, used: %s, held: %s, overcommit: %s, consumers: %d)", p.label,
			HumanReadableSize(p.size), HumanReadableSize(p.mu.reserved), HumanReadableSize(p.mu.held-p.mu.returning),
			HumanReadableSize(p.mu.overcommit), len(p.mu.consumers))
	}
	return fmt.Sprintf("%s(used: %s, held: %s, overcommit: %s)", p.label,
		HumanReadableSize(p.mu.reserved), HumanReadableSize(p.mu.held-p.mu.returning), HumanReadableSize(p.mu.overcommit))
}
