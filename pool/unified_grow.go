package pool

import (
	"errors"
	"fmt"
)

// giveBack hands n bytes, booked by bookReturnLocked, back upstream (nothing
// for n ≤ 0); parts are the consumers' shares of them (see returnPart),
// counted against those consumers' fair shares until the call settles. It
// is called without p.mu. On success held drops by n. If Release fails,
// upstream released nothing (the Upstream contract): the bytes stay held and
// charged as owed, never spendable slack (and each part stays against its
// consumer's share as owed), and the next sweep or Close hands them back
// again. A panicking Release is settled the same way before the panic goes
// on.
func (p *unifiedPool) giveBack(n int64, parts ...returnPart) error {
	if n <= 0 {
		return nil
	}
	p.counters.releaseCalls.Add(1)
	released := false // stays false if Release fails or panics
	defer func() {
		if !released {
			p.counters.upstreamErrors.Add(1)
		}
		p.settleReturn(n, parts, released)
	}()
	err := p.up.Release(n)
	released = err == nil
	if err != nil {
		p.logger.Error("pool: upstream Release failed; the bytes stay charged and go back at the next sweep",
			"pool", p.label, "bytes", n, "err", err)
		return fmt.Errorf("pool: %s: releasing %d bytes upstream: %w", p.label, n, err)
	}
	return nil
}

// settleReturn ends a giveBack of n bytes.
func (p *unifiedPool) settleReturn(n int64, parts []returnPart, released bool) {
	p.mu.Lock()
	p.mu.returning -= n
	for _, pt := range parts {
		pt.e.returning -= pt.n
		if !released {
			pt.e.owed += pt.n
		}
	}
	if released {
		p.mu.held -= n
	} else {
		p.mu.owed += n
	}
	p.mu.Unlock()
}

// loan asks the pool's Lender, if it has one, for loans of n bytes, a
// borrow upstream granted n bytes short, and returns how many it lent (the
// caller records them, or repays them): its Gather where it is a Gatherer
// and gather allows, else its Lend. It is called without p.mu: Gather calls
// upstream and other pools (this one too: its ballast, short of the borrow,
// goes the same way).
func (p *unifiedPool) loan(n int64, gather bool) int64 {
	var lent int64
	switch {
	case p.lender == nil || n <= 0:
		return 0
	case gather && p.gatherer != nil:
		lent = p.gatherer.Gather(n)
	default:
		lent = p.lender.Lend(n)
	}
	return min(max(lent, 0), n)
}

// repayLoans gives n bytes of loans the pool will not record back to its
// Lender (n ≤ 0: none).
func (p *unifiedPool) repayLoans(n int64) {
	if n > 0 {
		p.lender.Repay(n)
	}
}

// acquire asks upstream for ask > 0 bytes. It is called without p.mu (the
// call may block and may re-enter Reclaim). The grant is clamped to
// [0, ask]; any excess is handed back at once. On error nothing is granted.
func (p *unifiedPool) acquire(ask int64) (int64, error) {
	p.counters.acquireCalls.Add(1)
	got, err := p.up.Acquire(ask)
	if err != nil {
		p.counters.upstreamErrors.Add(1)
		if got > 0 {
			// The contract says an error grants nothing; believing the
			// error risks a stranded grant (freed at task end), believing
			// the count risks over-returning. We keep the safe side.
			p.logger.Error("pool: upstream Acquire returned bytes with an error; treating as a zero grant",
				"pool", p.label, "asked", ask, "granted", got, "err", err)
		}
		return 0, err
	}
	if got > ask {
		over := got - ask
		p.counters.overGrants.Add(1)
		p.logger.Warn("pool: upstream granted more than asked; releasing the excess",
			"pool", p.label, "asked", ask, "granted", got)
		p.mu.Lock()
		p.mu.held += over
		rel := p.bookReturnLocked(over)
		p.mu.Unlock()
		_ = p.giveBack(rel) // failures are logged inside
		got = ask
	}
	if got < 0 {
		got = 0
	}
	if got < ask {
		p.counters.shortGrants.Add(1)
	}
	return got, nil
}

// Grow implements Pool: it records n bytes for r past any limit, borrowing
// what slack does not cover. A short grant, or an upstream error (logged),
// becomes overcommit, repaid before anything goes back upstream; it never
// panics for want of memory (Comet #6127). After Close it records nothing
// and logs and counts a late grow.
func (p *unifiedPool) Grow(r *Reservation, n int64) {
	if n < 0 {
		panic(fmt.Sprintf("pool: Grow(%d): negative size", n))
	}
	_ = p.growReporting(r, n) // a failure upstream is logged and counted inside
}

// growReporting is Grow (n ≥ 0) returning what went wrong upstream: an
// Acquire that failed (the bytes are recorded anyway, as overcommit) or a
// Release of surplus slack that failed (the bytes stay owed). The grow
// itself has happened either way.
func (p *unifiedPool) growReporting(r *Reservation, n int64) error {
	if n == 0 {
		return nil
	}
	c := r.Consumer()
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		p.counters.lateGrows.Add(1)
		p.logger.Error("pool: Grow after Close; nothing recorded or borrowed",
			"pool", p.label, "consumer", c.String(), "bytes", n)
		return nil
	}
	e := p.entryOfLocked(r)
	slack := p.slackLocked()
	p.addLocked(e, n)
	now := p.commitLocked(n)
	if slack >= n {
		p.mu.Unlock()
		if p.risesPast(now) {
			p.riseUndoable(e, n, now)
		}
		return nil
	}
	return p.growSlow(e, n, n-slack, now)
}

// growSlow borrows need bytes of Grow's n (booked and committed for e at
// now) from upstream. It is called with p.mu held and returns with it
// released. A panic in a threshold callback or in Acquire takes the grow
// back out of the books before it goes on. It returns the upstream failures
// (see growReporting).
func (p *unifiedPool) growSlow(e *consumerBytes, n, need, now int64) error {
	chunk := p.chunkLocked()
	p.mu.pending += need
	p.mu.Unlock()

	settled := false
	defer func() {
		if !settled {
			p.mu.Lock()
			p.mu.pending -= need
			if !p.mu.closed { // else Close already zeroed the books
				p.commitLocked(-n)
				p.unbookLocked(e, n)
			}
			p.mu.Unlock()
		}
	}()
	// A Grow is committed before it is backed (it cannot fail), so the
	// meter sees it now, as Reserved does.
	p.rise(now)
	// No lock across Upstream: Acquire may block and may call Reclaim here.
	got, err := p.acquire(roundUp(need, chunk))
	var lent int64 // loans backing the overcommit (after a failed acquire, of the hold alone)
	if got < need {
		lent = p.loan(need-got, err == nil)
	}
	settled = true
	if err != nil {
		p.logger.Warn("pool: upstream Acquire failed during Grow; recording overcommit",
			"pool", p.label, "consumer", e.c.String(), "bytes", n, "err", err)
		err = fmt.Errorf("pool: %s: acquiring %d bytes upstream for Grow(%d) of %s (recorded as overcommit): %w",
			p.label, roundUp(need, chunk), n, e.c, err)
	}

	p.mu.Lock()
	p.mu.pending -= need
	p.mu.held += got
	var rel int64
	if p.mu.closed {
		// Close swept the books (reporting n as leaked) while we waited:
		// the grant goes straight back and the grow counts as late.
		rel = p.bookReturnLocked(got)
		p.repayLoans(lent)
		p.counters.lateGrows.Add(1)
		p.logger.Error("pool: Grow completed after Close; its grant goes back",
			"pool", p.label, "consumer", e.c.String(), "bytes", n, "granted", got)
	} else {
		if got < need {
			p.mu.overcommit += need - got
			p.recordLoanLocked(lent)
		}
		rel = p.trimLocked()
	}
	p.mu.Unlock()
	return errors.Join(err, p.giveBack(rel))
}

// TryGrow implements Pool: it records n bytes for r if the pool's limits
// allow (fair_unified: the consumer's fair share, then the pool total, in
// Comet's order; greedy_unified has none) and upstream grants what slack
// does not cover plus the overcommit debt (Comet's try_acquire), or returns
// an error and records nothing. A refusal (by a limit or by upstream) wraps
// ErrResourcesExhausted; an upstream error (a Java exception) is wrapped as
// it is and is not ErrResourcesExhausted; after Close it wraps ErrClosed; a
// negative n wraps ErrInvalidSize. A partial grant first repays overcommit;
// what remains above the slack bound goes back.
func (p *unifiedPool) TryGrow(r *Reservation, n int64) error {
	if n < 0 {
		return fmt.Errorf("pool: TryGrow(%d): negative size: %w", n, ErrInvalidSize)
	}
	c := r.Consumer()
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return fmt.Errorf("pool: %s: TryGrow(%d) for %s after Close: %w", p.label, n, c, ErrClosed)
	}
	if n == 0 {
		p.mu.Unlock()
		return nil
	}
	e := p.entryOfLocked(r)
	if p.fair {
		if err := p.admitLocked(e, n); err != nil {
			p.dropIfIdleLocked(e)
			p.mu.Unlock()
			return err
		}
	}
	if slack := p.slackLocked(); slack >= n {
		p.addLocked(e, n)
		now := p.commitLocked(n)
		p.mu.Unlock()
		if p.risesPast(now) {
			p.riseUndoable(e, n, now)
		}
		return nil
	}
	return p.tryGrowSlow(e, n, p.admitNow != nil && r.optional.Load() > 0)
}

// tryGrowSlow borrows what slack does not cover of TryGrow's n bytes for e;
// optional marks a grow inside Reservation.WithoutWaiting of a pool with an
// ImmediateAdmission, which answers it at once. It is called with p.mu held
// and returns with it released. A panic in Acquire rolls the request back
// before it goes on.
func (p *unifiedPool) tryGrowSlow(e *consumerBytes, n int64, optional bool) error {
	// slack < n, so overcommit may be > 0 (slack is 0 then): ask for it
	// too. Only the bytes of this request are pending; the debt stays
	// overcommit, so a concurrent shrink still repays it (and whatever the
	// grant then brings beyond the debt left is surplus slack, trimmed as
	// usual: Comet's "surplus goes back"). Moving the debt into pending
	// would let such a shrink count the unbacked debt bytes as slack and
	// hand upstream more than it granted.
	debt := p.mu.overcommit
	uncovered := n - p.slackLocked()
	need := uncovered + debt
	// The bytes count against the pool's limits from now until the grow
	// settles, so concurrent admissions see them.
	p.addLocked(e, n)
	e.trying += n
	p.mu.pending += uncovered
	ask := roundUp(need, p.chunkLocked())
	p.mu.Unlock()

	settled := false
	defer func() {
		if !settled {
			p.mu.Lock()
			p.mu.pending -= uncovered
			e.trying -= n
			if !p.mu.closed {
				p.unbookLocked(e, n)
			}
			p.mu.Unlock()
		}
	}()
	// The process-wide check first (it may wait while the process makes
	// room; a refusal fails the TryGrow as upstream's would).
	var refused error
	switch {
	case optional:
		refused = p.admitNow.AdmitNow(ask)
	case p.admission != nil:
		refused = p.admission.Admit(ask)
	}
	var got int64
	var lent int64 // loans making up a short grant
	var err error
	if refused == nil {
		// Ballast is kept from upstream's other consumers, not from the
		// pool's own: an admitted grow it covers spends it (in one step
		// with the grow's settlement, so no other grow takes the bytes
		// meanwhile) rather than asking upstream, which would only have
		// the bytes if the ballast went back first.
		p.mu.Lock()
		if !p.mu.closed && p.mu.ballast >= need {
			p.mu.ballast -= need
			p.mu.pending -= uncovered
			e.trying -= n
			settled = true
			now := p.commitLocked(n)
			rel := p.trimLocked()
			p.mu.Unlock()
			_ = p.giveBack(rel) // failures are logged inside
			if p.risesPast(now) {
				p.riseUndoable(e, n, now)
			}
			return nil
		}
		p.mu.Unlock()
		// No lock across Upstream: Acquire may block and may call Reclaim here.
		got, err = p.acquire(ask)
		if err == nil && got < need && !optional {
			lent = p.loan(need-got, true)
		}
	} else {
		p.counters.admissionRefusals.Add(1)
	}
	settled = true

	p.mu.Lock()
	p.mu.pending -= uncovered
	e.trying -= n
	p.mu.held += got
	if p.mu.closed {
		rel := p.bookReturnLocked(got)
		p.repayLoans(lent)
		p.mu.Unlock()
		_ = p.giveBack(rel) // failures are logged inside
		return fmt.Errorf("pool: %s: TryGrow(%d) for %s: pool closed while acquiring: %w", p.label, n, e.c, ErrClosed)
	}
	if err == nil && got < need && lent == need-got {
		// Spark granted short, and the pool's Admission holds memory back
		// from upstream's other consumers (the pod guard): a loan of it
		// (made above) makes up the rest, as overcommit that upstream never
		// hears of.
		p.mu.overcommit += lent
		p.recordLoanLocked(lent)
		got, lent = need, 0
	}
	p.repayLoans(lent) // a partial loan is no loan
	if err == nil && got >= need {
		now := p.commitLocked(n)
		rel := p.trimLocked()
		p.mu.Unlock()
		_ = p.giveBack(rel) // failures are logged inside
		if p.risesPast(now) {
			p.riseUndoable(e, n, now)
		}
		return nil
	}
	// Roll back: the bytes leave the reservation, and whatever was granted
	// repays the debt before any of it goes back upstream. What goes back
	// of the grant is e's until upstream has it: a sibling reservation of
	// e must not be admitted on it meanwhile.
	p.unbookLocked(e, n)
	rel := p.trimLocked()
	part := bookPartLocked(e, min(rel, got))
	var out error
	switch {
	case refused != nil:
		out = &ExhaustedError{Msg: fmt.Sprintf(
			"Failed to acquire %d bytes for %s: %v: %s", n, e.c, refused, p.describeLocked())}
	case err != nil:
		out = fmt.Errorf("pool: %s: acquiring %d bytes upstream for %s: %w", p.label, ask, e.c, err)
	default:
		out = &ExhaustedError{Msg: fmt.Sprintf(
			"Failed to acquire %d bytes for %s plus %d bytes overcommitted, only got %d bytes from upstream: %s",
			n, e.c, debt, got, p.describeLocked())}
	}
	p.mu.Unlock()
	_ = p.giveBack(rel, part) // failures are logged inside
	return out
}

// riseUndoable is the meter's slow path after e's grow of n bytes,
// committed at now (the caller checked risesPast, which inlines). If a
// threshold callback panics, the grow is taken back out of the books (its
// bytes become slack, handed back by the slack policy) before the panic
// goes on to the caller, which then never adds them to the reservation.
func (p *unifiedPool) riseUndoable(e *consumerBytes, n, now int64) {
	p.riseOrUndo(now, func() {
		p.mu.Lock()
		if p.mu.closed {
			p.mu.Unlock()
			return
		}
		p.commitLocked(-n)
		p.unbookLocked(e, n)
		rel := p.trimLocked()
		part := bookPartLocked(e, min(rel, n))
		p.mu.Unlock()
		_ = p.giveBack(rel, part)
	})
}

// unbookLocked takes n bytes back off e (a grow that did not happen). The
// caller holds p.mu.
func (p *unifiedPool) unbookLocked(e *consumerBytes, n int64) {
	p.addLocked(e, -n)
	p.dropIfIdleLocked(e)
}

// Shrink implements Pool: r gave back n bytes. They repay overcommit first;
// the rest become slack, released upstream above the slack bound (while
// that release is in flight they still count against the consumer's share
// and the pool total). Giving back more than the pool recorded for the
// consumer is an accounting bug elsewhere: it panics with Comet's wording
// and changes nothing. After Close it counts and logs a late release and
// forwards nothing (Comet #2453).
func (p *unifiedPool) Shrink(r *Reservation, n int64) {
	if n < 0 {
		panic(fmt.Sprintf("pool: Shrink(%d): negative size", n))
	}
	_ = p.shrinkReporting(r, n) // a failed Release is logged and counted inside
}

// shrinkReporting is Shrink (n ≥ 0) returning a failed Release: the shrink
// has happened, and the bytes it could not hand back stay owed.
func (p *unifiedPool) shrinkReporting(r *Reservation, n int64) error {
	if n == 0 {
		return nil
	}
	c := r.Consumer()
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		p.counters.lateReleases.Add(1)
		p.counters.lateReleaseBytes.Add(n)
		p.logger.Warn("pool: release after Close; not forwarded upstream",
			"pool", p.label, "consumer", c.String(), "bytes", n)
		return nil
	}
	e := p.lookupOfLocked(r)
	if held := e.held(); held < n {
		p.mu.Unlock()
		panic(releaseOverflow(n, held, c))
	}
	p.unbookLocked(e, n)
	now := p.commitLocked(-n)
	rel := p.trimLocked() // the freed bytes are slack now: they repay overcommit first
	part := bookPartLocked(e, min(rel, n))
	p.mu.Unlock()
	err := p.giveBack(rel, part) // failures are logged inside too
	p.fall(now)
	return err
}
