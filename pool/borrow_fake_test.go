package pool_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/pool"
)

// sparkFake is a programmable Upstream standing in for Spark's
// TaskMemoryManager in the unified-pool tests. It keeps what it granted and
// not yet got back (Held) and PANICS on anything a real Spark would log as
// an internal error: a release of more than it granted, and any zero-byte
// or negative call (the pools must filter those). By default it grants
// min(ask, Limit−Held); Script replies override that one call at a time;
// OnAcquire runs inside Acquire without the fake's lock, before the grant,
// the way Spark runs spill() on the calling thread.
//
// It is safe for concurrent use.
type sparkFake struct {
	mu       sync.Mutex
	held     int64
	limit    int64
	script   []func(ask int64) (int64, error)
	relErr   error
	acquires int64
	releases int64
	asks     []int64
	rels     []int64
	// onAcquire, when set, runs at the start of every Acquire (no lock held).
	onAcquire func(ask int64)
	// onRelease, when set, runs at the start of every Release (no lock
	// held), before anything is released: a panic there releases nothing.
	onRelease func(n int64)
}

func newSparkFake() *sparkFake { return &sparkFake{limit: math.MaxInt64} }

// Acquire implements pool.Upstream.
func (f *sparkFake) Acquire(n int64) (int64, error) {
	if n <= 0 {
		panic(fmt.Sprintf("sparkFake: Acquire(%d): the pool must never ask for %d bytes", n, n))
	}
	f.mu.Lock()
	hook := f.onAcquire
	f.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acquires++
	f.asks = append(f.asks, n)
	if len(f.script) > 0 {
		reply := f.script[0]
		f.script = f.script[1:]
		got, err := reply(n)
		if err == nil && got > 0 {
			f.held += got // the fake really granted this, even past the request
		}
		return got, err
	}
	got := min(n, max(0, f.limit-f.held))
	f.held += got
	return got, nil
}

// Release implements pool.Upstream; it panics on an over-return.
func (f *sparkFake) Release(n int64) error {
	if n <= 0 {
		panic(fmt.Sprintf("sparkFake: Release(%d): the pool must never release %d bytes", n, n))
	}
	f.mu.Lock()
	hook := f.onRelease
	f.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.relErr != nil {
		return f.relErr
	}
	if n > f.held {
		panic(fmt.Sprintf("sparkFake: Release(%d) but only %d granted and not returned: over-return", n, f.held))
	}
	f.releases++
	f.rels = append(f.rels, n)
	f.held -= n
	return nil
}

// Held is what the fake granted and did not get back.
func (f *sparkFake) Held() int64 { f.mu.Lock(); defer f.mu.Unlock(); return f.held }

// Calls is the number of Acquire and Release calls so far.
func (f *sparkFake) Calls() (acquires, releases int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acquires, int64(len(f.rels))
}

// Asks and Rels are the sizes of every Acquire and successful Release.
func (f *sparkFake) Asks() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.asks...)
}
func (f *sparkFake) Rels() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.rels...)
}

// SetLimit caps what the fake grants in total (Held never exceeds it by the
// default policy).
func (f *sparkFake) SetLimit(n int64) { f.mu.Lock(); f.limit = n; f.mu.Unlock() }

// Reply queues one-shot replies used by the next Acquire calls in order.
func (f *sparkFake) Reply(replies ...func(ask int64) (int64, error)) {
	f.mu.Lock()
	f.script = append(f.script, replies...)
	f.mu.Unlock()
}

// FailReleases makes every Release return err (recording nothing) until
// called with nil.
func (f *sparkFake) FailReleases(err error) { f.mu.Lock(); f.relErr = err; f.mu.Unlock() }

// OnAcquire sets the hook run at the start of each Acquire.
func (f *sparkFake) OnAcquire(fn func(ask int64)) { f.mu.Lock(); f.onAcquire = fn; f.mu.Unlock() }

// OnRelease sets the hook run at the start of each Release.
func (f *sparkFake) OnRelease(fn func(n int64)) { f.mu.Lock(); f.onRelease = fn; f.mu.Unlock() }

// grant replies with a fixed number of bytes; fail replies with an error.
func grant(n int64) func(int64) (int64, error) { return func(int64) (int64, error) { return n, nil } }
func grantAsk(d int64) func(int64) (int64, error) {
	return func(a int64) (int64, error) { return a + d, nil }
}
func fail(err error) func(int64) (int64, error) { return func(int64) (int64, error) { return 0, err } }

var _ pool.Upstream = (*sparkFake)(nil)

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
//   - Held = Reserved − Overcommit + Slack (the ledger adds up);
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
	case s.Reserved < 0 || s.Held < 0 || s.Slack < 0 || s.Overcommit < 0 || s.Owed < 0:
		return fmt.Sprintf("negative figure: %+v", s)
	case s.Acquiring != 0 || s.Returning != 0:
		return fmt.Sprintf("a call is still in flight: %+v", s)
	case s.Held != s.Reserved-s.Overcommit+s.Slack+s.Owed:
		return fmt.Sprintf("Held %d != Reserved %d - Overcommit %d + Slack %d + Owed %d", s.Held, s.Reserved, s.Overcommit, s.Slack, s.Owed)
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

// auditedUpstream wraps a real Upstream (the arbiter) and keeps its own
// count of what it granted and got back, so a test can tell an over-return
// by the pool from the arbiter clamping one: it counts every Release larger
// than what is outstanding. Safe for concurrent use.
type auditedUpstream struct {
	inner       pool.Upstream
	mu          sync.Mutex
	held        int64
	overReturns int64
}

func (a *auditedUpstream) Acquire(n int64) (int64, error) {
	got, err := a.inner.Acquire(n)
	if err == nil && got > 0 {
		a.mu.Lock()
		a.held += got
		a.mu.Unlock()
	}
	return got, err
}

func (a *auditedUpstream) Release(n int64) error {
	a.mu.Lock()
	if n > a.held {
		a.overReturns++
	}
	a.held -= n
	a.mu.Unlock()
	return a.inner.Release(n)
}

// OverReturns is the number of releases of more than was outstanding.
func (a *auditedUpstream) OverReturns() int64 { a.mu.Lock(); defer a.mu.Unlock(); return a.overReturns }
