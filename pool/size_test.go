package pool

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHumanReadableSizeMatchesDataFusion: the expected strings were
// produced by DataFusion 54.1.0's human_readable_size (compiled with rustc
// on this machine), including the round-half-even ties 2304 → "2.2 KB"
// (2.25) and 2816 → "2.8 KB" (2.75).
func TestHumanReadableSizeMatchesDataFusion(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0.0 B"},
		{1, "1.0 B"},
		{2000, "2000.0 B"},
		{2047, "2047.0 B"},
		{2048, "2.0 KB"},
		{2099, "2.0 KB"},
		{2150, "2.1 KB"},
		{2304, "2.2 KB"}, // 2.25: tie, rounds to even
		{2355, "2.3 KB"},
		{2816, "2.8 KB"}, // 2.75: tie, rounds to even
		{3379, "3.3 KB"},
		{104857, "102.4 KB"},
		{4194303, "4.0 MB"},
		{4456448, "4.2 MB"},
		{1 << 30, "1024.0 MB"},
		{2 << 30, "2.0 GB"},
		{(2 << 30) + (1 << 28), "2.2 GB"}, // 2.25 GB: tie
		{(5 << 40) + (1 << 38), "5.2 TB"}, // 5.25 TB: tie
		{math.MaxInt64, "8388608.0 TB"},
	} {
		assert.Equal(t, tc.want, HumanReadableSize(tc.n), "HumanReadableSize(%d)", tc.n)
	}
}

// TestHumanReadableSizeThresholdsAreTwiceTheUnit: each unit starts at
// exactly twice its size, one byte earlier is still the smaller unit.
func TestHumanReadableSizeThresholdsAreTwiceTheUnit(t *testing.T) {
	for _, tc := range []struct {
		unit        int64
		below, from string
	}{
		{KB, "2047.0 B", "2.0 KB"},
		{MB, "2048.0 KB", "2.0 MB"},
		{GB, "2048.0 MB", "2.0 GB"},
		{TB, "2048.0 GB", "2.0 TB"},
	} {
		assert.Equal(t, tc.below, HumanReadableSize(2*tc.unit-1))
		assert.Equal(t, tc.from, HumanReadableSize(2*tc.unit))
	}
}

// TestHumanReadableSizeFormatsNegativeCountsSymmetrically (DataFusion's
// sizes are unsigned; ours can be negative only in a miscounted pool).
// math.MinInt64 used to fall through to bytes because its absolute value
// overflowed int64.
func TestHumanReadableSizeFormatsNegativeCountsSymmetrically(t *testing.T) {
	assert.Equal(t, "-5.0 B", HumanReadableSize(-5))
	assert.Equal(t, "-2.0 KB", HumanReadableSize(-2048))
	assert.Equal(t, "-8388608.0 TB", HumanReadableSize(math.MinInt64))
}
