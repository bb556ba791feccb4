package bridge

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/fakeupstream"
)

// fakeUpstream is Spark's TaskMemoryManager as the bridge sees it through
// the Java interface Upstream: the one shared fake (internal/fakeupstream)
// granting up to budget bytes in total, recording misuse (a zero or
// negative call, an over-return, a call after Close deleted its "global
// ref") instead of panicking, since the bridge would turn a panic in an
// upcall into an error.
type fakeUpstream struct{ *fakeupstream.Spark }

func newFakeUpstream(budget int64) *fakeUpstream {
	u := &fakeUpstream{fakeupstream.New(fakeupstream.RecordMisuse())}
	u.SetLimit(budget)
	return u
}

// failNextAcquire makes the next Acquire fail with err.
func (u *fakeUpstream) failNextAcquire(err error) { u.Reply(fakeupstream.Fail(err)) }

// setBefore runs f at the start of each call, like Spark's spill re-entering.
func (u *fakeUpstream) setBefore(f func(op string, n int64)) {
	if f == nil {
		u.OnAcquire(nil)
		u.OnRelease(nil)
		return
	}
	u.OnAcquire(func(n int64) { f("acquire", n) })
	u.OnRelease(func(n int64) { f("release", n) })
}

// requireSane fails the test if the bridge misused the upstream.
func (u *fakeUpstream) requireSane(t testing.TB) {
	t.Helper()
	require.Empty(t, u.Misuse())
	require.GreaterOrEqual(t, u.Held(), int64(0))
}

// fakeSpiller is a Java Spiller: Spill calls spill (which shrinks a
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
		// As jvmSpiller: a reclaim may reach a spiller whose reservation
		// closed after the reclaim's snapshot; it frees nothing.
		return 0, nil
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
	b := NewBridge(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), (&fakeArrowRuntime{}).runtime())
	b.UseProcessRuntime(newFakeProcess().runtime()) // no forced GCs, no mallopt, no /proc
	return b, logs
}

// mustOpen opens a pool and fails the test on error.
func mustOpen(t testing.TB, b *Bridge, task int64, kind int32, size, chunk int64, up OwnedUpstream) int64 {
	t.Helper()
	h, err := b.OpenPool(task, kind, size, chunk, ownerOf(up))
	require.NoError(t, err)
	return h
}

// ownerOf is the OwnerFactory of an upstream made beforehand (a fake): it
// returns up, as the export returns the candidate's global ref.
func ownerOf(up OwnedUpstream) OwnerFactory {
	return func(int64) (OwnedUpstream, error) { return up, nil }
}

// countingOwner is an OwnerFactory that counts its calls and records the
// task handles it was given.
type countingOwner struct {
	up    OwnedUpstream
	calls atomic.Int64
	task  atomic.Int64
}

func (o *countingOwner) factory(task int64) (OwnedUpstream, error) {
	o.calls.Add(1)
	o.task.Store(task)
	return o.up, nil
}

func mustReserve(t testing.TB, b *Bridge, ph int64, name string, canSpill bool, sp OwnedSpiller) int64 {
	t.Helper()
	h, err := b.NewReservation(ph, name, canSpill, sp)
	require.NoError(t, err)
	return h
}

// liveHandles reports the open pool and reservation handles.
func (b *Bridge) liveHandles() (pools, reservations int) {
	return b.pools.Len(), b.reservations.Len()
}

// taskHandle returns the task handle of the pool of handle h.
func (b *Bridge) taskHandle(h int64) (int64, error) {
	ph, err := b.pool(h)
	if err != nil {
		return 0, err
	}
	return ph.tp.task, nil
}

// inFlight is the number of counted calls in flight.
func (g *callGate) inFlight() int64 { return g.state.Load() / gateCall }

// closing reports whether the close has begun.
func (g *callGate) closing() bool { return g.state.Load()&gateClosing != 0 }
