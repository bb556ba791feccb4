package pool

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// registration is shared by every reservation derived from one
// Consumer.Register call (through Split, Take and NewEmpty). The pool sees
// exactly one Register and one Unregister per registration.
type registration struct {
	consumer *Consumer
	// tracked, fair and unified are shortcuts to the consumer's entry in
	// the TrackConsumers, fair and unified pools of the stack the
	// registration was made on (found through decorators with As), so that
	// their hot paths need no map lookup. Set by Consumer.Register before
	// the first reservation exists, never changed; each pool uses one only
	// if it is its own (the entry names its pool), and an entry stays while
	// the registration lives.
	tracked *trackedConsumer
	fair    *fairSpiller
	unified *consumerBytes
	// live counts the registration's reservations that are not closed, plus
	// Split, Take and NewEmpty calls between taking their slot and learning
	// whether the reservation they split is still open. Raised only from a
	// positive value (a compare-and-swap loop), so once it has reached zero
	// the registration is over for good; whoever brings it to zero
	// unregisters the consumer, after that reservation's final free.
	live atomic.Int64
}

// closedSize is the value of Reservation.state once Close has run: sizes
// are never negative, so one word says both "closed" and the size, and
// every change of the size can check for Close atomically with it.
const closedSize = -1

// Reservation is a consumer's claim on a pool: a byte count that the pool
// has accepted. It is safe for concurrent use by multiple goroutines, but
// Resize and TryResize read the size and then grow or shrink by the
// difference, so they are not atomic with respect to concurrent changes of
// the same reservation.
//
// Ordering contract, which pools rely on: TryGrow and Grow call the pool
// first and add to the size afterwards, so the pool sees the size before the
// request; Shrink subtracts first and then calls the pool, so the pool sees
// the size after. Zero-byte calls still reach the pool. Split, Take and
// NewEmpty never call the pool: the bytes stay with the same consumer.
//
// Close a Reservation when done with it: Close frees its bytes and, for the
// last open reservation of a registration, unregisters the consumer. Using a
// closed reservation panics (infallible forms) or returns an error wrapping
// ErrClosed (Try forms); a second Close is a no-op.
//
// Close is atomic with respect to every other method. A grow that the pool
// has booked but the reservation has not yet added when Close lands (a grow
// racing Close on another goroutine, or a threshold callback closing the
// reservation it fires for) is handed back to the pool and reported as
// ErrClosed (TryGrow) or a panic (Grow), so it leaves nothing in the pool or
// upstream; a grow that added its bytes first is freed by Close. No sibling
// is born after the last Close of a registration. A panic raised by the pool
// (an upstream, spiller or threshold callback panicking) leaves the size
// unchanged and reaches the caller as it was raised.
//
// The zero Reservation is not valid; get one from Consumer.Register.
type Reservation struct {
	reg *registration
	// pool is the pool the registration was made with, held by every
	// reservation of it (not by the registration, which would cost every
	// call one more dependent load on the grow/shrink hot path).
	pool Pool
	// state is the size in bytes, or closedSize once Close has run. Every
	// change is a compare-and-swap that fails on closedSize, so no grow,
	// shrink or split lands on a closed reservation.
	state atomic.Int64
	// optional counts the WithoutWaiting calls under way (see there).
	optional atomic.Int32
}

// Size is the number of bytes currently reserved (0 once closed).
func (r *Reservation) Size() int64 { return max(r.state.Load(), 0) }

// Consumer is the consumer this reservation belongs to.
func (r *Reservation) Consumer() *Consumer { return r.reg.consumer }

// Pool is the pool this reservation's consumer is registered with.
func (r *Reservation) Pool() Pool { return r.pool }

// TryGrow reserves n more bytes, or returns an error and changes nothing.
// A refusal wraps ErrResourcesExhausted; a negative n wraps ErrInvalidSize;
// a closed reservation (also one closed while the pool was deciding) wraps
// ErrClosed; an upstream failure (a Java exception, for pools bridged to
// Spark) is returned wrapped as it is.
func (r *Reservation) TryGrow(n int64) error {
	if n < 0 {
		return fmt.Errorf("pool: TryGrow(%d): negative size: %w", n, ErrInvalidSize)
	}
	if r.state.Load() == closedSize {
		return fmt.Errorf("pool: TryGrow(%d) on %s: %w", n, r.describe(), ErrClosed)
	}
	if err := r.pool.TryGrow(r, n); err != nil {
		return err
	}
	if !r.add(n) {
		r.pool.Shrink(r, n)
		return fmt.Errorf("pool: TryGrow(%d) on %s: closed while growing: %w", n, r.describe(), ErrClosed)
	}
	return nil
}

// WithoutWaiting runs f with r's TryGrow calls marked optional, and returns
// f's error. An optional TryGrow that a unified pool would have to borrow
// for is put to the pool's ImmediateAdmission without waiting: where the
// process has no room for it (the pod guard's reserve would be eaten into),
// it is refused at once with an error wrapping ErrResourcesExhausted, where
// a plain TryGrow would wait while the guard makes other consumers spill,
// and be let through short if nothing could. It is for growth the consumer
// can do without, as Velox's maybeReserve: a merge that can take fewer
// runs at once, a buffer larger than it needs. Elsewhere (slack covers the
// grow, no admission, other pools) TryGrow is unchanged.
//
// The mark is r's, not the goroutine's: grow r on other goroutines while f
// runs only if those grows may be refused the same way.
func (r *Reservation) WithoutWaiting(f func() error) error {
	r.optional.Add(1)
	defer r.optional.Add(-1)
	return f()
}

// Grow reserves n more bytes unconditionally, even past the pool's limit.
// It panics if n is negative or the reservation is closed (also if it is
// closed while the pool books the bytes, which are then handed back).
func (r *Reservation) Grow(n int64) {
	if n < 0 {
		panic(fmt.Sprintf("pool: Grow(%d): negative size", n))
	}
	r.mustBeOpen("Grow", n)
	r.pool.Grow(r, n)
	if !r.add(n) {
		r.pool.Shrink(r, n)
		panic(fmt.Sprintf("pool: Grow(%d) on %s: closed while growing: %v", n, r.describe(), ErrClosed))
	}
}

// GrowReporting is Grow for a caller that must hand on what went wrong
// upstream rather than leave it to the pool's log (the JNI bridge rethrows
// the Java exception an upcall raised). The bytes are recorded exactly as
// Grow records them, also when upstream fails (they are overcommit then),
// and that failure is returned. Where Grow panics, it returns an error
// instead and changes nothing: a negative n wraps ErrInvalidSize, a closed
// reservation ErrClosed (also one closed while the pool booked the bytes,
// which are then handed back).
func (r *Reservation) GrowReporting(n int64) error {
	if n < 0 {
		return fmt.Errorf("pool: Grow(%d): negative size: %w", n, ErrInvalidSize)
	}
	if r.state.Load() == closedSize {
		return fmt.Errorf("pool: Grow(%d) on %s: %w", n, r.describe(), ErrClosed)
	}
	err := growIn(r.pool, r, n)
	if !r.add(n) {
		return errors.Join(fmt.Errorf("pool: Grow(%d) on %s: closed while growing: %w", n, r.describe(), ErrClosed),
			err, shrinkIn(r.pool, r, n))
	}
	return err
}

// Shrink gives back n bytes. It panics if n is negative, if n exceeds Size
// (with DataFusion's message "Cannot free the capacity n out of allocated
// size s"), or if the reservation is closed.
func (r *Reservation) Shrink(n int64) {
	if n < 0 {
		panic(fmt.Sprintf("pool: Shrink(%d): negative size", n))
	}
	switch prev, res := r.subtract(n); res {
	case subtractClosed:
		panic(fmt.Sprintf("pool: Shrink(%d) on %s: %v", n, r.describe(), ErrClosed))
	case subtractUnderflow:
		panic(fmt.Sprintf("Cannot free the capacity %d out of allocated size %d", n, prev))
	}
	r.pool.Shrink(r, n)
}

// TryShrink gives back n bytes and returns the new size. If n is negative
// or exceeds Size, or the reservation is closed, it returns an error
// (wrapping ErrInvalidSize or ErrClosed) and changes nothing.
func (r *Reservation) TryShrink(n int64) (int64, error) {
	prev, err := r.trySubtract("TryShrink", n)
	if err != nil {
		return prev, err
	}
	r.pool.Shrink(r, n)
	return prev - n, nil
}

// ShrinkReporting is TryShrink for a caller that must hand on what went
// wrong upstream (see GrowReporting). It fails as TryShrink does, changing
// nothing; otherwise the shrink happens and a failed release is returned
// (the pool keeps those bytes owed until its next sweep).
func (r *Reservation) ShrinkReporting(n int64) error {
	if _, err := r.trySubtract("Shrink", n); err != nil {
		return err
	}
	return shrinkIn(r.pool, r, n)
}

// trySubtract takes n off the size for op, or returns the size and an
// error (wrapping ErrInvalidSize or ErrClosed) and changes nothing.
func (r *Reservation) trySubtract(op string, n int64) (int64, error) {
	if n < 0 {
		return r.Size(), fmt.Errorf("pool: %s(%d): negative size: %w", op, n, ErrInvalidSize)
	}
	prev, res := r.subtract(n)
	switch res {
	case subtractClosed:
		return 0, fmt.Errorf("pool: %s(%d) on %s: %w", op, n, r.describe(), ErrClosed)
	case subtractUnderflow:
		//lint:ignore ST1005 DataFusion's exact wording, which users grep for.
		return prev, fmt.Errorf("Cannot free the capacity %d out of allocated size %d: %w", n, prev, ErrInvalidSize)
	}
	return prev, nil
}

// Resize grows or shrinks the reservation to exactly n bytes (Grow or
// Shrink by the difference; equal is a no-op). It panics if n is negative
// or the reservation is closed.
func (r *Reservation) Resize(n int64) {
	if n < 0 {
		panic(fmt.Sprintf("pool: Resize(%d): negative size", n))
	}
	// Checked here too: with n equal to the size neither Grow nor Shrink
	// runs, and a closed reservation must still fail loudly.
	r.mustBeOpen("Resize", n)
	switch cur := r.Size(); {
	case n > cur:
		r.Grow(n - cur)
	case n < cur:
		r.Shrink(cur - n)
	}
}

// TryResize grows (with TryGrow) or shrinks the reservation to exactly n
// bytes. On error (a refusal, a negative n wrapping ErrInvalidSize, a
// closed reservation wrapping ErrClosed) the reservation and the pool are
// unchanged.
func (r *Reservation) TryResize(n int64) error {
	if n < 0 {
		return fmt.Errorf("pool: TryResize(%d): negative size: %w", n, ErrInvalidSize)
	}
	if r.state.Load() == closedSize {
		return fmt.Errorf("pool: TryResize(%d) on %s: %w", n, r.describe(), ErrClosed)
	}
	switch cur := r.Size(); {
	case n > cur:
		return r.TryGrow(n - cur)
	case n < cur:
		_, err := r.TryShrink(cur - n)
		return err
	}
	return nil
}

// Free gives back every byte and returns how many there were. The pool is
// called only if the size was non-zero, and sees size 0 during that call.
// Free on a closed reservation returns 0.
func (r *Reservation) Free() int64 {
	n, _ := r.free(false)
	return n
}

// FreeReporting is Free that returns what went wrong upstream instead of
// leaving it to the pool's log: a failed release (the bytes are freed from
// the reservation all the same, and the pool keeps them owed until its
// next sweep). See reporting.go.
func (r *Reservation) FreeReporting() (int64, error) { return r.free(true) }

func (r *Reservation) free(report bool) (int64, error) {
	for {
		old := r.state.Load()
		if old <= 0 { // empty or closed
			return 0, nil
		}
		if r.state.CompareAndSwap(old, 0) {
			return old, r.giveBack(old, report)
		}
	}
}

// giveBack hands n bytes the reservation no longer holds to the pool,
// reporting an upstream failure if report is set.
func (r *Reservation) giveBack(n int64, report bool) error {
	if report {
		return shrinkIn(r.pool, r, n)
	}
	r.pool.Shrink(r, n)
	return nil
}

// Split moves n bytes into a new reservation of the same registration and
// returns it. The pool is not called: the bytes stay with the consumer. It
// panics if n is negative or exceeds Size, or the reservation is closed.
func (r *Reservation) Split(n int64) *Reservation {
	if n < 0 {
		panic(fmt.Sprintf("pool: Split(%d): negative size", n))
	}
	r.mustBeOpen("Split", n)
	r.joinRegistration("Split", n)
	prev, res := r.subtract(n)
	if res != subtractOK {
		r.leaveRegistration()
		if res == subtractClosed {
			panic(fmt.Sprintf("pool: Split(%d) on %s: %v", n, r.describe(), ErrClosed))
		}
		panic(fmt.Sprintf("pool: Split(%d): exceeds reservation size %d", n, prev))
	}
	return r.sibling(n)
}

// NewEmpty returns a new, empty reservation of the same registration. The
// pool is not called. It panics if the reservation is closed.
func (r *Reservation) NewEmpty() *Reservation {
	r.mustBeOpen("NewEmpty", 0)
	r.joinRegistration("NewEmpty", 0)
	if r.state.Load() == closedSize {
		r.leaveRegistration()
		panic(fmt.Sprintf("pool: NewEmpty(0) on %s: %v", r.describe(), ErrClosed))
	}
	return r.sibling(0)
}

// Take moves every byte into a new reservation of the same registration and
// returns it, leaving this one empty. The pool is not called. It panics if
// the reservation is closed.
func (r *Reservation) Take() *Reservation {
	r.mustBeOpen("Take", 0)
	r.joinRegistration("Take", 0)
	for {
		old := r.state.Load()
		if old == closedSize {
			r.leaveRegistration()
			panic(fmt.Sprintf("pool: Take(0) on %s: %v", r.describe(), ErrClosed))
		}
		if r.state.CompareAndSwap(old, 0) {
			return r.sibling(old)
		}
	}
}

// Close frees the reservation's bytes and closes it. The Close that closes
// the last open reservation of a registration unregisters the consumer from
// the pool, after that final free. A second Close is a no-op. Close may be
// called from a threshold callback fired by this reservation's own grow;
// that grow then fails with ErrClosed and hands its bytes back.
func (r *Reservation) Close() { _ = r.close(false) }

// CloseReporting is Close that returns what went wrong upstream during the
// final free: a failed release (the reservation is closed all the same, and
// the pool keeps the bytes owed until its next sweep). See reporting.go.
func (r *Reservation) CloseReporting() error { return r.close(true) }

func (r *Reservation) close(report bool) error {
	old := r.state.Swap(closedSize)
	if old == closedSize {
		return nil
	}
	// Even if the final free panics (a panicking upstream), the
	// reservation is closed and its registration slot given up.
	defer r.leaveRegistration()
	if old == 0 {
		return nil
	}
	return r.giveBack(old, report)
}

// Closed reports whether Close has been called.
func (r *Reservation) Closed() bool { return r.state.Load() == closedSize }

// String describes the reservation for logs and panics.
func (r *Reservation) String() string {
	return fmt.Sprintf("reservation(%s, size: %d)", r.reg.consumer, r.Size())
}

// add adds n to the size unless the reservation is closed; it reports
// whether it did. The grow paths call it after the pool booked n, so a
// Close that landed in between is seen here and the grow handed back.
func (r *Reservation) add(n int64) bool {
	for {
		old := r.state.Load()
		if old == closedSize {
			return false
		}
		if r.state.CompareAndSwap(old, old+n) {
			return true
		}
	}
}

type subtractResult int

const (
	subtractOK subtractResult = iota
	subtractUnderflow
	subtractClosed
)

// subtract takes n off the size unless that would go below zero or the
// reservation is closed; it returns the size before and what happened.
func (r *Reservation) subtract(n int64) (prev int64, res subtractResult) {
	for {
		prev = r.state.Load()
		switch {
		case prev == closedSize:
			return 0, subtractClosed
		case n > prev:
			return prev, subtractUnderflow
		}
		if r.state.CompareAndSwap(prev, prev-n) {
			return prev, subtractOK
		}
	}
}

// joinRegistration takes a slot in the registration for a sibling about
// to be made, unless the registration is already over (its last
// reservation closed), in which case it panics.
func (r *Reservation) joinRegistration(op string, n int64) {
	for {
		live := r.reg.live.Load()
		if live <= 0 {
			panic(fmt.Sprintf("pool: %s(%d) on %s: %v", op, n, r.describe(), ErrClosed))
		}
		if r.reg.live.CompareAndSwap(live, live+1) {
			return
		}
	}
}

// leaveRegistration gives up one slot of the registration; the last one
// unregisters the consumer.
func (r *Reservation) leaveRegistration() {
	if r.reg.live.Add(-1) == 0 {
		r.pool.Unregister(r.reg.consumer)
	}
}

// sibling returns a new reservation of size n in the slot joinRegistration
// took.
func (r *Reservation) sibling(n int64) *Reservation {
	s := &Reservation{reg: r.reg, pool: r.pool}
	s.state.Store(n)
	return s
}

func (r *Reservation) mustBeOpen(op string, n int64) {
	if r.state.Load() == closedSize {
		panic(fmt.Sprintf("pool: %s(%d) on %s: %v", op, n, r.describe(), ErrClosed))
	}
}

func (r *Reservation) describe() string {
	if r.Closed() {
		return fmt.Sprintf("closed reservation of %s", r.reg.consumer)
	}
	return fmt.Sprintf("reservation of %s", r.reg.consumer)
}
