package extsort

import (
	"fmt"
	"testing"

	"github.com/nativepool/nativepool/internal/proptest"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/pool"
)

// TestSortMergesInPassesWhenRunsOutnumberBatchesInBudget: with a budget
// that holds only a few batches and many runs on disk, Finish merges runs
// in passes and the output is still right.
func TestSortMergesInPassesWhenRunsOutnumberBatchesInBudget(t *testing.T) {
	p := pool.NewGreedy(24 << 10)
	r := runSort(t, p, Options{BatchRows: 256}, 12, 0, 50_000, 256)
	assert.Positive(t, r.stats.MergePasses)
	assert.Greater(t, r.stats.Runs, r.stats.SelfSpills)
	assert.LessOrEqual(t, r.stats.PeakReserved, int64(24<<10))
}

// TestSortPropertyOutputIsSortedPermutationOfInput checks, over random row
// counts, batch sizes, key ranges, pool kinds and budgets, the invariants
// of a sort: the output is in (key, payload) order, it is the same multiset
// as the input (Fingerprint), the peak stays within a finite budget, and at
// the end the reservation, the allocator, the pool and the run directory
// are empty (checkClosed). The seed is logged (proptest.Seed).
func TestSortPropertyOutputIsSortedPermutationOfInput(t *testing.T) {
	seed := proptest.Seed(t)
	params := gopter.DefaultTestParametersWithSeed(seed)
	params.MinSuccessfulTests = 40

	type input struct {
		Rows, BatchRows, OutRows int
		KeyRange                 int64
		Budget                   int64
		Fair                     bool
		Seed                     uint64
	}
	inputs := gopter.CombineGens(
		gen.IntRange(0, 20_000),
		gen.IntRange(1, 3000),
		gen.IntRange(16, 2048),
		gen.OneConstOf(int64(1), int64(7), int64(1000), int64(0)),
		gen.Int64Range(48<<10, 1<<20),
		gen.Bool(),
		gen.UInt64(),
	).Map(func(v []any) input {
		return input{v[0].(int), v[1].(int), v[2].(int), v[3].(int64), v[4].(int64), v[5].(bool), v[6].(uint64)}
	})
	props := gopter.NewProperties(params)
	props.Property("sorted permutation, bounded, nothing left", prop.ForAll(func(in input) string {
		var p pool.Pool
		if in.Fair {
			p = pool.NewFair(in.Budget)
		} else {
			p = pool.NewGreedy(in.Budget)
		}
		// The sorter's minimum: a pushed batch with the spill buffer, and, to
		// merge, the spill buffer (one output-sized batch) plus the first
		// batches of two runs: three output-sized batches in all.
		if int64(in.BatchRows*pairBytes+3*in.OutRows*pairBytes)+4096 > in.Budget {
			return ""
		}
		ok := t.Run(fmt.Sprintf("%+v", in), func(t *testing.T) {
			r := runSort(t, p, Options{BatchRows: in.OutRows}, in.Seed, in.KeyRange, in.Rows, in.BatchRows)
			require.LessOrEqual(t, r.stats.PeakReserved, in.Budget)
		})
		if !ok {
			return fmt.Sprintf("failed for %+v", in)
		}
		return ""
	}, inputs))
	props.TestingRun(t)
}

// TestFingerprintIsOrderIndependentAndDetectsChanges: permuting rows keeps
// the fingerprint; dropping, duplicating or altering a row changes it.
func TestFingerprintIsOrderIndependentAndDetectsChanges(t *testing.T) {
	rows := [][2]int64{{3, 1}, {1, 2}, {3, 1}, {-5, 9}, {0, 0}}
	fp := func(rs [][2]int64) Fingerprint {
		var f Fingerprint
		for _, r := range rs {
			f.Add(r[0], r[1])
		}
		return f
	}
	want := fp(rows)
	assert.Equal(t, want, fp([][2]int64{{0, 0}, {3, 1}, {-5, 9}, {3, 1}, {1, 2}}), "permutation")
	assert.NotEqual(t, want, fp(rows[1:]), "dropped row")
	assert.NotEqual(t, want, fp(append([][2]int64{{1, 2}}, rows...)), "duplicated row")
	assert.NotEqual(t, want, fp([][2]int64{{3, 1}, {1, 2}, {3, 2}, {-5, 9}, {0, 0}}), "altered payload")
	assert.NotEqual(t, want, fp([][2]int64{{3, 1}, {2, 1}, {3, 1}, {-5, 9}, {0, 0}}), "swapped key and payload")
	// Two equal rows replaced by two other equal rows keep count, and the
	// xor (pairs cancel), but not the sum.
	assert.NotEqual(t, want, fp([][2]int64{{4, 4}, {1, 2}, {4, 4}, {-5, 9}, {0, 0}}), "replaced duplicate pair")
}

// TestVerifierReportsDisorderAndMismatch checks the whole error texts.
func TestVerifierReportsDisorderAndMismatch(t *testing.T) {
	g := NewGenerator(1, 0)
	b := g.Next(nil, 3)
	defer b.Release()
	var v Verifier
	require.NoError(t, v.AddBatch(b))
	err := v.Check(g.Fingerprint())
	// Three random rows are out of order with probability 5/6; the seed is
	// fixed, so this is deterministic.
	require.Error(t, err)
	assert.Regexp(t, `^extsort: output not sorted: [12] rows out of order, first at row [12]$`, err.Error())

	var w Verifier
	g2 := NewGenerator(2, 0)
	b2 := g2.Next(nil, 1)
	defer b2.Release()
	require.NoError(t, w.AddBatch(b2))
	got := w.Fingerprint()
	want := Fingerprint{}
	assert.Equal(t, fmt.Sprintf("extsort: output rows differ from input: got %+v, want %+v", got, want), w.Check(want).Error())
}
