package pool

import (
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

// benchPoolSize is never the limit in these benchmarks (as in
// bench/datafusion: 1<<62).
const benchPoolSize = 1 << 62

// pairImpl is one implementation of the measured operation: a TryGrow(8)
// followed by a Shrink(8). newPair returns the pair for one goroutine (each
// goroutine gets its own consumer and reservation on the shared pool).
type pairImpl struct {
	name    string
	newPool func() Pool // nil for the atomic baseline
	spill   bool
}

func pairImpls() []pairImpl {
	return []pairImpl{
		{name: "atomic"},
		{name: "unbounded", newPool: func() Pool { return NewUnbounded() }},
		{name: "greedy", newPool: func() Pool { return NewGreedy(benchPoolSize) }},
		// Spillable consumers, so the fair pool's share check is measured
		// (bench/datafusion does the same).
		{name: "fair", newPool: func() Pool { return NewFair(benchPoolSize) }, spill: true},
		{name: "track_consumers", newPool: func() Pool { return NewTrackConsumers(NewGreedy(benchPoolSize), 5) }},
		{name: "logging", newPool: func() Pool { return NewLogging(NewGreedy(benchPoolSize), slog.New(slog.DiscardHandler)) }},
	}
}

// pairFunc returns the measured pair for one goroutine, and a cleanup.
func (impl pairImpl) pairFunc(p Pool, counter *atomic.Int64, goroutine int) (pair func(), done func()) {
	if p == nil {
		return func() {
			counter.Add(8)
			counter.Add(-8)
		}, func() {}
	}
	r := NewConsumer(fmt.Sprintf("bench-%s-%d", impl.name, goroutine)).WithCanSpill(impl.spill).Register(p)
	return func() {
		if err := r.TryGrow(8); err != nil {
			panic(err)
		}
		r.Shrink(8)
	}, r.Close
}

// others registers n more consumers on p (spillable like the measured
// one), each holding 8 bytes, so that the pair runs among them; the
// returned func closes them.
func (impl pairImpl) others(p Pool, n int) (closeAll func()) {
	if p == nil {
		return func() {}
	}
	rs := make([]*Reservation, n)
	for i := range rs {
		rs[i] = NewConsumer(fmt.Sprintf("other-%d", i)).WithCanSpill(impl.spill).Register(p)
		if err := rs[i].TryGrow(8); err != nil {
			panic(err)
		}
	}
	return func() {
		for _, r := range rs {
			r.Close()
		}
	}
}

func runPairSerial(b *testing.B, impl pairImpl) { runPairSerialAmong(b, impl, 0) }

// runPairSerialAmong is runPairSerial with others more consumers registered.
func runPairSerialAmong(b *testing.B, impl pairImpl, others int) {
	var p Pool
	if impl.newPool != nil {
		p = impl.newPool()
	}
	defer impl.others(p, others)()
	var counter atomic.Int64
	pair, done := impl.pairFunc(p, &counter, 0)
	defer done()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		pair()
	}
}

func runPairParallel(b *testing.B, impl pairImpl) { runPairParallelAmong(b, impl, 0) }

// runPairParallelAmong is runPairParallel with others more consumers
// registered.
func runPairParallelAmong(b *testing.B, impl pairImpl, others int) {
	var p Pool
	if impl.newPool != nil {
		p = impl.newPool()
	}
	defer impl.others(p, others)()
	var counter atomic.Int64
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		pair, done := impl.pairFunc(p, &counter, int(next.Add(1)))
		defer done()
		for pb.Next() {
			pair()
		}
	})
}

// BenchmarkPair measures a TryGrow(8)+Shrink(8) pair on each pool, side by
// side with the cheapest possible accounting, a bare atomic add pair, in
// one table: par=1 is one goroutine, par=N is b.RunParallel with GOMAXPROCS
// goroutines, each with its own consumer on the shared pool.
func BenchmarkPair(b *testing.B) {
	for _, impl := range pairImpls() {
		b.Run(fmt.Sprintf("impl=%s/par=1", impl.name), func(b *testing.B) { runPairSerial(b, impl) })
	}
	for _, impl := range pairImpls() {
		b.Run(fmt.Sprintf("impl=%s/par=%d", impl.name, runtime.GOMAXPROCS(0)),
			func(b *testing.B) { runPairParallel(b, impl) })
	}
}

// BenchmarkPairVsDataFusion is the Go side of bench/compare_datafusion.sh:
// the same pair, pools and sizes as bench/datafusion (Greedy, Fair with
// spillable consumers, TrackConsumers(Greedy, 5)), with one thread or two
// threads sharing the pool, and with the measured consumers alone or among
// 1,000 registered consumers (999 others holding 8 bytes each). threads=2
// runs exactly two goroutines: GOMAXPROCS 2 and SetParallelism(1).
func BenchmarkPairVsDataFusion(b *testing.B) {
	impls := map[string]pairImpl{}
	for _, impl := range pairImpls() {
		impls[impl.name] = impl
	}
	for _, consumers := range []int{1, 1000} {
		for _, name := range []string{"greedy", "fair", "track_consumers"} {
			b.Run(fmt.Sprintf("pool=%s/threads=1/consumers=%d", name, consumers), func(b *testing.B) {
				runPairSerialAmong(b, impls[name], consumers-1)
			})
		}
		for _, name := range []string{"greedy", "fair", "track_consumers"} {
			b.Run(fmt.Sprintf("pool=%s/threads=2/consumers=%d", name, consumers), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
				b.SetParallelism(1)
				runPairParallelAmong(b, impls[name], consumers-1)
			})
		}
	}
	benchOperatorOnReservation(b, impls)
}

// TestPairAllocatesNothing: a TryGrow+Shrink pair allocates nothing on
// every pool except Logging (which is allowed to, but with a disabled
// handler does not either), with a threshold armed.
func TestPairAllocatesNothing(t *testing.T) {
	for _, impl := range pairImpls()[1:] {
		t.Run(impl.name, func(t *testing.T) {
			p := impl.newPool()
			p.(Watcher).OnThreshold(Threshold{Level: 1 << 40}, func(Crossing) {})
			pair, done := impl.pairFunc(p, nil, 0)
			defer done()
			assert.Zero(t, testing.AllocsPerRun(1000, pair))
		})
	}
}
