package pool

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
)

// crossingLog collects threshold crossings.
type crossingLog struct {
	mu sync.Mutex
	cs []Crossing
}

func (l *crossingLog) add(c Crossing) {
	l.mu.Lock()
	l.cs = append(l.cs, c)
	l.mu.Unlock()
}

func (l *crossingLog) take() []Crossing {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.cs
	l.cs = nil
	return c
}

// everyPool builds one of each pool in this package (and the decorators)
// with the given size, for tests that must hold for all of them.
func everyPool(size int64) map[string]Pool {
	discard := slog.New(slog.DiscardHandler)
	return map[string]Pool{
		"unbounded":     NewUnbounded(),
		"greedy":        NewGreedy(size),
		"fair":          NewFair(size),
		"track(greedy)": NewTrackConsumers(NewGreedy(size), 3),
		"logging(fair)": NewLogging(NewFair(size), discard),
	}
}

// TestEveryPoolReportsItsHighWaterMark through Grow, TryGrow, Shrink,
// Split, Free and Close.
func TestEveryPoolReportsItsHighWaterMark(t *testing.T) {
	for name, p := range everyPool(1000) {
		t.Run(name, func(t *testing.T) {
			w, ok := p.(Watcher)
			require.True(t, ok)
			r := NewConsumer("c").WithCanSpill(true).Register(p)
			require.NoError(t, r.TryGrow(300))
			r.Grow(200)
			r.Shrink(400)
			s := r.Split(50)
			require.NoError(t, s.TryGrow(100))
			assert.Equal(t, int64(500), w.Peak())
			r.Close()
			s.Close()
			assert.Equal(t, int64(500), w.Peak())
			assert.Equal(t, int64(0), p.Reserved())
		})
	}
}

// TestThresholdFiresAtCrossingsWithHysteresis: up when reserved reaches
// the level, down only below level-hysteresis, once each.
func TestThresholdFiresAtCrossingsWithHysteresis(t *testing.T) {
	for name, p := range everyPool(1000) {
		t.Run(name, func(t *testing.T) {
			var log crossingLog
			stop := p.(Watcher).OnThreshold(Threshold{Level: 100, Hysteresis: 10}, log.add)
			defer stop()
			r := NewConsumer("c").WithCanSpill(true).Register(p)
			r.Grow(99)
			assert.Empty(t, log.take())
			require.NoError(t, r.TryGrow(1))
			want := Crossing{Pool: p.(Watcher).(interface{ Name() string }).Name(), Level: 100, Reserved: 100, Up: true}
			if inner, ok := p.(Unwrapper); ok {
				want.Pool = inner.Unwrap().Name() // decorators forward to the inner pool
			}
			assert.Equal(t, []Crossing{want}, log.take())
			r.Shrink(5)  // 95
			r.Grow(25)   // 120
			r.Shrink(30) // 90: not below 100-10
			assert.Empty(t, log.take())
			r.Shrink(1) // 89
			want.Up, want.Reserved = false, 89
			assert.Equal(t, []Crossing{want}, log.take())
			r.Resize(150)
			want.Up, want.Reserved = true, 150
			assert.Equal(t, []Crossing{want}, log.take())
			r.Close()
			want.Up, want.Reserved = false, 0
			assert.Equal(t, []Crossing{want}, log.take())
		})
	}
}

// TestThresholdDefaultHysteresisIsASixteenthOfTheLevel.
func TestThresholdDefaultHysteresisIsASixteenthOfTheLevel(t *testing.T) {
	p := NewGreedy(1000)
	var log crossingLog
	p.(Watcher).OnThreshold(Threshold{Level: 160}, log.add)
	r := NewConsumer("c").Register(p)
	r.Grow(160)
	r.Shrink(10) // 150 = 160-10: still above
	assert.Len(t, log.take(), 1)
	r.Shrink(1)
	assert.Equal(t, []Crossing{{Pool: "greedy", Level: 160, Reserved: 149, Up: false}}, log.take())
}

// TestThresholdAlreadyCrossedFiresOnRegistration, so a late watcher
// learns the current state.
func TestThresholdAlreadyCrossedFiresOnRegistration(t *testing.T) {
	p := NewFair(1000)
	NewConsumer("c").Register(p).Grow(500)
	var log crossingLog
	p.(Watcher).OnThreshold(Threshold{Level: 400}, log.add)
	assert.Equal(t, []Crossing{{Pool: "fair", Level: 400, Reserved: 500, Up: true}}, log.take())
}

// TestThresholdStopRemovesIt: no callback after stop.
func TestThresholdStopRemovesIt(t *testing.T) {
	p := NewGreedy(1000)
	var log crossingLog
	stop := p.(Watcher).OnThreshold(Threshold{Level: 10}, log.add)
	stop()
	NewConsumer("c").Register(p).Grow(100)
	assert.Empty(t, log.take())
}

// TestThresholdCallbackMayCallIntoThePool: callbacks run after the pool's
// locks are released, so one may make another consumer spill. (It runs
// inside the triggering Pool call, before the triggering reservation has
// added the request to its own size: it must not shrink that one.)
// Returning means no deadlock.
func TestThresholdCallbackMayCallIntoThePool(t *testing.T) {
	p := NewTrackConsumers(NewFair(1000), 3)
	spiller := NewConsumer("spiller").WithCanSpill(true).Register(p)
	r := NewConsumer("c").WithCanSpill(true).Register(p)
	require.NoError(t, spiller.TryGrow(80))
	var seen []int64
	p.OnThreshold(Threshold{Level: 100}, func(c Crossing) {
		seen = append(seen, p.Reserved())
		if c.Up {
			spiller.Shrink(50)
		}
	})
	require.NoError(t, r.TryGrow(20))
	assert.Equal(t, int64(30), spiller.Size())
	assert.Equal(t, int64(50), p.Reserved())
	assert.Equal(t, []int64{100, 50}, seen)
}

// TestOnThresholdRejectsNonPositiveLevels.
func TestOnThresholdRejectsNonPositiveLevels(t *testing.T) {
	w := NewGreedy(1).(Watcher)
	assert.PanicsWithValue(t, "pool: OnThreshold(level 0): level must be positive",
		func() { w.OnThreshold(Threshold{}, func(Crossing) {}) })
}

// opaquePool hides the inner pool's Watcher and Unwrapper methods: a pool
// from outside this package.
type opaquePool struct{ Pool }

// TestDecoratorsKeepTheirOwnMeterOverAForeignPool: a decorated pool that
// is not a Watcher still gets a high-water mark and thresholds.
func TestDecoratorsKeepTheirOwnMeterOverAForeignPool(t *testing.T) {
	for name, p := range map[string]Pool{
		"track":   NewTrackConsumers(opaquePool{NewGreedy(100)}, 2),
		"logging": NewLogging(opaquePool{NewGreedy(100)}, slog.New(slog.DiscardHandler)),
	} {
		t.Run(name, func(t *testing.T) {
			w := p.(Watcher)
			var log crossingLog
			w.OnThreshold(Threshold{Level: 50, Hysteresis: 1}, log.add)
			r := NewConsumer("c").Register(p)
			require.NoError(t, r.TryGrow(60))
			r.Shrink(40)
			r.Grow(10)
			assert.Equal(t, int64(60), w.Peak())
			assert.Equal(t, []Crossing{
				{Pool: name, Level: 50, Reserved: 60, Up: true},
				{Pool: name, Level: 50, Reserved: 20, Up: false},
			}, maskPoolNames(log.take(), name))
		})
	}
}

func maskPoolNames(cs []Crossing, name string) []Crossing {
	for i := range cs {
		if cs[i].Pool == "track_consumers" || cs[i].Pool == "logging" {
			cs[i].Pool = name
		}
	}
	return cs
}

// TestConcurrentCrossingsBalance: goroutines push a pool across a level
// from both sides; once everything is released, every upward crossing has
// had its downward one. Returning before the deadline means no deadlock.
func TestConcurrentCrossingsBalance(t *testing.T) {
	for name, p := range everyPool(1 << 30) {
		t.Run(name, func(t *testing.T) {
			var ups, downs atomic.Int64
			p.(Watcher).OnThreshold(Threshold{Level: 400, Hysteresis: 50}, func(c Crossing) {
				if c.Up {
					ups.Add(1)
				} else {
					downs.Add(1)
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			g, ctx := errgroup.WithContext(ctx)
			for range 4 {
				// 4 × 80 bytes held throughout (320: below 400-50): each goroutine's own
				// swings of up to 300 bytes cross the level even when the
				// scheduler runs the goroutines one after another.
				r := NewConsumer("c").WithCanSpill(true).Register(p)
				base := r.NewEmpty()
				base.Grow(80)
				g.Go(func() error {
					defer base.Close()
					defer r.Close()
					for i := range 3000 {
						if ctx.Err() != nil {
							return ctx.Err()
						}
						if err := r.TryGrow(int64(i%150) + 1); err != nil {
							return err
						}
						if i%2 == 1 {
							r.Free()
						}
					}
					return nil
				})
			}
			require.NoError(t, g.Wait())
			assert.Equal(t, int64(0), p.Reserved())
			assert.Greater(t, ups.Load(), int64(1), "the level was crossed back and forth")
			assert.Equal(t, ups.Load(), downs.Load())
		})
	}
}
