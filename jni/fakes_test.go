package jni

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeUpstream is Spark's TaskMemoryManager as the bridge sees it through
// NativeUpstream: it grants up to budget bytes in total, can fail the next
// call with an error, and checks that nothing is released twice or after
// Close deleted its "global ref".
type fakeUpstream struct {
	budget atomic.Int64
	held   atomic.Int64

	acquires, releases atomic.Int64
	closed             atomic.Int32 // Close calls (must end at exactly 1)

	mu      sync.Mutex
	failAcq error                    // returned once by the next Acquire
	before  func(op string, n int64) // runs at the start of each call, like Spark's spill re-entering
	misuse  []string
}

func newFakeUpstream(budget int64) *fakeUpstream {
	u := &fakeUpstream{}
	u.budget.Store(budget)
	return u
}

func (u *fakeUpstream) Acquire(n int64) (int64, error) {
	u.acquires.Add(1)
	u.mu.Lock()
	hook := u.before
	u.mu.Unlock()
	if hook != nil {
		hook("acquire", n)
	}
	u.mu.Lock()
	fail := u.failAcq
	u.failAcq = nil
	if u.closed.Load() != 0 {
		u.misuse = append(u.misuse, fmt.Sprintf("Acquire(%d) after Close", n))
	}
	if n <= 0 {
		u.misuse = append(u.misuse, fmt.Sprintf("Acquire(%d)", n))
	}
	u.mu.Unlock()
	if fail != nil {
		return 0, fail
	}
	for {
		h := u.held.Load()
		got := max(0, min(n, u.budget.Load()-h))
		if u.held.CompareAndSwap(h, h+got) {
			return got, nil
		}
	}
}

func (u *fakeUpstream) Release(n int64) error {
	u.releases.Add(1)
	u.mu.Lock()
	hook := u.before
	u.mu.Unlock()
	if hook != nil {
		hook("release", n)
	}
	u.mu.Lock()
	if u.closed.Load() != 0 {
		u.misuse = append(u.misuse, fmt.Sprintf("Release(%d) after Close", n))
	}
	if n <= 0 {
		u.misuse = append(u.misuse, fmt.Sprintf("Release(%d)", n))
	}
	u.mu.Unlock()
	if h := u.held.Add(-n); h < 0 {
		u.mu.Lock()
		u.misuse = append(u.misuse, fmt.Sprintf("Release(%d) over-returns: held %d", n, h))
		u.mu.Unlock()
	}
	return nil
}

func (u *fakeUpstream) Close() { u.closed.Add(1) }

func (u *fakeUpstream) failNextAcquire(err error)       { u.mu.Lock(); u.failAcq = err; u.mu.Unlock() }
func (u *fakeUpstream) setBefore(f func(string, int64)) { u.mu.Lock(); u.before = f; u.mu.Unlock() }

// requireSane fails the test if the bridge misused the upstream.
func (u *fakeUpstream) requireSane(t testing.TB) {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	require.Empty(t, u.misuse)
	require.GreaterOrEqual(t, u.held.Load(), int64(0))
}

// fakeSpiller is a NativeSpiller: Spill calls spill (which shrinks a
// reservation through the Bridge, like the Java spiller does through
// shrink0), unless Close was called.
type fakeSpiller struct {
	spill  func(target int64) (int64, error)
	calls  atomic.Int64
	closed atomic.Int32
}

func (s *fakeSpiller) Spill(target int64) (int64, error) {
	s.calls.Add(1)
	if s.closed.Load() != 0 {
		return 0, fmt.Errorf("spill after Close")
	}
	return s.spill(target)
}

func (s *fakeSpiller) Close() { s.closed.Add(1) }

// refLog records the global refs deleted by JavaException.discard and
// sharedRef, standing in for np_delete_global.
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

// logBuffer is a slog logger writing text records to a buffer.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) lines(substr string) []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

func newTestBridge(t testing.TB) (*Bridge, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	return NewBridge(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))), logs
}

// mustOpen opens a pool and fails the test on error.
func mustOpen(t testing.TB, b *Bridge, task int64, kind int32, size, chunk int64, up ownedUpstream) int64 {
	t.Helper()
	h, err := b.OpenPool(task, kind, size, chunk, up)
	require.NoError(t, err)
	return h
}

func mustReserve(t testing.TB, b *Bridge, ph int64, name string, canSpill bool, sp ownedSpiller) int64 {
	t.Helper()
	h, err := b.NewReservation(ph, name, canSpill, sp)
	require.NoError(t, err)
	return h
}
