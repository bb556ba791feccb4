package bridge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/pool"
)

// TestPoolKindsNameThePoolsTheyOpen: each kind of PoolKinds (generated into
// Java's PoolKind) opens the pool its configuration name says, and the
// pool names itself so in a refusal.
func TestPoolKindsNameThePoolsTheyOpen(t *testing.T) {
	kinds := PoolKinds()
	require.Equal(t, []int32{KindFairUnified, KindGreedyUnified}, []int32{kinds[0].Code, kinds[1].Code})
	assert.Equal(t, []string{"fair_unified", "greedy_unified"}, []string{kinds[0].ConfigName, kinds[1].ConfigName})
	for i, k := range kinds {
		t.Run(k.ConfigName, func(t *testing.T) {
			assert.Regexp(t, `^[A-Z].*\.$`, k.Doc)
			assert.Equal(t, k.ConfigName, kindName(k.Code))
			b, _ := newTestBridge(t)
			up := newFakeUpstream(100)
			ph := mustOpen(t, b, int64(40+i), k.Code, 1000, 0, up)
			rh := mustReserve(t, b, ph, "c", false, nil)
			err := b.TryGrow(rh, 500)
			require.ErrorIs(t, err, pool.ErrResourcesExhausted)
			assert.Contains(t, err.Error(), k.ConfigName+"[task ")
			require.NoError(t, b.CloseReservation(rh))
			require.NoError(t, b.ClosePool(ph))
		})
	}
	assert.Equal(t, "kind 7", kindName(7))
	_, err := newTestBridgeOnly(t).OpenPool(1, 7, 0, 0, nil)
	assert.ErrorIs(t, err, ErrInvalidArgument, "a code no kind has")
}

// TestLeakKindsAreTheKindsRecordLeakAccepts: the table LeakKind.java is
// generated from is the set reportLeak0 accepts, in the order of the
// Leak* constants.
func TestLeakKindsAreTheKindsRecordLeakAccepts(t *testing.T) {
	kinds := LeakKinds()
	var codes []string
	for _, k := range kinds {
		codes = append(codes, k.Code)
		assert.Regexp(t, `^[A-Z].*\.$`, k.Doc, k.Code)
	}
	assert.Equal(t, []string{LeakReservation, LeakArrow, LeakExport, LeakJavaArrow}, codes)
	b := newTestBridgeOnly(t)
	for _, c := range codes {
		require.NoError(t, b.RecordLeak(Leak{TaskAttemptID: 1, Consumer: "c", Kind: c, Bytes: 1}), c)
	}
	err := b.RecordLeak(Leak{TaskAttemptID: 1, Consumer: "c", Kind: "javaArrow", Bytes: 1})
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.Equal(t, int64(len(codes)), b.ProcessStats().Leaks)
	kinds[0].Code = "changed"
	assert.Equal(t, LeakReservation, LeakKinds()[0].Code, "a copy each time")
}

// newTestBridgeOnly is newTestBridge without its log buffer.
func newTestBridgeOnly(t *testing.T) *Bridge {
	b, _ := newTestBridge(t)
	return b
}
