package pool_test

import (
	"fmt"
	"testing"

	"github.com/nativepool/nativepool/internal/fakeupstream"
	"github.com/nativepool/nativepool/pool"
)

// Flat as the work grows: the cost of one TryGrow(8)+Shrink(8)
// pair with 1 to 10,000 consumers registered on the pool, done by one
// consumer throughout (the one-entry caches help) and rotating through all
// of them (they do not). Every consumer is spillable and holds 8 bytes, so
// a fair pool's share and TrackConsumers' bookkeeping see all of them.
// Compare rows within one run: the machine is shared.
func BenchmarkPairAmongConsumers(b *testing.B) {
	pools := []struct {
		name string
		make func() pool.Pool
	}{
		{"fair", func() pool.Pool { return pool.NewFair(1 << 40) }},
		{"track_consumers", func() pool.Pool { return pool.NewTrackConsumers(pool.NewGreedy(1<<40), 5) }},
		{"fair_unified", func() pool.Pool {
			return pool.NewFairUnified(fakeupstream.New(), 1<<40, pool.WithChunkSize(8<<20))
		}},
	}
	for _, pc := range pools {
		for _, n := range []int{1, 10, 100, 1_000, 10_000} {
			for _, rotate := range []bool{false, true} {
				mode := "one"
				if rotate {
					mode = "rotating"
				}
				b.Run(fmt.Sprintf("pool=%s/consumers=%d/%s", pc.name, n, mode), func(b *testing.B) {
					p := pc.make()
					rs := make([]*pool.Reservation, n)
					for i := range rs {
						rs[i] = pool.NewConsumer(fmt.Sprintf("c%d", i)).WithCanSpill(true).Register(p)
						if err := rs[i].TryGrow(8); err != nil {
							b.Fatal(err)
						}
					}
					b.ResetTimer()
					i := 0
					for b.Loop() {
						r := rs[0]
						if rotate {
							r = rs[i]
							if i++; i == n {
								i = 0
							}
						}
						if err := r.TryGrow(8); err != nil {
							b.Fatal(err)
						}
						r.Shrink(8)
					}
					b.StopTimer()
					for _, r := range rs {
						r.Close()
					}
				})
			}
		}
	}
}
