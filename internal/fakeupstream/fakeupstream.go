// Package fakeupstream is the one fake pool.Upstream every test and
// benchmark of nativepool's pools shares: Spark's TaskMemoryManager as a
// unified pool sees it. Not for use outside tests.
//
// One type, three uses:
//
//   - New: a programmable Spark. It grants min(ask, limit − held) unless a
//     scripted reply says otherwise, records every ask and release, can fail
//     releases, runs hooks where Spark would call spill() on the calling
//     thread, and PANICS on what a real Spark would log as an internal
//     error: a release of more than it granted, and any zero-byte or
//     negative call (the pools must filter those). With RecordMisuse it
//     records those instead (Misuse), and also any call after Close: for
//     the JNI bridge's tests, where a panic inside an upcall would be turned
//     into an error and hide the misuse.
//   - NewCounting: the cheapest honest upstream for benchmarks: it grants
//     everything and counts with atomics only, so a benchmark measures the
//     pool, not the fake.
//   - Audit: a wrapper around a real upstream (the in-process arbiter) that
//     keeps its own count of what it granted and got back, so a test can
//     tell an over-return by the pool from the arbiter clamping one.
package fakeupstream

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Upstream is the pool.Upstream interface, repeated here so that this
// package does not import pool (pool's own tests import this package).
type Upstream interface {
	Acquire(n int64) (granted int64, err error)
	Release(n int64) error
}

// Reply is a scripted answer to one Acquire(ask).
type Reply func(ask int64) (granted int64, err error)

// Grant replies with n bytes, whatever was asked.
func Grant(n int64) Reply { return func(int64) (int64, error) { return n, nil } }

// GrantAsk replies with the ask plus d bytes (d < 0: a short grant).
func GrantAsk(d int64) Reply { return func(a int64) (int64, error) { return a + d, nil } }

// Fail replies with err and no bytes.
func Fail(err error) Reply { return func(int64) (int64, error) { return 0, err } }

// Spark is the fake. It is safe for concurrent use; build it with New,
// NewCounting or Audit (the zero Spark is not valid).
type Spark struct {
	// counting: NewCounting's fast path (atomics only, no checks beyond the
	// over-return, no records, no hooks). Immutable.
	counting bool
	// recordMisuse: RecordMisuse was given. Immutable.
	recordMisuse bool
	// inner: Audit's real upstream, or nil. Immutable.
	inner Upstream

	held, acquires, releases, overReturns, closes atomic.Int64

	mu struct {
		sync.Mutex
		limit     int64
		script    []Reply
		relErr    error
		asks      []int64
		rels      []int64
		onAcquire func(ask int64)
		onRelease func(n int64)
		misuse    []string
	}
}

// Option configures New.
type Option func(*Spark)

// RecordMisuse makes the fake record what it would panic on (zero-byte or
// negative calls, over-returns), and every call after Close, instead of
// panicking; read them with Misuse.
func RecordMisuse() Option { return func(s *Spark) { s.recordMisuse = true } }

// New returns a programmable Spark with no limit.
func New(opts ...Option) *Spark {
	s := &Spark{}
	s.mu.limit = math.MaxInt64
	for _, o := range opts {
		o(s)
	}
	return s
}

// misuse panics with msg, or records it under RecordMisuse.
func (s *Spark) misuse(msg string) {
	if !s.recordMisuse {
		panic("fakeupstream: " + msg)
	}
	s.mu.Lock()
	s.mu.misuse = append(s.mu.misuse, msg)
	s.mu.Unlock()
}

// NewCounting returns the benchmark upstream: it grants every ask and
// counts calls with atomics; it panics on an over-return.
func NewCounting() *Spark { return &Spark{counting: true} }

// Audit wraps inner: every call goes to inner, and the wrapper counts what
// inner granted and got back, and every release of more than was
// outstanding (OverReturns), without panicking.
func Audit(inner Upstream) *Spark {
	s := New()
	s.inner = inner
	return s
}

// Acquire implements pool.Upstream.
func (s *Spark) Acquire(n int64) (int64, error) {
	s.acquires.Add(1)
	if s.counting {
		s.held.Add(n)
		return n, nil
	}
	if s.closes.Load() != 0 {
		s.misuse(fmt.Sprintf("Acquire(%d) after Close", n))
	}
	if n <= 0 {
		s.misuse(fmt.Sprintf("Acquire(%d): the pool must never ask for %d bytes", n, n))
		return 0, nil
	}
	s.mu.Lock()
	hook := s.mu.onAcquire
	s.mu.Unlock()
	if hook != nil {
		hook(n) // without the lock, the way Spark runs spill() on the calling thread
	}
	if s.inner != nil {
		got, err := s.inner.Acquire(n)
		if err == nil && got > 0 {
			s.held.Add(got)
		}
		return got, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.asks = append(s.mu.asks, n)
	if len(s.mu.script) > 0 {
		reply := s.mu.script[0]
		s.mu.script = s.mu.script[1:]
		got, err := reply(n)
		if err == nil && got > 0 {
			s.held.Add(got) // the fake really granted this, even past the request
		}
		return got, err
	}
	got := min(n, max(0, s.mu.limit-s.held.Load()))
	s.held.Add(got)
	return got, nil
}

// Release implements pool.Upstream; New's fake panics on an over-return,
// Audit's counts it and passes it on.
func (s *Spark) Release(n int64) error {
	if s.counting {
		s.releases.Add(1)
		if s.held.Add(-n) < 0 {
			panic("fakeupstream: over-return")
		}
		return nil
	}
	if s.closes.Load() != 0 {
		s.misuse(fmt.Sprintf("Release(%d) after Close", n))
	}
	if n <= 0 {
		s.misuse(fmt.Sprintf("Release(%d): the pool must never release %d bytes", n, n))
		return nil
	}
	s.mu.Lock()
	hook := s.mu.onRelease
	s.mu.Unlock()
	if hook != nil {
		hook(n) // before anything is released: a panic here releases nothing
	}
	if s.inner != nil {
		if s.held.Add(-n) < 0 {
			s.overReturns.Add(1)
		}
		s.releases.Add(1)
		return s.inner.Release(n)
	}
	s.mu.Lock()
	if s.mu.relErr != nil {
		err := s.mu.relErr
		s.mu.Unlock()
		return err
	}
	if h := s.held.Load(); n > h {
		s.mu.Unlock()
		s.misuse(fmt.Sprintf("Release(%d) but only %d granted and not returned: over-return", n, h))
		s.mu.Lock()
	}
	s.releases.Add(1)
	s.mu.rels = append(s.mu.rels, n)
	s.held.Add(-n)
	s.mu.Unlock()
	return nil
}

// Close stands in for the bridge deleting its global ref to Spark's
// consumer: under RecordMisuse every later call is misuse. Closes counts it.
func (s *Spark) Close() { s.closes.Add(1) }

// Closes is the number of Close calls.
func (s *Spark) Closes() int64 { return s.closes.Load() }

// Misuse is, under RecordMisuse, what the fake would otherwise have
// panicked on, in order.
func (s *Spark) Misuse() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.mu.misuse...)
}

// Held is what the fake granted and did not get back.
func (s *Spark) Held() int64 { return s.held.Load() }

// Calls is the number of Acquire calls and of successful Release calls.
func (s *Spark) Calls() (acquires, releases int64) { return s.acquires.Load(), s.releases.Load() }

// OverReturns is, for Audit, the number of releases of more than was
// outstanding.
func (s *Spark) OverReturns() int64 { return s.overReturns.Load() }

// Asks is every Acquire's ask so far, in order.
func (s *Spark) Asks() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.mu.asks...)
}

// Rels is every successful Release so far, in order.
func (s *Spark) Rels() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.mu.rels...)
}

// SetLimit sets the total the fake grants up to.
func (s *Spark) SetLimit(n int64) { s.mu.Lock(); s.mu.limit = n; s.mu.Unlock() }

// Reply queues one-shot replies used by the next Acquire calls in order.
func (s *Spark) Reply(replies ...Reply) {
	s.mu.Lock()
	s.mu.script = append(s.mu.script, replies...)
	s.mu.Unlock()
}

// FailReleases makes every Release return err (recording nothing) until
// called with nil.
func (s *Spark) FailReleases(err error) { s.mu.Lock(); s.mu.relErr = err; s.mu.Unlock() }

// OnAcquire sets the hook run at the start of each Acquire (no lock held).
func (s *Spark) OnAcquire(fn func(ask int64)) { s.mu.Lock(); s.mu.onAcquire = fn; s.mu.Unlock() }

// OnRelease sets the hook run at the start of each Release (no lock held),
// before anything is released: a panic there releases nothing.
func (s *Spark) OnRelease(fn func(n int64)) { s.mu.Lock(); s.mu.onRelease = fn; s.mu.Unlock() }
