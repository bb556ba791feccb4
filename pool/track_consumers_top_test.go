package pool_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/proptest"
	"github.com/nativepool/nativepool/pool"
)

// modelTop is the report DataFusion's report_top would print, from a plain
// model: every consumer's (id, reserved, peak), sorted completely, the
// first k kept. ReportTop's bounded selection must match it exactly.
func modelTop(names []string, ids []uint64, reserved, peak []int64, k int) string {
	idx := make([]int, len(ids))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if reserved[a] != reserved[b] {
			if reserved[a] > reserved[b] {
				return -1
			}
			return 1
		}
		if ids[a] < ids[b] {
			return -1
		}
		return 1
	})
	var lines []string
	for _, i := range idx[:min(k, len(idx))] {
		lines = append(lines, fmt.Sprintf("  %s#%d(can spill: false) consumed %s, peak %s",
			names[i], ids[i], pool.HumanReadableSize(reserved[i]), pool.HumanReadableSize(peak[i])))
	}
	return strings.Join(lines, ",\n") + "."
}

// Invariant checked: for any consumers (sizes drawn from a small range, so
// ties are frequent, some unregistered again) and any k, ReportTop(k)
// equals the model's full sort cut at k: the same consumers, lines and
// order (largest first, ties by ascending ID).
func TestReportTopSelectsExactlyWhatAFullSortWould(t *testing.T) {
	params := gopter.DefaultTestParametersWithSeed(proptest.Seed(t))
	params.MinSuccessfulTests = 200
	properties := gopter.NewProperties(params)
	properties.Property("ReportTop(k) = model's sorted prefix", prop.ForAll(
		func(sizes []int64, drop []bool, k int) string {
			p := pool.NewTrackConsumers(pool.NewUnbounded(), 5)
			var names []string
			var ids []uint64
			var reserved, peaks []int64
			for i, n := range sizes {
				r := pool.NewConsumer(fmt.Sprintf("c%d", i)).Register(p)
				r.Grow(n + 3) // the peak is above the final size
				r.Shrink(3)
				if i < len(drop) && drop[i] {
					r.Close()
					continue
				}
				names = append(names, r.Consumer().Name())
				ids = append(ids, r.Consumer().ID())
				reserved = append(reserved, n)
				peaks = append(peaks, n+3)
			}
			if got, want := p.ReportTop(k), modelTop(names, ids, reserved, peaks, k); got != want {
				return fmt.Sprintf("ReportTop(%d):\n%s\nmodel:\n%s", k, got, want)
			}
			return ""
		},
		gen.SliceOf(gen.Int64Range(0, 8)),
		gen.SliceOf(gen.Bool()),
		gen.IntRange(0, 12),
	))
	properties.TestingRun(t)
}

// consumersWith registers n consumers on a TrackConsumers over a greedy pool
// of size limit, each holding its index mod 97 plus one bytes.
func consumersWith(t testing.TB, n int, limit int64) (*pool.TrackConsumers, []*pool.Reservation) {
	t.Helper()
	var total int64
	rs := make([]*pool.Reservation, n)
	for i := range rs {
		total += int64(i%97) + 1
	}
	p := pool.NewTrackConsumers(pool.NewGreedy(total+limit), 5)
	for i := range rs {
		rs[i] = pool.NewConsumer(fmt.Sprintf("op%d", i)).Register(p)
		require.NoError(t, rs[i].TryGrow(int64(i%97)+1))
	}
	return p, rs
}

// A refusal among 10,000 consumers allocates only what it prints: the
// bounded top-k keeps k snapshots, never one per consumer (before, the
// report sorted a snapshot of every consumer: 2.3 MB).
func TestARefusalAmongTenThousandConsumersAllocatesAtMostSixteenKiB(t *testing.T) {
	_, rs := consumersWith(t, 10_000, 0)
	asker := rs[0]
	refuse := func() {
		err := asker.TryGrow(1 << 40)
		if !errors.Is(err, pool.ErrResourcesExhausted) {
			t.Fatalf("want a refusal, got %v", err)
		}
	}
	refuse() // warm: first-use allocations are not the refusal's
	var before, after runtime.MemStats
	const runs = 20
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		refuse()
	}
	runtime.ReadMemStats(&after)
	perRefusal := (after.TotalAlloc - before.TotalAlloc) / runs
	t.Logf("one refusal among 10,000 consumers allocates %d bytes", perRefusal)
	assert.LessOrEqual(t, perRefusal, uint64(16<<10))
}

// BenchmarkRefusalAmongConsumers is one TrackConsumers refusal (the top-5
// report included) with 1 to 10,000 registered consumers.
func BenchmarkRefusalAmongConsumers(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1_000, 10_000} {
		b.Run(fmt.Sprintf("consumers=%d", n), func(b *testing.B) {
			_, rs := consumersWith(b, n, 0)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := rs[0].TryGrow(1 << 40); err == nil {
					b.Fatal("not refused")
				}
			}
		})
	}
}

// A registration keeps shortcuts to its consumer's entries in the pools of
// its stack, found through the decorators; a pool uses one only if the
// entry is its own. Two TrackConsumers stacked over a fair pool each count
// the consumer (the inner one through its map), and the fair pool's share
// check sees every byte.
func TestRegistrationShortcutsAreUsedOnlyByTheirOwnPool(t *testing.T) {
	fair := pool.NewFair(100)
	inner := pool.NewTrackConsumers(fair, 5)
	outer := pool.NewTrackConsumers(inner, 5)
	a := pool.NewConsumer("a").WithCanSpill(true).Register(outer)
	b := pool.NewConsumer("b").WithCanSpill(true).Register(outer)
	require.NoError(t, a.TryGrow(30))
	require.NoError(t, b.TryGrow(20))
	for _, tc := range []*pool.TrackConsumers{outer, inner} {
		ms := tc.Metrics()
		require.Len(t, ms, 2)
		assert.Equal(t, int64(30), ms[0].Reserved)
		assert.Equal(t, int64(20), ms[1].Reserved)
	}
	require.ErrorIs(t, a.TryGrow(21), pool.ErrResourcesExhausted, "a's share is 50")
	a.Shrink(30)
	b.Close()
	assert.Zero(t, fair.Reserved()+inner.Metrics()[0].Reserved)
	a.Close()
	assert.Empty(t, outer.Metrics())
	assert.Empty(t, inner.Metrics())
}
