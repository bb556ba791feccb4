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

// opHolder is what a benchmark goroutine grows: a Reservation (the
// concurrent claim) or an Account (the operator's).
type opHolder interface {
	TryGrow(n int64) error
	Shrink(n int64)
	// clear gives every byte back.
	clear()
	close()
}

type resHolder struct{ *Reservation }

func (h resHolder) clear() { h.Free() }
func (h resHolder) close() { h.Close() }

type acctHolder struct{ *Account }

func (h acctHolder) clear() { h.Clear() }
func (h acctHolder) close() { h.Close() }

// opLoop runs n ops of the pattern on h: pair (TryGrow(8)+Shrink(8)) or
// operator (TryGrow per batch, everything freed every operatorBatches
// batches and at the end).
func opLoop(h opHolder, operator bool, next func() bool) {
	if !operator {
		for next() {
			if err := h.TryGrow(8); err != nil {
				panic(err)
			}
			h.Shrink(8)
		}
		return
	}
	var i uint64
	for next() {
		if err := h.TryGrow(batchSize(i)); err != nil {
			panic(err)
		}
		i++
		if i%operatorBatches == 0 {
			h.clear()
		}
	}
	h.clear()
}

// runOps measures the pattern with threads goroutines (each its own
// consumer on the shared pool) among others idle consumers.
func runOps(b *testing.B, impl pairImpl, account, operator bool, threads, others int) {
	p := impl.newPool()
	defer impl.others(p, others)()
	var next atomic.Int64
	holder := func() opHolder {
		r := NewConsumer(fmt.Sprintf("bench-%s-%d", impl.name, next.Add(1))).WithCanSpill(impl.spill).Register(p)
		if account {
			return acctHolder{NewAccount(r, DefaultAccountQuantum)}
		}
		return resHolder{r}
	}
	b.ReportAllocs()
	if threads == 1 {
		h := holder()
		defer h.close()
		b.ResetTimer()
		opLoop(h, operator, b.Loop)
		return
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
	b.SetParallelism(1)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		h := holder()
		defer h.close()
		opLoop(h, operator, pb.Next)
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
