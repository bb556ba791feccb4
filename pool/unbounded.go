package pool

import "sync/atomic"

// unboundedPool is DataFusion's UnboundedMemoryPool: it counts reserved
// bytes and never refuses. It is safe for concurrent use; all its state is
// one atomic counter (plus the meter).
type unboundedPool struct {
	meter
	// used is the number of bytes recorded; written with atomic adds only.
	used atomic.Int64
}

// NewUnbounded returns a pool that never refuses: TryGrow always succeeds
// and Limit is Infinite. It still counts reserved bytes, keeps a high-water
// mark and fires threshold notifications, which makes it the pool to use
// when memory should be observed rather than limited. As in DataFusion, a
// Shrink of more than is recorded is not checked here (Reservation already
// refuses to shrink below zero); the count would go negative.
func NewUnbounded() Pool {
	p := &unboundedPool{}
	p.meter.init("unbounded", p.used.Load)
	return p
}

// Name implements Pool.
func (p *unboundedPool) Name() string { return "unbounded" }

// Register implements Pool; the unbounded pool keeps no per-consumer state.
func (p *unboundedPool) Register(*Consumer) {}

// Unregister implements Pool; the unbounded pool keeps no per-consumer state.
func (p *unboundedPool) Unregister(*Consumer) {}

// Grow implements Pool.
func (p *unboundedPool) Grow(_ *Reservation, n int64) {
	if now := p.used.Add(n); p.risesPast(now) {
		p.riseOrUndo(now, func() { p.used.Add(-n) })
	}
}

// Shrink implements Pool.
func (p *unboundedPool) Shrink(_ *Reservation, n int64) {
	p.fall(p.used.Add(-n))
}

// TryGrow implements Pool. It never fails.
func (p *unboundedPool) TryGrow(r *Reservation, n int64) error {
	p.Grow(r, n)
	return nil
}

// Reserved implements Pool.
func (p *unboundedPool) Reserved() int64 { return p.used.Load() }

// Limit implements Pool: Infinite.
func (p *unboundedPool) Limit() Limit { return Limit{Kind: Infinite} }

// String implements Pool in DataFusion's form: "unbounded(used: 2.0 KB)".
func (p *unboundedPool) String() string {
	return "unbounded(used: " + HumanReadableSize(p.used.Load()) + ")"
}

var (
	_ Pool    = (*unboundedPool)(nil)
	_ Watcher = (*unboundedPool)(nil)
)
