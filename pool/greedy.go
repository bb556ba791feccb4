package pool

import (
	"fmt"
	"sync/atomic"
)

// greedyPool is DataFusion's GreedyMemoryPool: first come, first served up
// to a fixed size. It is safe for concurrent use; TryGrow is a
// compare-and-swap loop on one counter and takes no lock.
type greedyPool struct {
	meter
	// size is the ceiling TryGrow enforces; immutable after construction.
	size int64
	// used is the number of bytes recorded. Grow may push it past size;
	// TryGrow never does.
	used atomic.Int64
}

// NewGreedy returns a pool that grants TryGrow requests first come, first
// served while the total stays within size bytes. Grow is never refused and
// may take the total past size; after that every TryGrow fails, even a
// zero-byte one, until enough is shrunk (as in DataFusion). It works well
// when at most one consumer spills; with several spillers use NewFair. It
// panics if size is negative.
func NewGreedy(size int64) Pool {
	if size < 0 {
		panic(fmt.Sprintf("pool: NewGreedy(%d): negative size", size))
	}
	p := &greedyPool{size: size}
	p.meter.init("greedy", p.used.Load)
	return p
}

// Name implements Pool.
func (p *greedyPool) Name() string { return "greedy" }

// Register implements Pool; the greedy pool keeps no per-consumer state.
func (p *greedyPool) Register(*Consumer) {}

// Unregister implements Pool; the greedy pool keeps no per-consumer state.
func (p *greedyPool) Unregister(*Consumer) {}

// Grow implements Pool: an unconditional add.
func (p *greedyPool) Grow(_ *Reservation, n int64) {
	if now := p.used.Add(n); p.risesPast(now) {
		p.riseOrUndo(now, func() { p.used.Add(-n) })
	}
}

// Shrink implements Pool.
func (p *greedyPool) Shrink(_ *Reservation, n int64) {
	p.fall(p.used.Add(-n))
}

// TryGrow implements Pool. It records n bytes if the total stays within the
// pool's size; otherwise it returns insufficientCapacity (wrapping
// ErrResourcesExhausted) reporting size-used as available, and records
// nothing.
func (p *greedyPool) TryGrow(r *Reservation, n int64) error {
	for {
		used := p.used.Load()
		// n > size-used rather than used+n > size: no overflow for a huge n.
		// After Grow went past size, size-used is negative and even n == 0
		// is refused, as in DataFusion.
		if n > p.size-used {
			return insufficientCapacity(r, n, max(p.size-used, 0), p)
		}
		if p.used.CompareAndSwap(used, used+n) {
			if now := used + n; p.risesPast(now) {
				p.riseOrUndo(now, func() { p.used.Add(-n) })
			}
			return nil
		}
	}
}

// Reserved implements Pool.
func (p *greedyPool) Reserved() int64 { return p.used.Load() }

// Limit implements Pool: Finite(size).
func (p *greedyPool) Limit() Limit { return Limit{Kind: Finite, Bytes: p.size} }

// String implements Pool in DataFusion's form:
// "greedy(used: 95.0 B, pool_size: 100.0 B)".
func (p *greedyPool) String() string {
	return "greedy(used: " + HumanReadableSize(p.used.Load()) +
		", pool_size: " + HumanReadableSize(p.size) + ")"
}

var (
	_ Pool    = (*greedyPool)(nil)
	_ Watcher = (*greedyPool)(nil)
)
