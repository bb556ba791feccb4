package main

import (
	"encoding/csv"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunSortsCorrectlyOnEveryPoolKind runs the demo small on each pool
// kind with a competitor, and checks the report: correct, rows in = out,
// spills happened, peak reserved within the budget; and the samples CSV
// has the header and allocated ≤ reserved on every row (up to one buffer
// in flight between the two reads).
func TestRunSortsCorrectlyOnEveryPoolKind(t *testing.T) {
	for _, kind := range []string{"fair_unified", "greedy_unified", "fair", "greedy"} {
		t.Run(kind, func(t *testing.T) {
			samples := filepath.Join(t.TempDir(), "s.csv")
			cfg := config{rows: 300_000, batch: 4096, outRows: 2048, budget: 2 << 20, chunk: 256 << 10,
				compete: 1 << 20, pool: kind, seed: 3, samples: samples, tmp: t.TempDir(),
				logger: slog.New(slog.DiscardHandler)}
			rep, err := run(cfg)
			require.NoError(t, err)
			require.True(t, rep.correct, "%v", rep.checkErr)
			assert.Equal(t, cfg.rows, rep.stats.RowsIn)
			assert.Equal(t, cfg.rows, rep.stats.RowsOut)
			assert.Positive(t, rep.stats.SelfSpills+rep.stats.RequestedSpills)
			assert.LessOrEqual(t, rep.stats.PeakReserved, cfg.budget)
			assert.Contains(t, rep.String(), "correctness        OK (sorted, same multiset of rows)")

			f, err := os.Open(samples)
			require.NoError(t, err)
			defer f.Close()
			rows, err := csv.NewReader(f).ReadAll()
			require.NoError(t, err)
			require.Equal(t, []string{"t_ms", "reserved", "allocated", "rss", "held"}, rows[0])
			require.GreaterOrEqual(t, len(rows), 3, "at least a first and a last sample")
			// The sampler reads reserved and allocated one after the other
			// while the sort runs, so one buffer (at most an input batch's
			// chunk) may be charged or freed between the two reads.
			slop := int64(cfg.batch * 16)
			for _, r := range rows[1:] {
				reserved, _ := strconv.ParseInt(r[1], 10, 64)
				allocated, _ := strconv.ParseInt(r[2], 10, 64)
				assert.LessOrEqual(t, allocated, reserved+slop, "sample %v", r)
			}
		})
	}
}

// TestParseBytesAcceptsSuffixes checks the flag parser, errors included.
func TestParseBytesAcceptsSuffixes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "512": 512, "4KiB": 4 << 10, "16MiB": 16 << 20, "2G": 2 << 30, "7 M": 7 << 20} {
		got, err := parseBytes(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := parseBytes("-1MiB")
	assert.EqualError(t, err, `bad byte count "-1MiB" (want e.g. 64MiB)`)
}
