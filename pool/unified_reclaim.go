package pool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/timandy/routine"
)

// Reclaim implements Reclaimer: slack (and owed bytes)
// first, then spillable consumers with a Spiller, largest first (bytes
// across their reservations), until target bytes went upstream. After each
// spill all slack goes upstream, so freed bytes reach upstream however small
// the spill was; that is why no minimum spill size is imposed (Gluten raises
// every request to one block because its block listener would otherwise
// keep sub-block frees local; our sweep does not). It returns exactly the
// bytes this call released upstream, and a failed release. A spiller that
// fails is counted, logged and skipped: the reclaim goes on to the next
// consumer (ReclaimReporting also returns its error).
//
// A reclaim is never entered again on a goroutine that is running one of
// this pool's: a Spiller that grows its own pool during its spill makes
// upstream short, and upstream (Spark's TaskMemoryManager, the arbiter)
// then spills this pool again on the same goroutine, which would run the
// same Spiller again, without end. Such a nested Reclaim returns 0 at once
// and changes nothing, so the nested grow gets a short grant (Grow: an
// overcommit) or a refusal (TryGrow) that the Spiller can handle. It is
// counted (UnifiedStats.ReclaimReentries) and logged once per pool.
// Reclaims on other goroutines run concurrently as before.
func (p *unifiedPool) Reclaim(target int64) (int64, error) {
	n, err := p.reclaim(target, false)
	if errors.Is(err, ErrReclaimReentered) {
		return 0, nil // what a Reclaimer answers when it has nothing to give
	}
	return n, err
}

// ReclaimReporting implements Unified: Reclaim, also returning the error of
// every spiller it skipped, joined with any failed release (for a caller
// that must hand them on, as the JNI bridge rethrows a spiller's Java
// exception from Spark's spill()). The bytes move exactly as in Reclaim. A
// reclaim refused because one runs on this goroutine already returns 0 and
// an error wrapping ErrReclaimReentered, so the caller can tell it from one
// that found nothing to give.
func (p *unifiedPool) ReclaimReporting(target int64) (int64, error) { return p.reclaim(target, true) }

// reclaimer is one Reclaim running on a unifiedPool: its goroutine and the
// consumer whose Spiller it is calling (nil between spillers).
type reclaimer struct {
	goid     uint64
	spilling *Consumer
}

// reclaimerLocked returns the Reclaim running on goroutine goid, or nil.
// The caller holds p.mu.
func (p *unifiedPool) reclaimerLocked(goid uint64) *reclaimer {
	for i := range p.mu.reclaimers {
		if p.mu.reclaimers[i].goid == goid {
			return &p.mu.reclaimers[i]
		}
	}
	return nil
}

// endReclaimLocked removes goroutine goid's Reclaim from the running ones.
// The caller holds p.mu.
func (p *unifiedPool) endReclaimLocked(goid uint64) {
	p.mu.reclaimers = slices.DeleteFunc(p.mu.reclaimers, func(r reclaimer) bool { return r.goid == goid })
}

// setSpillingLocked records which consumer's Spiller goroutine goid's
// Reclaim calls now. The caller holds p.mu.
func (p *unifiedPool) setSpillingLocked(goid uint64, c *Consumer) {
	if r := p.reclaimerLocked(goid); r != nil {
		r.spilling = c
	}
}

// reentered counts and reports a Reclaim refused because one runs on its
// goroutine already, inside the Spiller of spilling (nil: between
// spillers, in an upstream call of the reclaim itself). The first of the
// pool's is logged at WARN: it names an engine whose Spiller grows its own
// pool, which then only ever gets what upstream has free.
func (p *unifiedPool) reentered(target int64, spilling *Consumer) error {
	p.counters.reclaimReentries.Add(1)
	who := "the reclaim itself"
	if spilling != nil {
		who = spilling.String()
	}
	if p.reentryLogged.CompareAndSwap(false, true) {
		p.logger.Warn("pool: Reclaim asked again on the goroutine running this pool's spill (a Spiller grows its own pool); answered 0 without spilling, and not logged again for this pool",
			"pool", p.label, "target", target, "spilling", who)
	}
	return fmt.Errorf("pool: %s: Reclaim(%d) during its own spill (in %s): %w", p.label, target, who, ErrReclaimReentered)
}

// ReclaimToBallast implements Unified: Reclaim whose freed bytes stay held
// as ballast instead of going back upstream (see Unified). Spillers that fail
// are counted, logged and skipped, and their errors returned joined; the
// bytes moved into ballast are returned either way. It is refused, like
// Reclaim, on a goroutine already running one of this pool's reclaims.
func (p *unifiedPool) ReclaimToBallast(target int64) (int64, []ConsumerSpill, error) {
	n, spills, err := p.reclaimAs(target, true, true)
	if errors.Is(err, ErrReclaimReentered) {
		return 0, nil, nil
	}
	return n, spills, err
}

// ConsumerSpill is what one consumer's spill moved into ballast during a
// ReclaimToBallast: the pool's slack after its Spiller returned.
type ConsumerSpill struct {
	Consumer string // the consumer's name and ID, as Consumer.String
	Bytes    int64
}

// ReleaseBallast implements Unified: it hands up to n bytes of ballast back
// upstream (all of it for n < 0) and returns how many went back; a failed
// release keeps them owed, as any failed release does.
func (p *unifiedPool) ReleaseBallast(n int64) (int64, error) {
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return 0, nil
	}
	x := p.mu.ballast
	if n >= 0 {
		x = min(x, n)
	}
	p.mu.ballast -= x
	rel := p.bookReturnLocked(x)
	p.mu.Unlock()
	if err := p.giveBack(rel); err != nil {
		return 0, err
	}
	return rel, nil
}

func (p *unifiedPool) reclaim(target int64, reportSpillers bool) (int64, error) {
	n, _, err := p.reclaimAs(target, reportSpillers, false)
	return n, err
}

// collectLocked takes what the pool holds and no longer needs: with
// toBallast, it repays overcommit and moves the slack into ballast (no
// upstream call is needed, rel is 0); otherwise it books the release of the
// slack and the owed bytes (sweepLocked), which the caller hands to
// giveBack after unlocking. moved is what either way left the pool's
// spendable bytes. The caller holds p.mu.
func (p *unifiedPool) collectLocked(toBallast bool) (moved, rel int64, parts []returnPart) {
	if p.mu.closed {
		return 0, 0, nil
	}
	if toBallast {
		slack := max(p.repayLocked(), 0)
		p.mu.ballast += slack
		return slack, 0, nil
	}
	// Upstream asks because another of its consumers needs the bytes (a
	// Spark consumer of the same task): the ballast goes first, since it is
	// memory nobody uses, kept from the consumers of other tasks, and held
	// back it could leave that consumer with nothing to run on.
	p.mu.ballast = 0 // it is slack now, which the sweep hands back
	rel, parts = p.sweepLocked()
	return rel, rel, parts
}

// reclaimAs is Reclaim (toBallast false) and ReclaimToBallast (true); it
// also returns what each consumer's spill freed.
func (p *unifiedPool) reclaimAs(target int64, reportSpillers, toBallast bool) (int64, []ConsumerSpill, error) {
	if target < 0 {
		return 0, nil, fmt.Errorf("pool: Reclaim(%d): negative size: %w", target, ErrInvalidSize)
	}
	p.counters.reclaimRequests.Add(1)
	if target == 0 {
		return 0, nil, nil
	}
	goid := routine.Goid()
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return 0, nil, nil
	}
	if r := p.reclaimerLocked(goid); r != nil {
		spilling := r.spilling
		p.mu.Unlock()
		return 0, nil, p.reentered(target, spilling)
	}
	p.mu.reclaimers = append(p.mu.reclaimers, reclaimer{goid: goid})
	moved, rel, parts := p.collectLocked(toBallast)
	p.mu.Unlock()
	// A panicking Spiller must not leave shrinks keeping their slack
	// forever, nor this goroutine listed as reclaiming: end the reclaim on
	// the way out (the next trim or sweep releases what this one did not;
	// no upstream call is made while the panic unwinds).
	ended := false
	defer func() {
		if !ended {
			p.mu.Lock()
			p.endReclaimLocked(goid)
			p.mu.Unlock()
		}
	}()

	var freed int64
	var spills []ConsumerSpill  // who gave what
	var errs, spillErrs []error // failed releases; failed spillers, which do not stop the reclaim
	if err := p.giveBack(rel, parts...); err != nil {
		errs = append(errs, err)
	} else {
		freed += moved
	}
	if freed < target && len(errs) == 0 {
		for _, cand := range p.spillCandidates() {
			want := target - freed
			p.mu.Lock()
			p.setSpillingLocked(goid, cand.c)
			p.mu.Unlock()
			got, err := cand.sp.Spill(want)
			if err != nil || got <= 0 {
				// Freeing nothing is routine (a consumer between batches);
				// an error is not.
				p.counters.spillerFailures.Add(1)
				level := slog.LevelDebug
				if err != nil {
					level = slog.LevelWarn
				}
				p.logger.Log(context.Background(), level, "pool: spiller failed or freed nothing; skipped",
					"pool", p.label, "consumer", cand.c.String(), "target", want, "freed", got, "err", err)
				if err != nil && (reportSpillers || toBallast) {
					spillErrs = append(spillErrs, &SpillerError{Pool: p.label, Consumer: cand.c.String(), Err: err})
				}
			}
			p.mu.Lock()
			p.setSpillingLocked(goid, nil)
			moved, rel, parts := p.collectLocked(toBallast)
			p.mu.Unlock()
			if err := p.giveBack(rel, parts...); err != nil {
				errs = append(errs, err)
				break
			}
			freed += moved
			if moved > 0 {
				spills = append(spills, ConsumerSpill{Consumer: cand.c.String(), Bytes: moved})
			}
			if freed >= target {
				break
			}
		}
	}
	// Final collection and end of the reclaim, atomically: slack that shrinks
	// on other goroutines kept local meanwhile is collected here.
	p.mu.Lock()
	moved, rel, parts = p.collectLocked(toBallast)
	p.endReclaimLocked(goid)
	ended = true
	p.mu.Unlock()
	if err := p.giveBack(rel, parts...); err != nil {
		errs = append(errs, err)
	} else {
		freed += moved
	}
	if toBallast {
		p.counters.ballastedBytes.Add(freed)
	} else {
		p.counters.reclaimedBytes.Add(freed)
	}
	return freed, spills, errors.Join(append(errs, spillErrs...)...)
}

// SpillerError is the failure of one consumer's Spiller that
// ReclaimReporting skipped (and counted): the reclaim went on without it.
// errors.As finds it in ReclaimReporting's error, so that a caller can tell
// a skipped spiller from a failed release.
type SpillerError struct {
	Pool, Consumer string
	Err            error
}

// Error names the pool, the consumer and the spiller's failure.
func (e *SpillerError) Error() string {
	return fmt.Sprintf("pool: %s: spiller of %s: %v", e.Pool, e.Consumer, e.Err)
}

// Unwrap returns the spiller's own error.
func (e *SpillerError) Unwrap() error { return e.Err }

type spillCandidate struct {
	c     *Consumer
	sp    Spiller
	bytes int64
}

// spillCandidates snapshots the consumers that can be asked to spill,
// largest first (ties by ID, for determinism).
func (p *unifiedPool) spillCandidates() []spillCandidate {
	p.mu.Lock()
	out := make([]spillCandidate, 0, len(p.mu.consumers))
	for _, e := range p.mu.consumers {
		if sp := e.c.Spiller(); sp != nil && e.bytes > 0 {
			out = append(out, spillCandidate{c: e.c, sp: sp, bytes: e.bytes})
		}
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b spillCandidate) int {
		if c := cmp.Compare(b.bytes, a.bytes); c != 0 {
			return c
		}
		return cmp.Compare(a.c.ID(), b.c.ID())
	})
	return out
}

// Close implements Unified: it hands everything held back upstream (but the
// releases still in flight, which settle on their own) and reports, as a
// *LeakError, the consumers whose bytes were still reserved. After Close,
// grows are refused (Grow records nothing) and shrinks are counted as late
// releases. A second Close returns nil.
func (p *unifiedPool) Close() error {
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return nil
	}
	p.mu.closed = true
	var leak *LeakError
	for _, e := range p.mu.consumers {
		// A TryGrow still waiting upstream was never reserved: it fails
		// with ErrClosed, so it is no leak.
		if b := e.bytes - e.trying; b != 0 {
			if leak == nil {
				leak = &LeakError{Pool: p.label}
			}
			leak.Consumers = append(leak.Consumers, LeakedConsumer{Name: e.c.Name(), ID: e.c.ID(), Bytes: b})
			leak.Bytes += b
		}
		e.bytes, e.owed = 0, 0 // the owed bytes go back below with everything held
	}
	if p.mu.loaned > 0 {
		p.lender.Repay(p.mu.loaned)
		p.mu.loaned = 0
	}
	p.mu.reserved, p.mu.overcommit, p.mu.unspillable, p.mu.owed, p.mu.ballast = 0, 0, 0, 0, 0
	p.mu.shareFresh = false
	p.mu.committed = 0
	rel := p.bookReturnLocked(p.mu.held - p.mu.returning)
	p.mu.Unlock()

	err := p.giveBack(rel)
	p.fall(0)
	if leak == nil {
		return err
	}
	leak.sort()
	p.logger.Error("pool: closed with bytes still reserved", "pool", p.label, "bytes", leak.Bytes, "leak", leak.Error())
	return errors.Join(leak, err)
}
