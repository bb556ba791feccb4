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
// their Upstream: the bytes upstream granted and the pool has not handed
// back (held), the bytes recorded for reservations (reserved), the part of
// reserved that upstream never granted (overcommit), and the bytes of
// reserved whose grant is still being fetched (pending). The pools embed a
// loan and add their admission rule (none for greedy_unified, the fair share
// and the pool total for fair_unified).
//
// Whenever mu is free these hold:
//
//	slack      = held − (reserved − overcommit − pending) ≥ 0
//	overcommit > 0 ⇒ slack = 0            (slack repays the debt first)
//	slack ≤ 2·chunk, or a Reclaim is running (it sweeps all slack before it returns)
//	held ≤ what upstream granted − what was handed back   (never over-returned)
//
// At quiescence (no call in flight) pending = 0, so upstream's view of the
// pool equals held = reserved − overcommit + slack.
//
// Slack policy (chunk C > 0): acquires ask for the missing bytes rounded up
// to a multiple of C, so a full grant leaves slack < C; a shrink or settle
// that leaves slack ≤ 2C stays local; above 2C the pool releases down to C
// (hysteresis: a grow/shrink pair at a chunk boundary never thrashes). With
// C = 0 every non-zero grow not covered by slack and every non-zero shrink
// not repaying overcommit makes exactly one upstream call, as Comet does.
//
// Concurrency: no lock is held across an Upstream call. Each operation books
// its intent under mu, calls upstream with mu released (Spark may block in
// wait() and may call Reclaim on this goroutine), then settles or rolls back
// under mu. A loan must not be copied after first use. The zero loan is not
// usable: the pool constructors call init.
type loan struct {
	meter

	up     Upstream
	kind   string // "greedy_unified" or "fair_unified"
	label  string // kind, or kind[name] when WithName was given
	chunk  int64
	logger *slog.Logger
	fair   bool  // fair_unified: String shows size and consumers
	size   int64 // fair_unified's pool size; 0 for greedy_unified

	counters loanCounters

	mu struct {
		sync.Mutex
		// committed is reserved minus the bytes booked by TryGrow calls
		// still waiting for upstream: what Reserved and Stats report and
		// the meter watches, so a refused TryGrow never shows up in them.
		// (A plain field under mu, not an atomic: readers are rare, and
		// two locked instructions per grow/shrink pair are measurable.)
		committed int64
		// reserved: bytes recorded for reservations, including bytes booked
		// by calls still waiting for upstream (so concurrent admission checks
		// see them). Written under mu by grow, tryGrow, shrink and close.
		reserved int64
		// held: bytes upstream granted and the pool has not handed back.
		// Raised when a grant settles, lowered when a release is booked
		// (before the Release call), so upstream is never over-returned.
		held int64
		// overcommit: reserved bytes upstream never granted (Grow's short
		// grants). Repaid from the first bytes freed or granted; a TryGrow
		// asks for it on top of its request but leaves it here meanwhile.
		overcommit int64
		// pending: bytes booked by in-flight grows that slack did not
		// cover, whose grant an Acquire is fetching; neither slack nor
		// overcommit meanwhile. Never more than those requests' bytes.
		pending int64
		// reclaiming counts running Reclaim calls; while > 0 shrinks keep
		// their slack local and the Reclaims sweep it, so each Reclaim can
		// report exactly the bytes it released.
		reclaiming int
		closed     bool
		// consumers: every registered consumer's bytes across all its
		// reservations (DESIGN difference 1), keyed by Consumer.ID.
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
	regs  int   // open registrations; the entry goes when it reaches 0
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
	l.mu.Unlock()
}

// unregister drops one registration of c; the consumer's entry goes with
// its last registration. It never panics (it may run while unwinding).
func (l *loan) unregister(c *Consumer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.mu.consumers[c.ID()]
	if !ok {
		return
	}
	e.regs--
	if e.regs > 0 {
		return
	}
	if e.bytes != 0 && !l.mu.closed {
		l.logger.Error("pool: consumer unregistered with bytes still recorded",
			"pool", l.label, "consumer", c.String(), "bytes", e.bytes)
	}
	l.dropLocked(e)
}

// entryLocked returns c's entry, creating it if c was never registered (a
// Comet pool panics there; we account instead). The caller holds l.mu.
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
	if c.CanSpill() {
		l.mu.spillable++
		l.mu.shareFresh = false
	}
	return e
}

// dropLocked removes e. The caller holds l.mu.
func (l *loan) dropLocked(e *consumerBytes) {
	delete(l.mu.consumers, e.c.ID())
	if l.mu.last == e {
		l.mu.last = nil
	}
	if e.c.CanSpill() {
		l.mu.spillable--
	} else {
		l.mu.unspillable -= e.bytes
	}
	l.mu.shareFresh = false
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

// slackLocked is held − (reserved − overcommit − pending). The caller holds l.mu.
func (l *loan) slackLocked() int64 {
	return l.mu.held - (l.mu.reserved - l.mu.overcommit - l.mu.pending)
}

// roundUp rounds need up to a multiple of the chunk (need itself when the
// chunk is 0), saturating instead of overflowing.
func (l *loan) roundUp(need int64) int64 {
	if l.chunk <= 0 {
		return need
	}
	r := need % l.chunk
	if r == 0 {
		return need
	}
	if need > maxInt64-(l.chunk-r) {
		return need
	}
	return need + l.chunk - r
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

// trimLocked repays overcommit from slack and, when slack exceeds 2 chunks
// and no Reclaim is running, books the release of everything above 1 chunk.
// It returns the bytes the caller must Release after unlocking. The caller
// holds l.mu.
func (l *loan) trimLocked() int64 {
	slack := l.repayLocked()
	if l.mu.reclaiming > 0 || slack <= 2*l.chunk {
		return 0
	}
	rel := slack - l.chunk
	l.mu.held -= rel
	return rel
}

// sweepLocked repays overcommit from slack and books the release of all the
// remaining slack. The caller holds l.mu.
func (l *loan) sweepLocked() int64 {
	slack := l.repayLocked()
	l.mu.held -= slack
	return slack
}

// acquire asks upstream for ask > 0 bytes. It is called without l.mu (the
// call may block and may re-enter Reclaim). The grant is clamped to
// [0, ask]; any excess is released back at once. On error nothing is
// granted.
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
		_ = l.release(over) // failures are logged inside
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

// release hands n bytes back upstream (nothing for n ≤ 0). It is called
// without l.mu, after the bytes were taken off held (or, for an over-grant's
// excess, before they were ever added). If Release fails, upstream released
// nothing (the Upstream contract): the bytes go back onto held as slack, so
// the pool's view and upstream's stay equal, and a later trim, sweep or
// Close hands them back again.
func (l *loan) release(n int64) error {
	if n <= 0 {
		return nil
	}
	l.counters.releaseCalls.Add(1)
	if err := l.up.Release(n); err != nil {
		l.counters.upstreamErrors.Add(1)
		l.mu.Lock()
		l.mu.held += n
		l.repayLocked()
		l.mu.Unlock()
		l.logger.Error("pool: upstream Release failed; the bytes stay held",
			"pool", l.label, "bytes", n, "err", err)
		return fmt.Errorf("pool: %s: releasing %d bytes upstream: %w", l.label, n, err)
	}
	return nil
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
	slack := l.slackLocked()
	l.addLocked(l.entryLocked(c), n)
	now := l.commitLocked(n)
	if slack >= n {
		l.mu.Unlock()
		l.rise(now)
		return
	}
	need := n - slack
	l.mu.pending += need
	l.mu.Unlock()
	l.rise(now)

	// No lock across Upstream: Acquire may block and may call Reclaim here.
	got, err := l.acquire(l.roundUp(need))
	if err != nil {
		l.logger.Warn("pool: upstream Acquire failed during Grow; recording overcommit",
			"pool", l.label, "consumer", c.String(), "bytes", n, "err", err)
	}

	l.mu.Lock()
	l.mu.pending -= need
	var rel int64
	if l.mu.closed {
		// Close swept the ledger (reporting n as leaked) while we waited:
		// the grant goes straight back and the grow counts as late.
		rel = got
		l.counters.lateGrows.Add(1)
		l.logger.Error("pool: Grow completed after Close; its grant goes back",
			"pool", l.label, "consumer", c.String(), "bytes", n, "granted", got)
	} else {
		l.mu.held += got
		if got < need {
			l.mu.overcommit += need - got
		}
		rel = l.trimLocked()
	}
	l.mu.Unlock()
	_ = l.release(rel) // failures are logged inside
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
			l.mu.Unlock()
			return err
		}
	}
	slack := l.slackLocked()
	if slack >= n {
		l.addLocked(e, n)
		now := l.commitLocked(n)
		l.mu.Unlock()
		l.rise(now)
		return nil
	}
	// slack < n, so overcommit may be > 0 (slack is 0 then): ask for it
	// too. Only the bytes of this request are pending; the debt stays
	// overcommit, so a concurrent shrink still repays it (and whatever the
	// grant then brings beyond the debt left is surplus slack, trimmed as
	// usual: Comet's "surplus goes back"). Moving the debt into pending
	// would let such a shrink count the unbacked debt bytes as slack and
	// hand upstream more than it granted.
	debt := l.mu.overcommit
	uncovered := n - slack
	need := uncovered + debt
	l.addLocked(e, n)
	l.mu.pending += uncovered
	l.mu.Unlock()

	// No lock across Upstream: Acquire may block and may call Reclaim here.
	ask := l.roundUp(need)
	got, err := l.acquire(ask)

	l.mu.Lock()
	l.mu.pending -= uncovered
	if l.mu.closed {
		l.mu.Unlock()
		_ = l.release(got) // failures are logged inside
		return fmt.Errorf("pool: %s: TryGrow(%d) for %s: pool closed while acquiring: %w", l.label, n, c, ErrClosed)
	}
	l.mu.held += got
	if err == nil && got >= need {
		now := l.commitLocked(n)
		rel := l.trimLocked()
		l.mu.Unlock()
		_ = l.release(rel) // failures are logged inside
		l.rise(now)
		return nil
	}
	// Roll back: the bytes leave the reservation, and whatever was granted
	// repays the debt before any of it goes back upstream.
	l.addLocked(e, -n)
	rel := l.trimLocked()
	var out error
	if err != nil {
		out = fmt.Errorf("pool: %s: acquiring %d bytes upstream for %s: %w", l.label, ask, c, err)
	} else {
		out = &ExhaustedError{Msg: fmt.Sprintf(
			"Failed to acquire %d bytes for %s plus %d bytes overcommitted, only got %d bytes from upstream: %s",
			n, c, debt, got, l.describeLocked())}
	}
	l.mu.Unlock()
	_ = l.release(rel) // failures are logged inside
	return out
}

// shrink records that r gave back n bytes: they repay overcommit first; the
// rest become slack, released upstream above the bound. After Close it
// counts and logs a late release and forwards nothing (Comet #2453).
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
	e := l.entryLocked(c)
	if e.bytes < n || l.mu.reserved < n {
		// Reservation guarantees n ≤ its size, so this is an accounting
		// bug elsewhere: clamp so the ledger stays exact, and say so.
		l.logger.Error("pool: shrink exceeds what the pool recorded; clamping",
			"pool", l.label, "consumer", c.String(), "bytes", n, "consumer_bytes", e.bytes, "reserved", l.mu.reserved)
		n = max(0, min(n, e.bytes, l.mu.reserved))
	}
	l.addLocked(e, -n)
	rel := l.trimLocked() // the freed bytes are slack now: they repay overcommit first
	now := l.commitLocked(-n)
	l.mu.Unlock()
	_ = l.release(rel) // failures are logged inside
	l.fall(now)
}

// reclaim implements Reclaimer for both pools: slack first, then spillable
// consumers with a Spiller, largest first (bytes across their
// reservations), until target bytes went upstream. After each spill all
// slack goes upstream, so freed bytes reach upstream however small the
// spill was; that is why no minimum spill size is imposed (Gluten raises
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
	// releases what this one did not).
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
	if err := l.release(rel); err != nil {
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
			if err := l.release(rel); err != nil {
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
	if err := l.release(rel); err != nil {
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

// close hands everything held back upstream and reports, as a *LeakError,
// the consumers whose bytes were still reserved. A second close is a no-op.
func (l *loan) close() error {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return nil
	}
	l.mu.closed = true
	var leak *LeakError
	for _, e := range l.mu.consumers {
		if e.bytes != 0 {
			if leak == nil {
				leak = &LeakError{Pool: l.label}
			}
			leak.Consumers = append(leak.Consumers, LeakedConsumer{Name: e.c.Name(), ID: e.c.ID(), Bytes: e.bytes})
			leak.Bytes += e.bytes
		}
		e.bytes = 0
	}
	rel := l.mu.held
	l.mu.held, l.mu.reserved, l.mu.overcommit, l.mu.unspillable = 0, 0, 0, 0
	l.mu.shareFresh = false
	l.mu.committed = 0
	l.mu.Unlock()

	err := l.release(rel)
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

// describeLocked renders the ledger figures shared by both String forms.
// The caller holds l.mu.
func (l *loan) describeLocked() string {
	if l.fair {
		return fmt.Sprintf("%s(pool_size: %s, used: %s, held: %s, overcommit: %s, consumers: %d)", l.label,
			HumanReadableSize(l.size), HumanReadableSize(l.mu.reserved), HumanReadableSize(l.mu.held),
			HumanReadableSize(l.mu.overcommit), len(l.mu.consumers))
	}
	return fmt.Sprintf("%s(used: %s, held: %s, overcommit: %s)", l.label,
		HumanReadableSize(l.mu.reserved), HumanReadableSize(l.mu.held), HumanReadableSize(l.mu.overcommit))
}
