package main

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	extsort "github.com/nativepool/nativepool/examples/sort"
	"github.com/nativepool/nativepool/pool"
)

// These tests drive the sort engine (sorts.go) as engine_test.go drives
// every engine: what is the sorters' own, their stats0 and sample0 arrays
// and the Spark spill that reaches them.

// sortThrough pushes rows generated from seed through the sorter of h in
// batches of batch rows, then drains it, checking order and multiset.
func sortThrough[O operator](t *testing.T, e *engine[O], h int64, cs *cStructs, seed uint64, rows, batch int) {
	t.Helper()
	g := extsort.NewGenerator(seed, 0)
	in := mallocator.NewMallocator()
	for pushed := 0; pushed < rows; pushed += batch {
		arr, sc := cs.export(g.Next(in, min(batch, rows-pushed)))
		require.NoError(t, e.push(h, arr, sc))
		assert.Nil(t, arrayReleaseFn(arr), "push0 released the producer's array before returning")
	}
	in.AssertSize(t, 0) // every input buffer went back to the producer
	require.NoError(t, e.finish(h))
	var v extsort.Verifier
	drainOutput(t, e, h, cs, func(out *cdata.CArrowArray, osc *cdata.CArrowSchema) {
		rb, err := cdata.ImportCRecordBatch(out, osc)
		require.NoError(t, err)
		require.NoError(t, v.AddBatch(rb))
		rb.Release()
	})
	require.NoError(t, v.Check(g.Fingerprint()))
}

func TestSortRoundTripThroughTheCDataInterfaceIsSortedCompleteAndWithinItsBooks(t *testing.T) {
	p := pool.NewFair(1 << 20) // far below the 3.2 MB of rows: the sorter must spill
	e, reports := sortsFor(t, fixed(p))
	cs := newCStructs(t)
	h, err := e.create(1, "ExternalSorter[1]", 4096, t.TempDir())
	require.NoError(t, err)
	sortThrough(t, e.engine, h, cs, 7, 200_000, 8192)

	a, err := e.stats(h)
	require.NoError(t, err)
	st := sortStats.named(a)
	assert.Equal(t, int64(200_000), st["ROWS_IN"])
	assert.Equal(t, int64(200_000), st["ROWS_OUT"])
	assert.Positive(t, st["SELF_SPILLS"], "a 1 MiB pool makes the sorter spill on its own")
	assert.Equal(t, int64(25), st["BATCHES_IN"])
	assert.Equal(t, int64(49), st["BATCHES_OUT"], "200000 rows in batches of 4096")
	assert.LessOrEqual(t, st["PEAK_ALLOCATED"], st["PEAK_RESERVED"])
	assert.LessOrEqual(t, st["PEAK_RESERVED"], int64(1<<20))
	assert.GreaterOrEqual(t, st["CHECKS"], int64(25+1+50), "a check after every call")
	assert.Zero(t, st["VIOLATIONS"])

	require.NoError(t, e.close(h))
	assert.Zero(t, p.Reserved(), "close gives everything back to the pool")
	assert.Zero(t, e.ops.Len())
	assert.Equal(t, st["SPILLED_BYTES"], reports.disk.Load(), "every run file's bytes reach Spark's diskBytesSpilled")
	assert.Positive(t, reports.memory.Load(), "self-initiated spills count as memoryBytesSpilled")
}

func TestSparkSpillReachesTheSorterThroughTheTaskPoolsReclaim(t *testing.T) {
	p, u := arbiterTaskPool(t, 64<<20, 1<<20)
	e, reports := sortsFor(t, fixed(p))
	cs := newCStructs(t)
	h, err := e.create(3, "ExternalSorter[3]", 0, t.TempDir())
	require.NoError(t, err)
	g := extsort.NewGenerator(3, 0)
	for range 10 {
		require.NoError(t, pushBatch(e.engine, h, cs, g.Next(nil, 8192)))
	}
	before := p.Reserved()
	freed, err := u.Reclaim(1 << 20) // what Spark's spill of the task's native consumer reaches
	require.NoError(t, err)
	assert.Positive(t, freed)
	a, err := e.stats(h)
	require.NoError(t, err)
	st := sortStats.named(a)
	assert.Equal(t, int64(1), st["REQUESTED_SPILLS"])
	assert.Zero(t, st["SELF_SPILLS"])
	assert.Less(t, p.Reserved(), before)
	require.NoError(t, e.close(h))
	assert.Equal(t, st["SPILLED_BYTES"], reports.disk.Load(), "the requested spill's run file is reported by close")
	assert.Zero(t, reports.memory.Load(), "what a Spark-requested spill frees is counted by the plugin, not reported")
}

func TestSampleSumsLiveSortersAndKeepsTheCountersOfClosedOnes(t *testing.T) {
	p := pool.NewGreedy(64 << 20)
	e, _ := sortsFor(t, fixed(p))
	cs := newCStructs(t)
	h1, err := e.create(1, "a", 0, t.TempDir())
	require.NoError(t, err)
	h2, err := e.create(2, "b", 0, t.TempDir())
	require.NoError(t, err)
	require.NoError(t, pushBatch(e.engine, h1, cs, extsort.NewGenerator(1, 0).Next(nil, 1000)))

	s := e.sample()
	assert.Equal(t, int64(2), s[sampleLiveSorters])
	assert.Equal(t, p.Reserved(), s[sampleReserved])
	assert.Positive(t, s[sampleAllocated])
	assert.LessOrEqual(t, s[sampleAllocated], s[sampleReserved])
	assert.Positive(t, s[sampleRSS])
	assert.Positive(t, s[sampleGoRuntime])
	checks := s[sampleChecks]

	require.NoError(t, e.close(h1))
	require.NoError(t, e.close(h2))
	s = e.sample()
	assert.Zero(t, s[sampleLiveSorters])
	assert.Zero(t, s[sampleReserved])
	assert.GreaterOrEqual(t, s[sampleChecks], checks, "closed sorters' checks still count")
	assert.Zero(t, s[sampleViolations])
}

// TestGoRuntimePeakIsReadAfterEveryDriverCallAndNeverBelowTheCurrentFigure:
// garbage made and collected inside a driver call shows in the Go peak of
// the next sample even though that sample's current figure is lower, and
// the mapped figure bounds the peak from above.
func TestGoRuntimePeakIsReadAfterEveryDriverCallAndNeverBelowTheCurrentFigure(t *testing.T) {
	e, _ := sortsFor(t, fixed(pool.NewUnbounded()))
	h, err := e.create(1, "s", 0, t.TempDir())
	require.NoError(t, err)
	// Idle heap left by earlier tests would serve part of the 64 MiB below
	// without the runtime mapping more: hand it back to the OS first.
	runtime.GC()
	debug.FreeOSMemory()
	before := e.sample()
	var garbage [][]byte
	require.NoError(t, e.drive("test0", h, func(*sortHandle) error {
		for range 64 {
			garbage = append(garbage, make([]byte, 1<<20)) // 64 MiB of Go heap
		}
		return nil
	}))
	garbage = nil
	runtime.GC()
	debug.FreeOSMemory()
	s := e.sample()
	assert.GreaterOrEqual(t, s[sampleGoPeak]-before[sampleGoRuntime], int64(60<<20), "the peak saw the call's 64 MiB")
	assert.GreaterOrEqual(t, s[sampleGoPeak], s[sampleGoRuntime])
	assert.GreaterOrEqual(t, s[sampleGoMapped], s[sampleGoPeak])
	assert.Less(t, s[sampleGoRuntime], s[sampleGoPeak], "the 64 MiB went back to the OS after the call")
	require.NoError(t, e.close(h))
}
