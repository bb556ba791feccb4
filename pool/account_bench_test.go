package pool

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

// operatorBatches is how many batches the operator pattern grows by before
// it frees everything (bench/datafusion: OPERATOR_BATCHES).
const operatorBatches = 64

// batchSize is the operator's batch number i: 1 KiB to 64 KiB from a
// 64-bit LCG seeded by i, the same sequence as bench/datafusion's
// batch_size.
func batchSize(i uint64) int64 {
	x := i*6364136223846793005 + 1442695040888963407
	return 1024 + int64((x>>33)%64512)
}

// The measured loops, one per claim type and pattern, each monomorphic and
// counted (no interface, func-value or harness call per op, as the Rust
// side's loop is): the pair is TryGrow(8)+Shrink(8); the operator grows by
// batchSize(i) per batch and frees everything every operatorBatches
// batches and at the end. The parallel rows run them on b.RunParallel's
// batches of iterations (pbBatch).

func accountPairs(a *Account, n int) {
	for range n {
		if err := a.TryGrow(8); err != nil {
			panic(err)
		}
		a.Shrink(8)
	}
}

// accountOperator runs batches from..from+n of the operator pattern.
func accountOperator(a *Account, from uint64, n int) {
	for i := from; i < from+uint64(n); i++ {
		if err := a.TryGrow(batchSize(i)); err != nil {
			panic(err)
		}
		if (i+1)%operatorBatches == 0 {
			a.Clear()
		}
	}
}

// reservationOperator is accountOperator on a plain Reservation.
func reservationOperator(r *Reservation, from uint64, n int) {
	for i := from; i < from+uint64(n); i++ {
		if err := r.TryGrow(batchSize(i)); err != nil {
			panic(err)
		}
		if (i+1)%operatorBatches == 0 {
			r.Free()
		}
	}
}

// pbBatch is how many ops a parallel goroutine runs per pb.Next check.
const pbBatch = 1024

// runOps measures the pattern with threads goroutines (each its own
// consumer on the shared pool) among others idle consumers: on an Account
// (default quantum) or, for the operator, on a plain Reservation.
func runOps(b *testing.B, impl pairImpl, account, operator bool, threads, others int) {
	p := impl.newPool()
	defer impl.others(p, others)()
	var next atomic.Int64
	// loop runs n ops from op number from on one goroutine's claim.
	newLoop := func() (loop func(from uint64, n int), done func()) {
		r := NewConsumer(fmt.Sprintf("bench-%s-%d", impl.name, next.Add(1))).WithCanSpill(impl.spill).Register(p)
		if !account {
			return func(from uint64, n int) { reservationOperator(r, from, n) }, r.Close
		}
		a := NewAccount(r, DefaultAccountQuantum)
		if operator {
			return func(from uint64, n int) { accountOperator(a, from, n) }, a.Close
		}
		return func(_ uint64, n int) { accountPairs(a, n) }, a.Close
	}
	b.ReportAllocs()
	if threads == 1 {
		loop, done := newLoop()
		defer done()
		b.ResetTimer()
		loop(0, b.N)
		return
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
	b.SetParallelism(1)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		loop, done := newLoop()
		defer done()
		// pb.Next hands out one iteration per call; take them in batches
		// so that its cost stays out of the per-op figure, as b.N's loop
		// keeps it out of the serial rows.
		var from uint64
		for pb.Next() {
			n := 1
			for n < pbBatch && pb.Next() {
				n++
			}
			loop(from, n)
			from += uint64(n)
		}
	})
}

// BenchmarkAccountVsDataFusion is the Account's side of
// bench/compare_datafusion.sh: the TryGrow(8)+Shrink(8) pair of
// BenchmarkPairVsDataFusion on an Account (default quantum) over each
// pool, and the operator pattern (one TryGrow per batch of 1–64 KiB,
// everything freed every 64 batches; ns per batch) on an Account.
// BenchmarkPairVsDataFusion/operator/... runs the operator pattern on a
// plain Reservation.
func BenchmarkAccountVsDataFusion(b *testing.B) {
	impls := map[string]pairImpl{}
	for _, impl := range pairImpls() {
		impls[impl.name] = impl
	}
	names := []string{"greedy", "fair", "track_consumers"}
	for _, consumers := range []int{1, 1000} {
		for _, threads := range []int{1, 2} {
			for _, name := range names {
				b.Run(fmt.Sprintf("pool=%s/threads=%d/consumers=%d", name, threads, consumers), func(b *testing.B) {
					runOps(b, impls[name], true, false, threads, consumers-1)
				})
			}
		}
	}
	for _, threads := range []int{1, 2} {
		for _, name := range names {
			b.Run(fmt.Sprintf("operator/pool=%s/threads=%d/consumers=1", name, threads), func(b *testing.B) {
				runOps(b, impls[name], true, true, threads, 0)
			})
		}
	}
}

// benchOperatorOnReservation adds the operator pattern on a plain
// Reservation to BenchmarkPairVsDataFusion.
func benchOperatorOnReservation(b *testing.B, impls map[string]pairImpl) {
	for _, threads := range []int{1, 2} {
		for _, name := range []string{"greedy", "fair", "track_consumers"} {
			b.Run(fmt.Sprintf("operator/pool=%s/threads=%d/consumers=1", name, threads), func(b *testing.B) {
				runOps(b, impls[name], false, true, threads, 0)
			})
		}
	}
}
