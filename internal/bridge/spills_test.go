package bridge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/pool"
)

func TestReportSpillSumsPerTaskUntilJavaTakesThem(t *testing.T) {
	b, _ := newTestBridge(t)
	p := mustOpen(t, b, 42, KindFairUnified, 1<<20, 0, newFakeUpstream(1<<20))
	other := mustOpen(t, b, 43, KindFairUnified, 1<<20, 0, newFakeUpstream(1<<20))
	h, err := b.JoinTaskPool(42)
	require.NoError(t, err)
	h43, err := b.JoinTaskPool(43)
	require.NoError(t, err)

	require.NoError(t, b.ReportSpill(h, 100 /* memory */, 1000 /* disk */))
	require.NoError(t, b.ReportSpill(h, 0, 500))
	require.NoError(t, b.ReportSpill(h43, 7, 0))
	require.NoError(t, b.ReportSpill(h43, 0, 0), "a zero report is accepted and records nothing")

	assert.Equal(t, SpillBytes{Memory: 100, Disk: 1500}, b.TakeSpill(42))
	assert.Equal(t, SpillBytes{}, b.TakeSpill(42), "a take forgets what it returned")
	assert.Equal(t, 1, b.PendingSpills())
	assert.Equal(t, SpillBytes{Memory: 7}, b.TakeSpill(43))
	assert.Zero(t, b.PendingSpills(), "no entry outlives its take")

	h.Close()
	h43.Close()
	require.NoError(t, b.ClosePool(p))
	require.NoError(t, b.ClosePool(other))
}

func TestReportSpillRejectsNegativeSizesAndRecordsNothing(t *testing.T) {
	b, _ := newTestBridge(t)
	p := mustOpen(t, b, 42, KindFairUnified, 1<<20, 0, newFakeUpstream(1<<20))
	h, err := b.JoinTaskPool(42)
	require.NoError(t, err)
	defer func() { h.Close(); require.NoError(t, b.ClosePool(p)) }()

	assert.ErrorIs(t, b.ReportSpill(h, -1, 10), pool.ErrInvalidSize)
	assert.ErrorIs(t, b.ReportSpill(h, 10, -1), pool.ErrInvalidSize)
	assert.ErrorIs(t, b.ReportSpill(nil, 10, 10), pool.ErrClosed)
	assert.Zero(t, b.PendingSpills())
}
