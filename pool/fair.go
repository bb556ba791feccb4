package pool

import (
	"fmt"
	"sync"
)

// fairPool is DataFusion's FairSpillPool with the spill share computed per
// consumer (see NewFair). It is safe for concurrent use: every operation
// takes mu once, briefly, and never calls out while holding it.
type fairPool struct {
	meter
	// size is the pool's ceiling; immutable after construction.
	size int64

	mu struct {
		sync.Mutex
		// numSpill is the number of spillable consumers with at least one
		// live registration: the divisor of the spill share.
		numSpill int64
		// spillable is the total reserved by consumers that can spill.
		spillable int64
		// unspillable is the total reserved by consumers that cannot.
		unspillable int64
		// spillers holds the spillable consumers' totals across all their
		// sibling reservations. Unspillable consumers have no entry: they
		// are served first come, first served and need no share.
		spillers map[*Consumer]*fairSpiller
		// last is the entry spillerLocked returned last: a one-entry cache
		// in front of the map for the common run of calls by one consumer.
		last *fairSpiller
		// share caches the spill share for the (available, numSpill) it
		// was computed from: a run of grows between registrations and
		// unspillable changes pays two compares instead of a 64-bit
		// division each.
		share struct{ available, num, share int64 }
	}
}

// fairSpiller is one spillable consumer's state; guarded by fairPool.mu.
type fairSpiller struct {
	c *Consumer
	// pool is the pool whose entry this is: a registration's shortcut to
	// it (registration.fair) is used only by that pool.
	pool *fairPool
	// registrations counts live Register calls for this consumer.
	registrations int64
	// reserved is what the pool recorded for the consumer, summed over all
	// the reservations of all its registrations.
	reserved int64
}

// held is what the pool recorded for the consumer (0 for no entry). The
// caller holds fairPool.mu.
func (s *fairSpiller) held() int64 {
	if s == nil {
		return 0
	}
	return s.reserved
}

// NewFair returns DataFusion's FairSpillPool: a pool of size bytes in which
// unspillable consumers are served first come, first served, and each
// spillable consumer may hold at most an equal share of what the
// unspillable ones leave:
//
//	share = (size - unspillable) / numSpill
//
// where numSpill counts the spillable consumers currently registered. The
// share is a per-consumer limit: all the sibling reservations of one
// consumer (Split, Take, NewEmpty) draw on one share together, and a
// consumer registered more than once is counted, and limited, once. This
// differs from DataFusion, which checks each reservation against the share
// on its own, so siblings together could exceed it (apache/datafusion#25172,
// apache/datafusion-comet#5961). Only spillable consumers divide the spill
// share (apache/datafusion-comet#5465).
//
// As in DataFusion, the divisor changes only on Register and Unregister:
// freeing a reservation without closing it keeps its consumer's place, so
// the other spillers' shares do not grow. Grow is never refused and may take
// the total past size. NewFair panics if size is negative.
func NewFair(size int64) Pool {
	if size < 0 {
		panic(fmt.Sprintf("pool: NewFair(%d): negative size", size))
	}
	p := &fairPool{size: size}
	p.mu.spillers = make(map[*Consumer]*fairSpiller)
	p.meter.init("fair", p.Reserved)
	return p
}

// Name implements Pool.
func (p *fairPool) Name() string { return "fair" }

// Register implements Pool: a spillable consumer's first registration adds
// one to the divisor of the spill share.
func (p *fairPool) Register(c *Consumer) {
	if !c.CanSpill() {
		return
	}
	p.mu.Lock()
	s := p.spillerLocked(c)
	if s.registrations == 0 {
		p.mu.numSpill++
	}
	s.registrations++
	p.mu.Unlock()
}

// Unregister implements Pool: a spillable consumer's last unregistration
// takes one from the divisor. It panics if the consumer is not registered
// (DataFusion panics on the same underflow).
func (p *fairPool) Unregister(c *Consumer) {
	if !c.CanSpill() {
		return
	}
	p.mu.Lock()
	s := p.mu.spillers[c]
	if s == nil || s.registrations == 0 {
		p.mu.Unlock()
		panic(fmt.Sprintf("pool: fair Unregister(%s): consumer is not registered", c))
	}
	s.registrations--
	if s.registrations == 0 {
		p.mu.numSpill--
		if s.reserved == 0 {
			p.deleteLocked(c)
		}
	}
	p.mu.Unlock()
}

// Grow implements Pool: an unconditional add to the consumer's bucket.
func (p *fairPool) Grow(r *Reservation, n int64) {
	c := r.Consumer()
	p.mu.Lock()
	if c.CanSpill() {
		p.spillerOfLocked(r).reserved += n
		p.mu.spillable += n
	} else {
		p.mu.unspillable += n
	}
	now := p.totalLocked()
	p.mu.Unlock()
	if p.risesPast(now) {
		p.riseUndoable(c, n, now)
	}
}

// Shrink implements Pool. Giving back more than the pool recorded for the
// consumer is an accounting bug elsewhere: it panics with Comet's wording
// and changes nothing.
func (p *fairPool) Shrink(r *Reservation, n int64) {
	c := r.Consumer()
	p.mu.Lock()
	if !c.CanSpill() {
		// Unspillable consumers have no entry: the bucket is what the pool
		// recorded for them.
		if n > p.mu.unspillable {
			p.mu.Unlock()
			panic(releaseOverflow(n, p.mu.unspillable, c))
		}
		p.mu.unspillable -= n
	} else {
		s := p.lookupOfLocked(r)
		if held := s.held(); n > held {
			p.mu.Unlock()
			panic(releaseOverflow(n, held, c))
		}
		p.unbookSpillerLocked(s, n)
	}
	now := p.totalLocked()
	p.mu.Unlock()
	p.fall(now)
}

// releaseOverflow is the panic message of a shrink of more than the pool
// recorded for the consumer, in Comet's words.
func releaseOverflow(n, held int64, c *Consumer) string {
	return fmt.Sprintf("Failed to release %d bytes where only %d bytes tracked for the consumer %s", n, held, c)
}

// unbookLocked takes n bytes off c's bucket (a grow taken back). The
// caller holds p.mu.
func (p *fairPool) unbookLocked(c *Consumer, n int64) {
	if !c.CanSpill() {
		p.mu.unspillable -= n
		return
	}
	if s := p.lookupLocked(c); s != nil {
		p.unbookSpillerLocked(s, n)
	} else {
		p.mu.spillable -= n
	}
}

// unbookSpillerLocked takes n bytes off spillable entry s, and forgets a
// consumer whose last registration is gone once it holds nothing (a grow
// racing the last Close is handed back after Unregister). The caller holds
// p.mu.
func (p *fairPool) unbookSpillerLocked(s *fairSpiller, n int64) {
	s.reserved -= n
	p.mu.spillable -= n
	if s.registrations == 0 && s.reserved == 0 {
		p.deleteLocked(s.c)
	}
}

// riseUndoable is the meter's slow path after c's grow of n bytes (the
// caller checked risesPast, which inlines); a panicking threshold callback
// takes the grow back out before the panic goes on.
func (p *fairPool) riseUndoable(c *Consumer, n, now int64) {
	p.riseOrUndo(now, func() {
		p.mu.Lock()
		p.unbookLocked(c, n)
		p.mu.Unlock()
	})
}

// TryGrow implements Pool. A spillable consumer is refused if its total
// across sibling reservations would pass its share; the refusal reports as
// available the share less what the siblings hold, i.e. what this
// reservation may still grow to (for a lone reservation that is exactly
// DataFusion's figure, the share). An unspillable consumer is refused if the
// pool's total would pass size. A refusal wraps ErrResourcesExhausted and
// records nothing.
func (p *fairPool) TryGrow(r *Reservation, n int64) error {
	c := r.Consumer()
	p.mu.Lock()
	if c.CanSpill() {
		share := p.shareLocked(max(p.size-p.mu.unspillable, 0))
		s := p.spillerOfLocked(r)
		// n > share-held rather than held+n > share: no overflow for a huge n.
		if n > share-s.reserved {
			siblings := s.reserved - r.Size()
			if s.registrations == 0 && s.reserved == 0 {
				p.deleteLocked(c) // made just now for an unregistered consumer
			}
			p.mu.Unlock()
			return insufficientCapacity(r, n, max(share-siblings, 0), p)
		}
		s.reserved += n
		p.mu.spillable += n
	} else {
		available := max(p.size-(p.mu.unspillable+p.mu.spillable), 0)
		if n > available {
			p.mu.Unlock()
			return insufficientCapacity(r, n, available, p)
		}
		p.mu.unspillable += n
	}
	now := p.totalLocked()
	p.mu.Unlock()
	if p.risesPast(now) {
		p.riseUndoable(c, n, now)
	}
	return nil
}

// shareLocked is DataFusion's spill share: available over the spillable
// consumers (all of it if there are none), from the cache when neither has
// changed. The caller holds p.mu.
func (p *fairPool) shareLocked(available int64) int64 {
	c := &p.mu.share
	if c.available != available || c.num != p.mu.numSpill {
		c.available, c.num, c.share = available, p.mu.numSpill, available
		if c.num > 0 {
			c.share = available / c.num
		}
	}
	return c.share
}

// Reserved implements Pool. It takes the pool's mutex: an atomic mirror of
// the total would cost every grow and shrink one more locked instruction
// (two per pair, the difference to DataFusion's FairSpillPool in
// bench/RESULTS.md), and Reserved is rarely on a hot path.
func (p *fairPool) Reserved() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.spillable + p.mu.unspillable
}

// Limit implements Pool: Finite(size).
func (p *fairPool) Limit() Limit { return Limit{Kind: Finite, Bytes: p.size} }

// String implements Pool in DataFusion's form, which shows no usage:
// "fair(pool_size: 100.0 B)".
func (p *fairPool) String() string {
	return "fair(pool_size: " + HumanReadableSize(p.size) + ")"
}

// spillerLocked returns c's entry, creating it if needed. The caller holds
// p.mu. An entry created by a grow of a consumer that was never registered
// (possible only when Pool methods are called directly) does not count in
// numSpill, as in DataFusion.
func (p *fairPool) spillerLocked(c *Consumer) *fairSpiller {
	if s := p.mu.last; s != nil && s.c == c {
		return s
	}
	s := p.mu.spillers[c]
	if s == nil {
		s = &fairSpiller{c: c, pool: p}
		p.mu.spillers[c] = s
	}
	p.mu.last = s
	return s
}

// spillerOfLocked is spillerLocked for r's consumer, through r's
// registration when it was made on p: a run of calls rotating through many
// consumers then pays no map lookup. The entry of a live registration is
// never deleted (its registrations count is positive). The caller holds
// p.mu.
func (p *fairPool) spillerOfLocked(r *Reservation) *fairSpiller {
	if s := r.reg.fair; s != nil && s.pool == p {
		return s
	}
	return p.spillerLocked(r.Consumer())
}

// lookupOfLocked is lookupLocked for r's consumer, through r's registration
// as spillerOfLocked. The caller holds p.mu.
func (p *fairPool) lookupOfLocked(r *Reservation) *fairSpiller {
	if s := r.reg.fair; s != nil && s.pool == p {
		return s
	}
	return p.lookupLocked(r.Consumer())
}

// entryOf returns c's entry (nil for an unspillable consumer), for
// Consumer.Register to keep in the registration it makes on p.
func (p *fairPool) entryOf(c *Consumer) *fairSpiller {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.spillers[c]
}

// lookupLocked returns c's entry, or nil, through the one-entry cache. The
// caller holds p.mu.
func (p *fairPool) lookupLocked(c *Consumer) *fairSpiller {
	if s := p.mu.last; s != nil && s.c == c {
		return s
	}
	return p.mu.spillers[c]
}

// deleteLocked forgets c's entry (and the cache, if it holds it). The caller
// holds p.mu.
func (p *fairPool) deleteLocked(c *Consumer) {
	delete(p.mu.spillers, c)
	if p.mu.last != nil && p.mu.last.c == c {
		p.mu.last = nil
	}
}

// totalLocked returns the new total for the meter. The caller holds
// p.mu.
func (p *fairPool) totalLocked() int64 {
	return p.mu.spillable + p.mu.unspillable
}

var (
	_ Pool    = (*fairPool)(nil)
	_ Watcher = (*fairPool)(nil)
)
