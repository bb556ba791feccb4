package pool

import (
	"fmt"
	"sync"
)

// DefaultAccountQuantum is the quantum of an Account made with a quantum
// of 0 or less: 1 MiB. An operator growing by batches of tens of KiB
// crosses to its reservation about once per 30 batches, and keeps at most
// 2 MiB reserved beyond what it uses.
const DefaultAccountQuantum int64 = 1 << 20

// Account is an operator's claim on memory, after CockroachDB's
// BoundAccount: a Reservation it owns, and in front of it a local count of
// the bytes the operator uses and of the slack the reservation holds beyond
// them. Grows that the slack covers and shrinks that leave it at most 2Q
// (Q the account's quantum) are two plain additions: they touch no shared
// word, take no lock and do not call the pool. A grow the slack does not
// cover crosses: it asks the reservation for the rest rounded up to a
// multiple of Q; a shrink that leaves more than 2Q of slack gives all but Q
// back. So the pool sees an operator's memory in steps of Q, and at every
// instant the reservation holds exactly Used() + Slack(): the slack is
// reserved in the pool, counted in its figures like any reserved byte, and
// only not in a buffer (at most 2Q per account; Q + a crossing's rounding
// right after a grow).
//
// An Account is not safe for concurrent use. Its methods must be called by
// one goroutine at a time, each call finished before the next begins: the
// operator's own goroutine, or whoever holds the operator's lock (see
// WithLock). The reservation belongs to the account from NewAccount on:
// nothing else may grow or shrink it, and Close closes it.
//
// A grow that crosses may reach the pool's spill machinery (a unified
// pool's Reclaim, Spark's spill), which may call the consumer's Spiller,
// on this goroutine or another, while the grow is in flight. The crossing
// grow has taken the whole slack aside first, so a spiller that shrinks
// the account or gives its slack back (Spill) meanwhile cannot give those
// bytes back twice; an operator whose spiller takes the operator's lock
// makes the account release that lock during the crossing (WithLock).
//
// The contract is the Reservation's: TryGrow and Grow call the pool before
// they add to Used (only when they cross), Shrink subtracts before it calls
// the pool; refusals are the reservation's own errors, unchanged, and
// invalid calls fail with the same texts and sentinels (ErrInvalidSize,
// ErrClosed).
//
// The slack is reserved but not resident. A spill request it answers
// frees accounting bytes only, which is what Spark's spill asks for, but
// not what a guard making room in a container needs: under one, keep the
// quantum small next to the operator's batches.
//
// The zero Account is not valid; make one with NewAccount.
type Account struct {
	res     *Reservation
	quantum int64
	// lock is the owner's lock (WithLock), released while a grow crosses;
	// nil when the account's owner is one goroutine.
	lock sync.Locker
	// held is what the account holds of its reservation: used + slack
	// (the slack a crossing grow has taken aside excluded). It changes
	// only on the slow paths; the fast ones move bytes between used and
	// slack, so used is held − slack and costs no field of its own.
	held int64
	// slack is what the reservation holds beyond what the owner uses; -1
	// once closed, so that TryGrow's fast path fails without a Close test.
	slack int64
	// maxSlack is twice the quantum: a shrink that leaves more trims.
	maxSlack int64
	// limit is min(held, maxSlack): a shrink of n stays local iff
	// slack + n <= limit (n is used and the slack stays bounded); -2 once
	// closed, one below the slack, so that Shrink's fast path fails even
	// for 0. Set with held.
	limit int64
}

// NewAccount returns an account over r, which it owns from now on, with
// the given quantum (DefaultAccountQuantum if quantum <= 0). Bytes r
// already holds become the account's slack. It panics if r is nil or
// closed.
func NewAccount(r *Reservation, quantum int64) *Account {
	if r == nil {
		panic("pool: NewAccount: nil reservation")
	}
	r.mustBeOpen("NewAccount", 0)
	if quantum <= 0 {
		quantum = DefaultAccountQuantum
	}
	// Twice the quantum and a rounding by it must not overflow.
	quantum = min(quantum, 1<<60)
	a := &Account{res: r, quantum: quantum, maxSlack: 2 * quantum, slack: r.Size()}
	a.setHeld(a.slack)
	return a
}

// WithLock makes the account release l while a grow crosses to the
// reservation and take it again after, and returns the account. Use it
// when the caller holds l (the operator's own lock, which its Spiller
// takes too) around every call to the account: the pool may spill this
// very consumer during the crossing, on this goroutine or another, and
// that spill needs l. Set it before the first call.
func (a *Account) WithLock(l sync.Locker) *Account {
	a.lock = l
	return a
}

// Used is the number of bytes the owner has grown by and not shrunk by (0
// once closed).
func (a *Account) Used() int64 { return a.held - max(a.slack, 0) }

// Slack is the number of bytes the reservation holds beyond Used: reserved
// in the pool, not in use by the operator (0 once closed).
func (a *Account) Slack() int64 { return max(a.slack, 0) }

// Quantum is the account's borrowing unit.
func (a *Account) Quantum() int64 { return a.quantum }

// Reservation is the reservation the account owns.
func (a *Account) Reservation() *Reservation { return a.res }

// TryGrow adds n to Used, or returns an error and changes nothing. From
// the slack if it covers n; otherwise the reservation is asked for the rest
// rounded up to a multiple of the quantum, and if that is refused, for the
// rest exactly, whose refusal (wrapping ErrResourcesExhausted, or an
// upstream failure as it is) is returned. A negative n wraps
// ErrInvalidSize; a closed account wraps ErrClosed.
func (a *Account) TryGrow(n int64) error {
	// The fast path, small enough to inline.
	if n >= 0 && n <= a.slack {
		a.slack -= n
		return nil
	}
	return a.tryGrowSlow(n)
}

func (a *Account) tryGrowSlow(n int64) error {
	if n < 0 {
		return fmt.Errorf("pool: TryGrow(%d): negative size: %w", n, ErrInvalidSize)
	}
	if a.Closed() {
		return fmt.Errorf("pool: TryGrow(%d) on %s: %w", n, a.describe(), ErrClosed)
	}
	return a.cross(n, false)
}

// Grow adds n to Used unconditionally, even past the pool's limit (a grow
// the slack does not cover calls the reservation's Grow, rounded up to a
// multiple of the quantum). It panics if n is negative or the account is
// closed.
func (a *Account) Grow(n int64) {
	if n >= 0 && n <= a.slack {
		a.slack -= n
		return
	}
	if n < 0 {
		panic(fmt.Sprintf("pool: Grow(%d): negative size", n))
	}
	if a.Closed() {
		panic(fmt.Sprintf("pool: Grow(%d) on %s: %v", n, a.describe(), ErrClosed))
	}
	_ = a.cross(n, true)
}

// cross grows by n with the reservation's help: the slack is taken aside,
// the reservation grows by the rest rounded up (force: Grow; otherwise
// TryGrow, retried exactly if the rounded ask is refused), and the result
// is booked. With an owner's lock it is released around the reservation's
// call. A panic from the reservation (a panicking upstream) puts the slack
// back, takes the lock again and propagates.
func (a *Account) cross(n int64, force bool) error {
	taken := a.slack
	a.slack = 0
	a.setHeld(a.held - taken)
	need := n - taken
	ask := a.roundUp(need)
	locked, booked := true, false
	defer func() {
		if !locked {
			a.lock.Lock()
		}
		if !booked && !a.Closed() {
			a.slack += taken
			a.setHeld(a.held + taken)
		}
	}()
	if a.lock != nil {
		a.lock.Unlock()
		locked = false
	}
	var err error
	if force {
		a.res.Grow(ask)
	} else if err = a.res.TryGrow(ask); err != nil && ask != need {
		ask = need
		err = a.res.TryGrow(ask)
	}
	if a.lock != nil {
		a.lock.Lock()
		locked = true
	}
	if err != nil {
		return err
	}
	// A spill meanwhile may have moved bytes between used and slack (or
	// given the slack back), never the bytes taken aside or just granted:
	// used grows by n, and the rest of them is slack.
	a.slack += taken + ask - n
	a.setHeld(a.held + taken + ask)
	booked = true
	a.trim()
	return nil
}

// Shrink subtracts n from Used; the bytes go to the slack, and if the
// slack then exceeds twice the quantum, all but one quantum goes back to
// the reservation. It panics if n is negative, if n exceeds Used (with the
// reservation's text, "Cannot free the capacity n out of allocated size
// s"), or if the account is closed; nothing changes then.
func (a *Account) Shrink(n int64) {
	// The fast path, small enough to inline: 0 <= n <= limit − slack (a
	// negative n is a huge unsigned one; a closed account's bound is 0).
	if uint64(n) < uint64(a.limit-a.slack+1) {
		a.slack += n
		return
	}
	a.shrinkSlow(n)
}

func (a *Account) shrinkSlow(n int64) {
	if n < 0 {
		panic(fmt.Sprintf("pool: Shrink(%d): negative size", n))
	}
	if a.Closed() {
		panic(fmt.Sprintf("pool: Shrink(%d) on %s: %v", n, a.describe(), ErrClosed))
	}
	if used := a.Used(); n > used {
		panic(fmt.Sprintf("Cannot free the capacity %d out of allocated size %d", n, used))
	}
	a.slack += n
	a.trim()
}

// Resize grows or shrinks Used to exactly n (Grow or Shrink by the
// difference). It panics if n is negative or the account is closed.
func (a *Account) Resize(n int64) {
	if n < 0 {
		panic(fmt.Sprintf("pool: Resize(%d): negative size", n))
	}
	switch used := a.Used(); {
	case a.Closed():
		panic(fmt.Sprintf("pool: Resize(%d) on %s: %v", n, a.describe(), ErrClosed))
	case n > used:
		a.Grow(n - used)
	case n < used:
		a.Shrink(used - n)
	}
}

// TryResize grows (with TryGrow) or shrinks Used to exactly n. On error
// (a refusal, a negative n wrapping ErrInvalidSize, a closed account
// wrapping ErrClosed) the account and the pool are unchanged: the
// reservation is not cleared first, so an operator that cannot grow keeps
// what it had.
func (a *Account) TryResize(n int64) error {
	if n < 0 {
		return fmt.Errorf("pool: TryResize(%d): negative size: %w", n, ErrInvalidSize)
	}
	if a.Closed() {
		return fmt.Errorf("pool: TryResize(%d) on %s: %w", n, a.describe(), ErrClosed)
	}
	switch used := a.Used(); {
	case n > used:
		return a.TryGrow(n - used)
	case n < used:
		a.Shrink(used - n)
	}
	return nil
}

// Clear gives every byte back to the reservation, used and slack, and
// returns how many bytes the reservation shrank by. The account stays open
// and empty. Clear on a closed account returns 0.
func (a *Account) Clear() int64 {
	if a.Closed() {
		return 0
	}
	n := a.held
	a.slack = 0
	a.setHeld(0)
	if n > 0 {
		a.res.Shrink(n)
	}
	return n
}

// Spill answers a request to free target bytes slack first, as a
// consumer's Spiller: it gives the slack back to the reservation, and only
// if that falls short of target calls spill with the rest (spill frees the
// operator's data and Shrinks the account by what it frees), then gives
// back the slack that left too, so nothing of what spill freed stays
// local. It returns the bytes the reservation shrank by, and spill's error.
// A slack a crossing grow has taken aside is not given back (that grow is
// about to use it). A closed account returns 0.
func (a *Account) Spill(target int64, spill func(rest int64) error) (int64, error) {
	if a.Closed() {
		return 0, nil
	}
	freed := a.ReleaseSlack()
	if freed >= target || spill == nil {
		return freed, nil
	}
	// What spill shrinks goes to the slack (past 2Q, part of it straight
	// back to the reservation), and the slack goes back below: the
	// reservation shrinks by exactly what Used fell by.
	used := a.Used()
	err := spill(target - freed)
	a.ReleaseSlack()
	return freed + used - a.Used(), err
}

// ReleaseSlack gives the whole slack back to the reservation and returns
// it; what the owner uses stays reserved.
func (a *Account) ReleaseSlack() int64 {
	if a.slack <= 0 { // none, or closed
		return 0
	}
	n := a.slack
	a.slack = 0
	a.setHeld(a.held - n)
	a.res.Shrink(n)
	return n
}

// Close gives every byte back and closes the reservation (unregistering
// the consumer if it was the registration's last). A second Close is a
// no-op; every other method of a closed account fails (Try forms, with
// ErrClosed) or panics.
func (a *Account) Close() {
	if a.Closed() {
		return
	}
	a.held, a.slack, a.maxSlack, a.limit = 0, -1, -1, -2
	a.res.Close()
}

// Closed reports whether Close has been called.
func (a *Account) Closed() bool { return a.maxSlack < 0 }

// String describes the account for logs and panics.
func (a *Account) String() string {
	return fmt.Sprintf("account(%s, used: %d, slack: %d)", a.res.Consumer(), a.Used(), a.Slack())
}

// setHeld sets held and the shrink fast path's limit with it.
func (a *Account) setHeld(h int64) {
	a.held = h
	a.limit = min(h, a.maxSlack)
}

// trim gives back all but one quantum of a slack above twice the quantum.
func (a *Account) trim() {
	if a.slack <= a.maxSlack {
		return
	}
	excess := a.slack - a.quantum
	a.slack = a.quantum
	a.setHeld(a.held - excess)
	a.res.Shrink(excess)
}

// roundUp rounds need up to a multiple of the quantum (need itself if
// that would overflow).
func (a *Account) roundUp(need int64) int64 {
	rem := need % a.quantum
	if rem == 0 || need > 1<<62 {
		return need
	}
	return need + a.quantum - rem
}

func (a *Account) describe() string {
	if a.Closed() {
		return fmt.Sprintf("closed account of %s", a.res.Consumer())
	}
	return fmt.Sprintf("account of %s", a.res.Consumer())
}
