package pool

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
)

const (
	stressGoroutines = 8
	stressOps        = 100_000 // per goroutine
	stressLimit      = 1 << 20
)

// TestStressRandomOperations runs, on each pool, 8 goroutines × 100k
// random operations (TryGrow, Shrink, TryShrink, Free, Split, NewEmpty,
// Take, Close and re-Register of each goroutine's own reservations, and
// TryGrow/TryShrink on one reservation shared by all goroutines), under
// -race in `make test`. After each successful TryGrow on a greedy pool
// Reserved() must be within the limit (nobody uses Grow here). At the end
// every reservation is closed and Reserved() must be 0 with nothing
// tracked. Returning before the deadline means no deadlock.
func TestStressRandomOperations(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	discard := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name    string
		build   func() Pool
		bounded bool // Reserved() ≤ stressLimit at all times
	}{
		{"unbounded", func() Pool { return NewUnbounded() }, false},
		{"greedy", func() Pool { return NewGreedy(stressLimit) }, true},
		// A fair pool can pass its size through TryGrow when spillers
		// register after others took their share (as in DataFusion).
		{"fair", func() Pool { return NewFair(stressLimit) }, false},
		{"track_consumers(greedy)", func() Pool { return NewTrackConsumers(NewGreedy(stressLimit), 5) }, true},
		{"logging(fair)", func() Pool { return NewLogging(NewFair(stressLimit), discard) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.build()
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			shared := NewConsumer("shared").Register(p)
			g, ctx := errgroup.WithContext(ctx)
			for w := range stressGoroutines {
				g.Go(func() error {
					return stressWorker(ctx, p, shared, tc.bounded, rand.New(rand.NewPCG(seed, uint64(w))), w)
				})
			}
			require.NoError(t, g.Wait())
			shared.Close()
			assert.Equal(t, int64(0), p.Reserved())
			if tc.bounded {
				w, _ := As[Watcher](p)
				assert.LessOrEqual(t, w.Peak(), int64(stressLimit))
			}
			if tr, ok := As[*TrackConsumers](p); ok {
				assert.Empty(t, tr.Metrics())
			}
			if f, ok := As[*fairPool](p); ok {
				f.mu.Lock()
				assert.Empty(t, f.mu.spillers)
				assert.Zero(t, f.mu.numSpill)
				f.mu.Unlock()
			}
		})
	}
}

func stressWorker(ctx context.Context, p Pool, shared *Reservation, bounded bool, rng *rand.Rand, w int) error {
	c := NewConsumer(fmt.Sprintf("w%d", w)).WithCanSpill(w%2 == 0)
	rs := []*Reservation{c.Register(p)}
	defer func() {
		for _, r := range rs {
			r.Close()
		}
	}()
	for i := range stressOps {
		if i%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		k := rng.IntN(len(rs))
		r := rs[k]
		switch op := rng.IntN(20); {
		case op < 7:
			if r.TryGrow(rng.Int64N(64)+1) == nil && bounded {
				if got := p.Reserved(); got > stressLimit {
					return fmt.Errorf("Reserved() = %d > %d after TryGrow", got, stressLimit)
				}
			}
		case op < 11:
			r.Shrink(rng.Int64N(r.Size() + 1))
		case op < 12:
			// Over-shrinks (n = Size()+1) are refused and change nothing.
			n := rng.Int64N(r.Size() + 2)
			before := r.Size()
			if got, err := r.TryShrink(n); (err == nil) != (n <= before) || (err == nil && got != before-n) {
				return fmt.Errorf("TryShrink(%d) of %d = %d, %v", n, before, got, err)
			}
		case op < 13:
			r.Free()
		case op < 14 && len(rs) < 6:
			rs = append(rs, r.Split(rng.Int64N(r.Size()+1)))
		case op < 15 && len(rs) < 6:
			rs = append(rs, r.NewEmpty())
		case op < 16 && len(rs) < 6:
			rs = append(rs, r.Take())
		case op < 17:
			// Close one reservation; if it was the last, register again
			// (register/unregister churn changes the fair pool's divisor).
			r.Close()
			rs = append(rs[:k], rs[k+1:]...)
			if len(rs) == 0 {
				rs = append(rs, c.Register(p))
			}
		case op < 19:
			_ = shared.TryGrow(rng.Int64N(16) + 1)
		default:
			_, _ = shared.TryShrink(rng.Int64N(32))
		}
	}
	return nil
}
