package pool_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/fakeupstream"
	"github.com/nativepool/nativepool/internal/guard"
	"github.com/nativepool/nativepool/pool"
)

const (
	grow8K = 8 << 10
	oneGiB = 1 << 30
)

// upstreamCallsPerGiB grows one reservation by 1 GiB in 8 KiB steps, then
// shrinks it back in 8 KiB steps, and returns the upstream calls each phase
// made.
func upstreamCallsPerGiB(tb testing.TB, kind string, chunk int64) (growCalls, shrinkCalls int64) {
	up := fakeupstream.NewCounting()
	p := unified(tb, kind, up, 2*oneGiB, pool.WithChunkSize(chunk))
	r := pool.NewConsumer("bench").WithCanSpill(true).Register(p)
	for range oneGiB / grow8K {
		if err := r.TryGrow(grow8K); err != nil {
			tb.Fatal(err)
		}
	}
	growCalls = sum(up.Calls())
	for range oneGiB / grow8K {
		r.Shrink(grow8K)
	}
	shrinkCalls = sum(up.Calls()) - growCalls
	r.Close()
	require.NoError(tb, p.Close())
	require.Zero(tb, up.Held())
	return growCalls, shrinkCalls
}

// The call counts are deterministic, so they are asserted here, not only
// reported by the benchmark: Comet's exact mode is one call per 8 KiB grow
// (131,072 per GiB), and 8 MiB chunks cut that to about 128.
func TestUnifiedUpstreamCallsPerGiBOf8KiBGrows(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			grows, shrinks := upstreamCallsPerGiB(t, kind, 0)
			assert.Equal(t, int64(131_072), grows)
			assert.Equal(t, int64(131_072), shrinks)

			// 16 calls of 1 MiB up to 16 MiB, 12 of 4 MiB up to 64 MiB,
			// then 120 of 8 MiB: the quantised chunk costs a small task's
			// first 64 MiB 20 calls more than whole 8 MiB chunks would.
			grows, shrinks = upstreamCallsPerGiB(t, kind, pool.DefaultChunkSize)
			assert.Equal(t, int64(16+12+120), grows, "1 GiB in 1, 4 and 8 MiB chunks")
			assert.LessOrEqual(t, shrinks, int64(16+12+120+2))
			t.Logf("8 MiB chunks: %d calls growing, %d shrinking", grows, shrinks)
		})
	}
}

// BenchmarkUnifiedUpstreamCallsPerGiB reports upstream calls per GiB of
// 8 KiB grows (and of 8 KiB shrinks back) as custom metrics.
func BenchmarkUnifiedUpstreamCallsPerGiB(b *testing.B) {
	for _, kind := range []string{"greedy", "fair"} {
		for _, chunk := range []int64{0, pool.DefaultChunkSize} {
			b.Run(fmt.Sprintf("pool=%s_unified/chunk=%d", kind, chunk), func(b *testing.B) {
				var grows, shrinks int64
				for b.Loop() {
					grows, shrinks = upstreamCallsPerGiB(b, kind, chunk)
				}
				b.ReportMetric(float64(grows), "grow-calls/GiB")
				b.ReportMetric(float64(shrinks), "shrink-calls/GiB")
			})
		}
	}
}

// BenchmarkUnifiedTryGrowShrinkPair measures one TryGrow(8 KiB) plus one
// Shrink(8 KiB) through a Reservation, for the unified pools (chunked and
// exact, over a free atomic upstream) side by side with the standalone
// greedy pool (a CAS loop) as the baseline, on one goroutine and on all
// of them (each goroutine its own consumer). Summarise with
// benchstat -col /impl -row /goroutines, which reports each pool's ratio to
// the greedy baseline. The _guard variants ask a pod guard (internal/guard,
// with room to spare) before every borrow from upstream: the chunked pool's
// pair, covered by slack, never asks it; the exact pool's asks it on every
// grow.
func BenchmarkUnifiedTryGrowShrinkPair(b *testing.B) {
	type variant struct {
		name string
		make func() pool.Pool
	}
	variants := []variant{
		{"greedy", func() pool.Pool { return pool.NewGreedy(1 << 50) }},
		{"fair_unified_8MiB", func() pool.Pool {
			return pool.NewFairUnified(fakeupstream.NewCounting(), 1<<50, pool.WithLogger(quietLogger()))
		}},
		{"greedy_unified_8MiB", func() pool.Pool {
			return pool.NewGreedyUnified(fakeupstream.NewCounting(), pool.WithLogger(quietLogger()))
		}},
		{"fair_unified_exact", func() pool.Pool {
			return pool.NewFairUnified(fakeupstream.NewCounting(), 1<<50, pool.WithChunkSize(0), pool.WithLogger(quietLogger()))
		}},
		{"fair_unified_8MiB_guard", func() pool.Pool {
			return pool.NewFairUnified(fakeupstream.NewCounting(), 1<<50, pool.WithLogger(quietLogger()), pool.WithAdmission(roomyGuard(b)))
		}},
		{"fair_unified_exact_guard", func() pool.Pool {
			return pool.NewFairUnified(fakeupstream.NewCounting(), 1<<50, pool.WithChunkSize(0), pool.WithLogger(quietLogger()), pool.WithAdmission(roomyGuard(b)))
		}},
	}
	for _, v := range variants {
		b.Run("impl="+v.name+"/goroutines=1", func(b *testing.B) {
			p := v.make()
			r := pool.NewConsumer("bench").WithCanSpill(true).Register(p)
			r.Grow(grow8K) // start mid-chunk so the pair never crosses a boundary by luck
			for b.Loop() {
				if err := r.TryGrow(grow8K); err != nil {
					b.Fatal(err)
				}
				r.Shrink(grow8K)
			}
			r.Close()
		})
		b.Run("impl="+v.name+"/goroutines=all", func(b *testing.B) {
			p := v.make()
			b.RunParallel(func(pb *testing.PB) {
				r := pool.NewConsumer("bench").WithCanSpill(true).Register(p)
				r.Grow(grow8K)
				for pb.Next() {
					if err := r.TryGrow(grow8K); err != nil {
						b.Fatal(err)
					}
					r.Shrink(grow8K)
				}
				r.Close()
			})
		})
	}
}

func sum(a, b int64) int64 { return a + b }

// roomySource is a process far from its limit: a guard over it admits
// every borrow on its fast path.
type roomySource struct{}

func (roomySource) Read() (guard.Sample, error) {
	return guard.Sample{Time: time.Now(), Limit: 1 << 50, Unreclaimable: 1 << 30}, nil
}

// noNative is a native side with nothing to spill.
type noNative struct{}

func (noNative) SpillToBallast(int64) (int64, []guard.Spill) { return 0, nil }
func (noNative) ReleaseBallast(int64) int64                  { return 0 }

// roomyGuard is a pod guard that has taken one sample of roomySource.
func roomyGuard(b *testing.B) *guard.Guard {
	g := guard.New(guard.Config{Reserve: 32 << 20}, roomySource{}, noNative{}, guard.Runtime{}, nil, quietLogger())
	g.Step()
	b.Cleanup(g.Stop)
	return g
}
