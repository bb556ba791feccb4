package extsort

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/pool"
)

// boundCheckingAllocator is the sorter's inner allocator in the fan-in
// tests: every byte the sorter allocates passes through it, and after each
// allocation it checks that the live bytes do not exceed what the pool has
// reserved (the accounted allocator reserves before it allocates).
type boundCheckingAllocator struct {
	mem memory.Allocator
	p   pool.Pool

	mu         sync.Mutex
	live, peak int64
	violations int
	first      string
}

func (a *boundCheckingAllocator) Allocate(n int) []byte {
	b := a.mem.Allocate(n)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.live += int64(len(b))
	a.peak = max(a.peak, a.live)
	if res := a.p.Reserved(); a.live > res && a.violations == 0 {
		a.first = fmt.Sprintf("Allocate(%d): %d bytes live, %d reserved", n, a.live, res)
		a.violations++
	} else if a.live > res {
		a.violations++
	}
	return b
}

func (a *boundCheckingAllocator) Reallocate(size int, b []byte) []byte {
	old := len(b)
	nb := a.mem.Reallocate(size, b)
	a.mu.Lock()
	a.live += int64(len(nb) - old)
	a.peak = max(a.peak, a.live)
	if a.live > a.p.Reserved() {
		a.violations++
	}
	a.mu.Unlock()
	return nb
}

func (a *boundCheckingAllocator) Free(b []byte) {
	a.mu.Lock()
	a.live -= int64(len(b))
	a.mu.Unlock()
	a.mem.Free(b)
}

// batchCost is what one loaded batch of a run costs the pool at
// BatchRows rows: its keys and payloads (2 × 8 × rows), and a margin for
// the IPC reader's small buffers, below one batch.
func batchCost(rows int) int64 { return int64(2*8*rows) + 256 }

// TestMergeFanInIsBoundedByTheBatchesThePoolGrants: a pool that holds the
// spill buffer and k batches of runs merges at most k runs at once, in
// ceil(log_k(runs)) levels; the output is sorted and complete, and the
// sorter never has more bytes live than the pool has reserved.
func TestMergeFanInIsBoundedByTheBatchesThePoolGrants(t *testing.T) {
	const rows = 256
	for _, k := range []int{2, 3, 4, 6} {
		t.Run(fmt.Sprintf("k=%d", k), func(t *testing.T) {
			scratch := int64(2 * 8 * rows)
			size := scratch + int64(k)*batchCost(rows) + batchCost(rows)/2
			p := pool.NewGreedy(size)
			inner := &boundCheckingAllocator{mem: memory.NewGoAllocator(), p: p}
			r := runSort(t, p, Options{BatchRows: rows, Inner: inner}, 12, 0, 50_000, rows)

			st := r.stats
			spillRuns := st.Runs - st.MergePasses
			require.Greater(t, spillRuns, int64(k), "the test needs more runs than the fan-in")
			assert.Equal(t, int64(k), st.MaxFanIn, "fan-in")
			levels := int64(math.Ceil(math.Log(float64(spillRuns))/math.Log(float64(k)) - 1e-9))
			assert.Equal(t, levels, st.MergeLevels, "levels for %d runs at fan-in %d", spillRuns, k)
			require.Positive(t, inner.peak, "the sorter allocated through the checking allocator")
			assert.Zero(t, inner.violations, "allocated > reserved: %s", inner.first)
			assert.LessOrEqual(t, inner.peak, size)
			assert.LessOrEqual(t, st.PeakAllocated, size)
		})
	}
}

// TestMergeLevelsAreLogOfRunsWhenTheLastGroupOfALevelIsSmall: 33 runs at a
// fan-in of 6 take two levels (six groups, the last of three runs, then
// one merge of six), not the three that merging the last three runs of
// the first level with runs of the second would take.
func TestMergeLevelsAreLogOfRunsWhenTheLastGroupOfALevelIsSmall(t *testing.T) {
	const rows = 256
	size := int64(2*8*rows) + 6*batchCost(rows) + batchCost(rows)/2
	p := pool.NewGreedy(size)
	r := runSort(t, p, Options{BatchRows: rows}, 12, 0, 50_000, rows)
	spillRuns := r.stats.Runs - r.stats.MergePasses
	require.Equal(t, int64(33), spillRuns, "the generator's run count changed; pick another size")
	assert.Equal(t, int64(6), r.stats.MaxFanIn)
	assert.Equal(t, int64(2), r.stats.MergeLevels)
}

// TestMergeOfRunsThatFitIsOneLevel: when the pool holds a batch of every
// run, the final merge takes them all at once and no pass is made.
func TestMergeOfRunsThatFitIsOneLevel(t *testing.T) {
	p := pool.NewGreedy(64 << 10)
	r := runSort(t, p, Options{BatchRows: 256}, 12, 0, 20_000, 256)
	require.Positive(t, r.stats.Runs)
	assert.Zero(t, r.stats.MergePasses)
	assert.Equal(t, int64(1), r.stats.MergeLevels)
	assert.Equal(t, r.stats.Runs, r.stats.MaxFanIn)
}
