package pool_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/pool"
)

// uniLogs captures a pool's slog output for assertions.
type uniLogs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *uniLogs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *uniLogs) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

func (l *uniLogs) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// quietLogger discards everything (tests that provoke warnings on purpose).
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// unified builds a unified pool of the given kind ("greedy" or "fair",
// fair with size bytes) over up, and returns it as pool.Unified.
func unified(t testing.TB, kind string, up pool.Upstream, size int64, opts ...pool.UnifiedOption) pool.Unified {
	t.Helper()
	opts = append([]pool.UnifiedOption{pool.WithLogger(quietLogger())}, opts...)
	var p pool.Pool
	switch kind {
	case "greedy":
		p = pool.NewGreedyUnified(up, opts...)
	case "fair":
		p = pool.NewFairUnified(up, size, opts...)
	default:
		t.Fatalf("unknown kind %q", kind)
	}
	u, ok := pool.As[pool.Unified](p)
	require.True(t, ok, "%T does not implement pool.Unified", p)
	return u
}

// requireUnifiedInvariants checks, at quiescence (no call in flight):
//   - nothing is negative: Reserved, Held, Slack, Overcommit ≥ 0;
//   - Held = Reserved − Overcommit + Slack (the books add up);
//   - upstream's view equals the pool's: upHeld = Held;
//   - overcommit > 0 ⇒ slack = 0 (slack repays the debt first);
//   - slack ≤ 2·chunk (0 in exact mode);
//   - Reserved() = Stats().Reserved = the sum of the reservations' sizes.
func requireUnifiedInvariants(t testing.TB, p pool.Unified, upHeld, chunk int64, rs ...*pool.Reservation) {
	t.Helper()
	if msg := unifiedInvariantViolation(p, upHeld, chunk, rs...); msg != "" {
		t.Fatal(msg)
	}
}

// unifiedInvariantViolation is requireUnifiedInvariants returning a
// description instead of failing ("" when all hold), for gopter.
func unifiedInvariantViolation(p pool.Unified, upHeld, chunk int64, rs ...*pool.Reservation) string {
	s := p.Stats()
	var sum int64
	for _, r := range rs {
		if !r.Closed() {
			sum += r.Size()
		}
	}
	switch {
	case s.Reserved < 0 || s.Held < 0 || s.Slack < 0 || s.Overcommit < 0 || s.Owed < 0 || s.Ballast < 0:
		return fmt.Sprintf("negative figure: %+v", s)
	case s.Acquiring != 0 || s.Returning != 0:
		return fmt.Sprintf("a call is still in flight: %+v", s)
	case s.Held != s.Reserved-s.Overcommit+s.Slack+s.Owed+s.Ballast:
		return fmt.Sprintf("Held %d != Reserved %d - Overcommit %d + Slack %d + Owed %d + Ballast %d", s.Held, s.Reserved, s.Overcommit, s.Slack, s.Owed, s.Ballast)
	case upHeld != s.Held:
		return fmt.Sprintf("upstream holds %d for the pool but the pool says Held %d (%+v)", upHeld, s.Held, s)
	case s.Overcommit > 0 && s.Slack > 0:
		return fmt.Sprintf("overcommit %d with slack %d", s.Overcommit, s.Slack)
	case s.Slack > 2*chunk:
		return fmt.Sprintf("slack %d above 2 chunks of %d", s.Slack, chunk)
	case p.Reserved() != s.Reserved:
		return fmt.Sprintf("Reserved() %d != Stats().Reserved %d", p.Reserved(), s.Reserved)
	case rs != nil && sum != s.Reserved:
		return fmt.Sprintf("reservations sum to %d but the pool reserved %d", sum, s.Reserved)
	}
	return ""
}

// within runs fn and fails the test if it has not returned after d: a
// deadlock shows up as a failure, not a hung test binary.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not finish within %v: deadlock?", what, d)
	}
}
