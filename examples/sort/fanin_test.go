package extsort

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
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

// roomAdmission is a process with room for room bytes of native memory,
// the pool's borrows from its upstream: Admit lets every borrow through,
// as a pod guard lets one through when nothing native is left to spill;
// AdmitNow, asked for growth the consumer can do without, refuses a borrow
// that would take the upstream's holding past room.
type roomAdmission struct {
	held    func() int64
	room    int64
	refused atomic.Int64
}

func (a *roomAdmission) Admit(int64) error { return nil }

func (a *roomAdmission) AdmitNow(n int64) error {
	if a.held()+n > a.room {
		a.refused.Add(1)
		return fmt.Errorf("no room for %d more bytes: %w", n, pool.ErrResourcesExhausted)
	}
	return nil
}

// TestMergeFanInGivesWayToTheProcessWhereItsPoolWouldGrant: the merge
// loads the first batch of a run past its second as growth it can do
// without, so a process with room for k batches bounds the fan-in at k
// even where the pool and its upstream would grant every run a batch.
// Before, the admission was asked to wait for those loads and, with
// nothing to spill, let them all through: one merge of every run, in
// memory the process did not have.
func TestMergeFanInGivesWayToTheProcessWhereItsPoolWouldGrant(t *testing.T) {
	const rows = 256
	const chunk = 4 << 10
	scratch := int64(2 * 8 * rows)
	for _, k := range []int{2, 3, 5} {
		t.Run(fmt.Sprintf("k=%d", k), func(t *testing.T) {
			// Push spills whenever the pool holds 12 chunks of rows: a run
			// every 12 batches, about 16 runs in all.
			budget := scratch + 12*batchCost(rows)
			adm := &roomAdmission{}
			a := newArbiterSetup(t, budget, true /* fair */, chunk, pool.WithAdmission(adm))
			adm.held = a.up.Used
			// Room for the spill buffer and k batches; the pool would grant
			// 12 batches.
			adm.room = scratch + int64(k)*batchCost(rows)

			r := runSort(t, a.pool, Options{BatchRows: rows}, 12, 0, 50_000, rows)
			st := r.stats
			spillRuns := st.Runs - st.MergePasses
			require.Greater(t, spillRuns, int64(12), "the test needs more runs than the pool could merge at once")
			assert.LessOrEqual(t, st.MaxFanIn, int64(k), "fan-in")
			assert.GreaterOrEqual(t, st.MaxFanIn, int64(2), "fan-in")
			assert.Positive(t, adm.refused.Load(), "the process refused loads")
			assert.Positive(t, st.MergePasses, "merge passes")
		})
	}
}
