package pool

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
)

// DataFusion's test_fair, split into one test per behaviour with the same
// pool (100 bytes) and the same numbers and messages.

// fairAfterShrink is test_fair's state after its first shrinks: r1
// (unspillable) holds 20, r2 (the only spiller) holds 10.
func fairAfterShrink(t *testing.T) (p Pool, r1, r2 *Reservation) {
	t.Helper()
	p = NewFair(100)
	r1 = NewConsumer("unspillable").Register(p)
	r2 = NewConsumer("r2").WithCanSpill(true).Register(p)
	r1.Grow(20)
	r2.Grow(10)
	return p, r1, r2
}

// TestFairGrowIsNeverRefusedEvenPastSize.
func TestFairGrowIsNeverRefusedEvenPastSize(t *testing.T) {
	p := NewFair(100)
	r1 := NewConsumer("unspillable").Register(p)
	r1.Grow(2000)
	assert.Equal(t, int64(2000), p.Reserved())
	r2 := NewConsumer("r2").WithCanSpill(true).Register(p)
	r2.Grow(2000)
	assert.Equal(t, int64(4000), p.Reserved())
}

// TestFairSpillerPastItsShareIsRefusedRepeatably: the same refusal twice,
// nothing recorded.
func TestFairSpillerPastItsShareIsRefusedRepeatably(t *testing.T) {
	p := NewFair(100)
	NewConsumer("unspillable").Register(p).Grow(2000)
	r2 := NewConsumer("r2").WithCanSpill(true).Register(p)
	r2.Grow(2000)
	const want = "Resources exhausted: Failed to allocate additional 1.0 B for r2 with 2000.0 B already allocated for this reservation - 0.0 B remain available for the total memory pool: fair(pool_size: 100.0 B)"
	assert.EqualError(t, r2.TryGrow(1), want)
	assert.EqualError(t, r2.TryGrow(1), want)
	assert.Equal(t, int64(4000), p.Reserved())
}

// TestFairLoneSpillerMayUseAllButUnspillable: one spiller's share is
// size minus the unspillable bytes.
func TestFairLoneSpillerMayUseAllButUnspillable(t *testing.T) {
	p := NewFair(100)
	r1 := NewConsumer("unspillable").Register(p)
	r2 := NewConsumer("r2").WithCanSpill(true).Register(p)
	r1.Grow(2000)
	r2.Grow(2000)
	r1.Shrink(1990)
	r2.Shrink(2000)
	assert.Equal(t, int64(10), p.Reserved())

	require.NoError(t, r1.TryGrow(10))
	assert.Equal(t, int64(20), p.Reserved())
	require.NoError(t, r2.TryGrow(80))
	assert.Equal(t, int64(100), p.Reserved())

	r2.Shrink(70)
	assert.Equal(t, int64(20), r1.Size())
	assert.Equal(t, int64(10), r2.Size())
	assert.Equal(t, int64(30), p.Reserved())
}

// TestFairNewSpillerGetsAnEqualShare of what the unspillable bytes leave:
// (100-20)/2 = 40.
func TestFairNewSpillerGetsAnEqualShare(t *testing.T) {
	p, _, _ := fairAfterShrink(t)
	r3 := NewConsumer("r3").WithCanSpill(true).Register(p)
	assert.EqualError(t, r3.TryGrow(70), "Resources exhausted: Failed to allocate additional 70.0 B for r3 with 0.0 B already allocated for this reservation - 40.0 B remain available for the total memory pool: fair(pool_size: 100.0 B)")
	require.NoError(t, r3.TryGrow(40))
	require.ErrorIs(t, r3.TryGrow(1), ErrResourcesExhausted)
}

// TestFairFreeKeepsTheSpillersPlace: freeing a reservation without closing
// it does not raise the other spillers' share.
func TestFairFreeKeepsTheSpillersPlace(t *testing.T) {
	p, _, r2 := fairAfterShrink(t)
	r3 := NewConsumer("r3").WithCanSpill(true).Register(p)
	r2.Free()
	assert.EqualError(t, r3.TryGrow(70), "Resources exhausted: Failed to allocate additional 70.0 B for r3 with 0.0 B already allocated for this reservation - 40.0 B remain available for the total memory pool: fair(pool_size: 100.0 B)")
}

// TestFairCloseGivesTheShareBack: closing (DataFusion: dropping) the
// reservation unregisters the spiller and the survivor's share grows.
func TestFairCloseGivesTheShareBack(t *testing.T) {
	p, _, r2 := fairAfterShrink(t)
	r3 := NewConsumer("r3").WithCanSpill(true).Register(p)
	r2.Close()
	assert.Equal(t, int64(20), p.Reserved())
	require.NoError(t, r3.TryGrow(80))
	assert.Equal(t, int64(100), p.Reserved())
}

// TestFairUnspillableIsLimitedToFreeSpace: first come, first served over
// everything reserved, spillable or not.
func TestFairUnspillableIsLimitedToFreeSpace(t *testing.T) {
	p, r1, r2 := fairAfterShrink(t)
	r2.Close()
	r3 := NewConsumer("r3").WithCanSpill(true).Register(p)
	require.NoError(t, r3.TryGrow(80))
	r1.Free()
	assert.Equal(t, int64(80), p.Reserved())

	r4 := NewConsumer("s4").Register(p)
	assert.EqualError(t, r4.TryGrow(30), "Resources exhausted: Failed to allocate additional 30.0 B for s4 with 0.0 B already allocated for this reservation - 20.0 B remain available for the total memory pool: fair(pool_size: 100.0 B)")
	require.NoError(t, r4.TryGrow(20))
	assert.Equal(t, int64(100), p.Reserved())
}

// TestFairTryGrowLeavesReservationUnchangedOnError.
func TestFairTryGrowLeavesReservationUnchangedOnError(t *testing.T) {
	p := NewFair(100)
	a := NewConsumer("a").WithCanSpill(true).Register(p)
	b := NewConsumer("b").WithCanSpill(true).Register(p)
	require.NoError(t, a.TryGrow(50))
	require.ErrorIs(t, a.TryGrow(1), ErrResourcesExhausted)
	assert.Equal(t, int64(50), a.Size())
	assert.Equal(t, int64(50), p.Reserved())
	require.NoError(t, b.TryGrow(50))
}

// --- Deliberate differences from DataFusion ------------------------------

// TestFairSiblingReservationsDrawOnOneConsumerShare is docs/SEMANTICS.md's
// difference 1 (apache/datafusion#25172, apache/datafusion-comet#5961): DataFusion
// checks each reservation against the share on its own, so a consumer's
// siblings together could take 60 of a 50-byte share; here they cannot. The
// refusal reports what this reservation may still reach, the share less
// what its siblings hold.
func TestFairSiblingReservationsDrawOnOneConsumerShare(t *testing.T) {
	p := NewFair(100)
	a := NewConsumer("a").WithCanSpill(true).Register(p)
	b := NewConsumer("b").WithCanSpill(true).Register(p)
	defer b.Close()
	require.NoError(t, a.TryGrow(30))

	sib := a.NewEmpty()
	assert.EqualError(t, sib.TryGrow(30), "Resources exhausted: Failed to allocate additional 30.0 B for a with 0.0 B already allocated for this reservation - 20.0 B remain available for the total memory pool: fair(pool_size: 100.0 B)")
	require.NoError(t, sib.TryGrow(20))
	assert.Equal(t, int64(50), p.Reserved())

	// Split moves bytes between siblings without freeing share.
	part := a.Split(10)
	require.ErrorIs(t, part.TryGrow(1), ErrResourcesExhausted)
	require.ErrorIs(t, a.TryGrow(1), ErrResourcesExhausted)
	// Giving bytes back through any sibling frees share for all of them.
	part.Close()
	require.NoError(t, a.TryGrow(10))
	assert.Equal(t, int64(50), p.Reserved())

	// The other consumer's share is its own.
	require.NoError(t, b.TryGrow(50))
}

// TestFairUnspillableConsumersDoNotDivideTheSpillShare
// (apache/datafusion-comet#5465): registered unspillable consumers holding
// nothing leave the whole pool to the lone spiller.
func TestFairUnspillableConsumersDoNotDivideTheSpillShare(t *testing.T) {
	p := NewFair(100)
	for range 3 {
		NewConsumer("scan").Register(p)
	}
	s := NewConsumer("sort").WithCanSpill(true).Register(p)
	require.NoError(t, s.TryGrow(100))
}

// TestFairConsumerRegisteredTwiceHasOneShare: two registrations of one
// consumer count once in the divisor and share one limit.
func TestFairConsumerRegisteredTwiceHasOneShare(t *testing.T) {
	p := NewFair(100)
	c := NewConsumer("c").WithCanSpill(true)
	r1, r2 := c.Register(p), c.Register(p)
	other := NewConsumer("o").WithCanSpill(true).Register(p)
	require.NoError(t, r1.TryGrow(30))
	require.ErrorIs(t, r2.TryGrow(21), ErrResourcesExhausted)
	require.NoError(t, r2.TryGrow(20))
	require.NoError(t, other.TryGrow(50))

	r1.Close()
	// c is still registered once: the divisor is still 2.
	require.ErrorIs(t, other.TryGrow(1), ErrResourcesExhausted)
	r2.Close()
	require.NoError(t, other.TryGrow(50))
}

// TestFairDivisorChangesOnlyOnRegisterAndUnregister: registering a spiller
// shrinks the others' share at once, even before it reserves anything, and
// grants already made are not taken back (so, as in DataFusion, the pool
// can end up past its size through TryGrow).
func TestFairDivisorChangesOnlyOnRegisterAndUnregister(t *testing.T) {
	p := NewFair(100)
	a := NewConsumer("a").WithCanSpill(true).Register(p)
	require.NoError(t, a.TryGrow(100))
	b := NewConsumer("b").WithCanSpill(true).Register(p)
	require.ErrorIs(t, a.TryGrow(0), ErrResourcesExhausted, "a holds 100 of a 50-byte share")
	require.NoError(t, b.TryGrow(50))
	assert.Equal(t, int64(150), p.Reserved())
}

// TestFairUnregisterOfUnknownConsumerPanics, as DataFusion's checked
// decrement does.
func TestFairUnregisterOfUnknownConsumerPanics(t *testing.T) {
	p := NewFair(100)
	c := NewConsumer("ghost").WithCanSpill(true)
	assert.PanicsWithValue(t, "pool: fair Unregister("+c.String()+"): consumer is not registered",
		func() { p.Unregister(c) })
	p.Unregister(NewConsumer("unspillable")) // unspillable consumers are not counted
}

// TestFairForgetsConsumersWhenTheyLeave: after every reservation is closed
// the pool holds no per-consumer state.
func TestFairForgetsConsumersWhenTheyLeave(t *testing.T) {
	p := NewFair(1000)
	var rs []*Reservation
	for i := range 10 {
		r := NewConsumer("c").WithCanSpill(i%2 == 0).Register(p)
		require.NoError(t, r.TryGrow(10))
		rs = append(rs, r, r.Split(5), r.NewEmpty())
	}
	for _, r := range rs {
		r.Close()
	}
	fp := p.(*fairPool)
	fp.mu.Lock()
	defer fp.mu.Unlock()
	assert.Empty(t, fp.mu.spillers)
	assert.Zero(t, fp.mu.numSpill)
	assert.Zero(t, fp.mu.spillable)
	assert.Zero(t, fp.mu.unspillable)
}

// TestFairConcurrentSpillersStayWithinShares: 4 spillers with sibling
// reservations race; no consumer ever holds more than size/4 through
// TryGrow. Returning before the deadline means no deadlock.
func TestFairConcurrentSpillersStayWithinShares(t *testing.T) {
	p := NewFair(4000)
	consumers := make([]*Reservation, 4)
	for i := range consumers {
		consumers[i] = NewConsumer("s").WithCanSpill(true).Register(p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g, ctx := errgroup.WithContext(ctx)
	for _, base := range consumers {
		for range 2 {
			r := base.NewEmpty()
			g.Go(func() error {
				defer r.Close()
				for i := range 2000 {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					if r.TryGrow(int64(1+i%17)) == nil && i%3 == 0 {
						r.Shrink(r.Size() / 2)
					}
				}
				return nil
			})
		}
	}
	stop := make(chan struct{})
	watch := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				watch <- nil
				return
			default:
			}
			if got := p.Reserved(); got > 4000 {
				watch <- assert.AnError
				return
			}
		}
	}()
	require.NoError(t, g.Wait())
	close(stop)
	require.NoError(t, <-watch, "Reserved() went past the pool size")
	for _, r := range consumers {
		assert.LessOrEqual(t, r.Size(), int64(1000))
		r.Close()
	}
	assert.Equal(t, int64(0), p.Reserved())
}

// TestFairStringShowsOnlyPoolSize, as DataFusion's Display.
func TestFairStringShowsOnlyPoolSize(t *testing.T) {
	p := NewFair(4096)
	NewConsumer("x").Register(p).Grow(10)
	assert.Equal(t, "fair(pool_size: 4.0 KB)", p.String())
	assert.Equal(t, "fair", p.Name())
}

// TestFairKeepsNoStateForUnregisteredConsumersItRefuses: Pool methods
// called directly for a consumer registered elsewhere leave nothing behind.
func TestFairKeepsNoStateForUnregisteredConsumersItRefuses(t *testing.T) {
	p := NewFair(10)
	r := NewConsumer("elsewhere").WithCanSpill(true).Register(NewUnbounded())
	require.ErrorIs(t, p.TryGrow(r, 11), ErrResourcesExhausted)
	require.NoError(t, p.TryGrow(r, 10))
	p.Shrink(r, 10)
	fp := p.(*fairPool)
	fp.mu.Lock()
	defer fp.mu.Unlock()
	assert.Empty(t, fp.mu.spillers)
}
