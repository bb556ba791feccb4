package engineapi

import (
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/bridge"
	"github.com/nativepool/nativepool/internal/fakeupstream"
)

// fakeUpstream is Spark's TaskMemoryManager as the bridge sees it: the one
// shared fake (internal/fakeupstream) granting up to budget bytes in total,
// recording misuse instead of panicking.
type fakeUpstream struct{ *fakeupstream.Spark }

func newFakeUpstream(budget int64) *fakeUpstream {
	u := &fakeUpstream{fakeupstream.New(fakeupstream.RecordMisuse())}
	u.SetLimit(budget)
	return u
}

// requireSane fails the test if the bridge misused the upstream.
func (u *fakeUpstream) requireSane(t testing.TB) {
	t.Helper()
	require.Empty(t, u.Misuse())
	require.GreaterOrEqual(t, u.Held(), int64(0))
}

// refLog records the global refs a JavaException deletes, standing in for
// the JVM's DeleteGlobalRef.
type refLog struct {
	mu      sync.Mutex
	deleted []uintptr
}

func (l *refLog) delete(ref uintptr) {
	l.mu.Lock()
	l.deleted = append(l.deleted, ref)
	l.mu.Unlock()
}

func (l *refLog) list() []uintptr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]uintptr(nil), l.deleted...)
}

// newTestBridge is a Bridge without Arrow (no engine call here uses it).
func newTestBridge(t testing.TB) (*bridge.Bridge, *slog.Logger) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	return bridge.NewBridge(logger, bridge.ArrowRuntime{}), logger
}

// mustOpen opens a task pool on b and fails the test on error.
func mustOpen(t testing.TB, b *bridge.Bridge, task int64, kind int32, size, chunk int64, up bridge.OwnedUpstream) int64 {
	t.Helper()
	h, err := b.OpenPool(task, kind, size, chunk, func(int64) (bridge.OwnedUpstream, error) { return up, nil })
	require.NoError(t, err)
	return h
}
