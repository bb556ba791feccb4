package pool

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
)

// TestGreedyRefusalReportsRemainingCapacity with DataFusion's text.
func TestGreedyRefusalReportsRemainingCapacity(t *testing.T) {
	p := NewGreedy(100)
	a := NewConsumer("a").Register(p)
	require.NoError(t, a.TryGrow(60))
	b := NewConsumer("b").Register(p)
	require.NoError(t, b.TryGrow(35))
	err := b.TryGrow(6)
	assert.EqualError(t, err, "Resources exhausted: Failed to allocate additional 6.0 B for b with 35.0 B already allocated for this reservation - 5.0 B remain available for the total memory pool: greedy(used: 95.0 B, pool_size: 100.0 B)")
	require.NoError(t, b.TryGrow(5))
	assert.Equal(t, int64(100), p.Reserved())
}

// TestGreedyTryGrowZeroFailsAfterGrowPastSize, as in DataFusion, and the
// refusal reports 0 available rather than a negative figure.
func TestGreedyTryGrowZeroFailsAfterGrowPastSize(t *testing.T) {
	p := NewGreedy(10)
	r := NewConsumer("g").Register(p)
	r.Grow(11)
	err := r.TryGrow(0)
	assert.EqualError(t, err, "Resources exhausted: Failed to allocate additional 0.0 B for g with 11.0 B already allocated for this reservation - 0.0 B remain available for the total memory pool: greedy(used: 11.0 B, pool_size: 10.0 B)")
	r.Shrink(1)
	require.NoError(t, r.TryGrow(0))
}

// TestGreedyHugeRequestIsRefusedWithoutOverflow: used+n would overflow
// int64; the check is written so that it cannot.
func TestGreedyHugeRequestIsRefusedWithoutOverflow(t *testing.T) {
	p := NewGreedy(math.MaxInt64 - 1)
	r := NewConsumer("h").Register(p)
	require.NoError(t, r.TryGrow(10))
	require.ErrorIs(t, r.TryGrow(math.MaxInt64), ErrResourcesExhausted)
	assert.Equal(t, int64(10), p.Reserved())
	require.NoError(t, r.TryGrow(math.MaxInt64-11))
	assert.Equal(t, int64(math.MaxInt64-1), p.Reserved())
}

// TestGreedyConcurrentTryGrowNeverPassesSize: 8 goroutines race for 1000
// bytes in 7-byte requests; exactly floor(1000/7) succeed in total.
// Returning before the deadline means no goroutine spun forever.
func TestGreedyConcurrentTryGrowNeverPassesSize(t *testing.T) {
	p := NewGreedy(1000)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g, ctx := errgroup.WithContext(ctx)
	granted := make([]int64, 8)
	rs := make([]*Reservation, 8)
	for i := range 8 {
		rs[i] = NewConsumer("w").Register(p)
		g.Go(func() error {
			for ctx.Err() == nil {
				if err := rs[i].TryGrow(7); err != nil {
					return nil
				}
				granted[i]++
				if got := p.Reserved(); got > 1000 {
					t.Errorf("Reserved() = %d > 1000", got)
				}
			}
			return ctx.Err()
		})
	}
	require.NoError(t, g.Wait())
	var total int64
	for i, n := range granted {
		total += n
		assert.Equal(t, 7*n, rs[i].Size())
		rs[i].Close()
	}
	assert.Equal(t, int64(1000/7), total)
	assert.Equal(t, int64(0), p.Reserved())
	w, _ := As[Watcher](p)
	assert.Equal(t, int64(1000/7*7), w.Peak())
}

// TestNewGreedyPanicsOnNegativeSize.
func TestNewGreedyPanicsOnNegativeSize(t *testing.T) {
	assert.PanicsWithValue(t, "pool: NewGreedy(-1): negative size", func() { NewGreedy(-1) })
	assert.PanicsWithValue(t, "pool: NewFair(-1): negative size", func() { NewFair(-1) })
}

// TestZeroSizedGreedyRefusesEverythingButZero.
func TestZeroSizedGreedyRefusesEverythingButZero(t *testing.T) {
	p := NewGreedy(0)
	r := NewConsumer("z").Register(p)
	require.NoError(t, r.TryGrow(0))
	require.ErrorIs(t, r.TryGrow(1), ErrResourcesExhausted)
}
