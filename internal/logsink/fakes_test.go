package logsink

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/bridge"
	"github.com/nativepool/nativepool/internal/fakeupstream"
)

// newFakeUpstream is Spark's TaskMemoryManager as the bridge sees it: the
// one shared fake, granting up to budget bytes in total.
func newFakeUpstream(budget int64) *fakeupstream.Spark {
	u := fakeupstream.New(fakeupstream.RecordMisuse())
	u.SetLimit(budget)
	return u
}

// mustOpen opens a task pool on b and fails the test on error.
func mustOpen(t testing.TB, b *bridge.Bridge, task int64, kind int32, size, chunk int64, up bridge.OwnedUpstream) int64 {
	t.Helper()
	h, err := b.OpenPool(task, kind, size, chunk, func(int64) (bridge.OwnedUpstream, error) { return up, nil })
	require.NoError(t, err)
	return h
}

// mustReserve registers a reservation in pool handle ph and fails the test
// on error.
func mustReserve(t testing.TB, b *bridge.Bridge, ph int64, name string, canSpill bool, sp bridge.OwnedSpiller) int64 {
	t.Helper()
	h, err := b.NewReservation(ph, name, canSpill, sp)
	require.NoError(t, err)
	return h
}
