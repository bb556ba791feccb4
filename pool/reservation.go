package pool

import (
	"fmt"
	"sync/atomic"
)

// registration is shared by every reservation derived from one
// Consumer.Register call (through Split, Take and NewEmpty). The pool sees
// exactly one Register and one Unregister per registration.
type registration struct {
	consumer *Consumer
	// live counts the registration's reservations that are not closed; the
	// Close that brings it to zero unregisters the consumer.
	live atomic.Int64
}

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
// ErrClosed (Try forms); a second Close is a no-op. The zero Reservation is
// not valid; get one from Consumer.Register.
type Reservation struct {
	reg *registration
	// pool is the pool the registration was made with, held by every
	// reservation of it (not by the registration, which would cost every
	// call one more dependent load on the grow/shrink hot path).
	pool   Pool
	size   atomic.Int64
	closed atomic.Bool
}

// Size is the number of bytes currently reserved.
func (r *Reservation) Size() int64 { return r.size.Load() }

// Consumer is the consumer this reservation belongs to.
func (r *Reservation) Consumer() *Consumer { return r.reg.consumer }

// Pool is the pool this reservation's consumer is registered with.
func (r *Reservation) Pool() Pool { return r.pool }

// TryGrow reserves n more bytes, or returns an error and changes nothing.
// A refusal wraps ErrResourcesExhausted; a negative n wraps ErrInvalidSize;
// a closed reservation wraps ErrClosed; an upstream failure (a Java
// exception, for pools bridged to Spark) is returned wrapped as it is.
func (r *Reservation) TryGrow(n int64) error {
	if n < 0 {
		return fmt.Errorf("pool: TryGrow(%d): negative size: %w", n, ErrInvalidSize)
	}
	if r.closed.Load() {
		return fmt.Errorf("pool: TryGrow(%d) on %s: %w", n, r.describe(), ErrClosed)
	}
	if err := r.pool.TryGrow(r, n); err != nil {
		return err
	}
	r.size.Add(n)
	return nil
}

// Grow reserves n more bytes unconditionally, even past the pool's limit.
// It panics if n is negative or the reservation is closed.
func (r *Reservation) Grow(n int64) {
	if n < 0 {
		panic(fmt.Sprintf("pool: Grow(%d): negative size", n))
	}
	r.mustBeOpen("Grow", n)
	r.pool.Grow(r, n)
	r.size.Add(n)
}

// Shrink gives back n bytes. It panics if n is negative, if n exceeds Size
// (with DataFusion's message "Cannot free the capacity n out of allocated
// size s"), or if the reservation is closed.
func (r *Reservation) Shrink(n int64) {
	if n < 0 {
		panic(fmt.Sprintf("pool: Shrink(%d): negative size", n))
	}
	r.mustBeOpen("Shrink", n)
	if prev, ok := r.subtract(n); !ok {
		panic(fmt.Sprintf("Cannot free the capacity %d out of allocated size %d", n, prev))
	}
	r.pool.Shrink(r, n)
}

// TryShrink gives back n bytes and returns the new size. If n is negative
// or exceeds Size, or the reservation is closed, it returns an error
// (wrapping ErrInvalidSize or ErrClosed) and changes nothing.
func (r *Reservation) TryShrink(n int64) (int64, error) {
	if n < 0 {
		return r.Size(), fmt.Errorf("pool: TryShrink(%d): negative size: %w", n, ErrInvalidSize)
	}
	if r.closed.Load() {
		return 0, fmt.Errorf("pool: TryShrink(%d) on %s: %w", n, r.describe(), ErrClosed)
	}
	prev, ok := r.subtract(n)
	if !ok {
		//lint:ignore ST1005 DataFusion's exact wording, which users grep for.
		return prev, fmt.Errorf("Cannot free the capacity %d out of allocated size %d: %w", n, prev, ErrInvalidSize)
	}
	r.pool.Shrink(r, n)
	return prev - n, nil
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
	if r.closed.Load() {
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
	old := r.size.Swap(0)
	if old != 0 {
		r.pool.Shrink(r, old)
	}
	return old
}

// Split moves n bytes into a new reservation of the same registration and
// returns it. The pool is not called: the bytes stay with the consumer. It
// panics if n is negative or exceeds Size, or the reservation is closed.
func (r *Reservation) Split(n int64) *Reservation {
	if n < 0 {
		panic(fmt.Sprintf("pool: Split(%d): negative size", n))
	}
	r.mustBeOpen("Split", n)
	if prev, ok := r.subtract(n); !ok {
		panic(fmt.Sprintf("pool: Split(%d): exceeds reservation size %d", n, prev))
	}
	s := r.sibling()
	s.size.Store(n)
	return s
}

// NewEmpty returns a new, empty reservation of the same registration. The
// pool is not called. It panics if the reservation is closed.
func (r *Reservation) NewEmpty() *Reservation {
	r.mustBeOpen("NewEmpty", 0)
	return r.sibling()
}

// Take moves every byte into a new reservation of the same registration and
// returns it, leaving this one empty. The pool is not called. It panics if
// the reservation is closed.
func (r *Reservation) Take() *Reservation {
	r.mustBeOpen("Take", 0)
	s := r.sibling()
	s.size.Store(r.size.Swap(0))
	return s
}

// Close frees the reservation's bytes and closes it. The Close that closes
// the last open reservation of a registration unregisters the consumer from
// the pool, after that final free. A second Close is a no-op.
func (r *Reservation) Close() {
	if r.closed.Swap(true) {
		return
	}
	r.Free()
	if r.reg.live.Add(-1) == 0 {
		r.pool.Unregister(r.reg.consumer)
	}
}

// Closed reports whether Close has been called.
func (r *Reservation) Closed() bool { return r.closed.Load() }

// String describes the reservation for logs and panics.
func (r *Reservation) String() string {
	return fmt.Sprintf("reservation(%s, size: %d)", r.reg.consumer, r.Size())
}

// subtract takes n off the size unless that would go below zero; it returns
// the size before and whether it succeeded.
func (r *Reservation) subtract(n int64) (prev int64, ok bool) {
	for {
		prev = r.size.Load()
		if n > prev {
			return prev, false
		}
		if r.size.CompareAndSwap(prev, prev-n) {
			return prev, true
		}
	}
}

func (r *Reservation) sibling() *Reservation {
	r.reg.live.Add(1)
	return &Reservation{reg: r.reg, pool: r.pool}
}

func (r *Reservation) mustBeOpen(op string, n int64) {
	if r.closed.Load() {
		panic(fmt.Sprintf("pool: %s(%d) on %s: %v", op, n, r.describe(), ErrClosed))
	}
}

func (r *Reservation) describe() string {
	return fmt.Sprintf("closed reservation of %s", r.reg.consumer)
}
