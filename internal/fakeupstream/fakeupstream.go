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
//     negative call (the pools must filter those).
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
	// inner: Audit's real upstream, or nil. Immutable.
	inner Upstream

	held, acquires, releases, overReturns atomic.Int64

	mu struct {
		sync.Mutex
		limit     int64
		script    []Reply
		relErr    error
		asks      []int64
		rels      []int64
		onAcquire func(ask int64)
		onRelease func(n int64)
	}
}

// New returns a programmable Spark with no limit.
func New() *Spark {
	s := &Spark{}
	s.mu.limit = math.MaxInt64
	return s
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
	if n <= 0 {
		panic(fmt.Sprintf("fakeupstream: Acquire(%d): the pool must never ask for %d bytes", n, n))
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
	if n <= 0 {
		panic(fmt.Sprintf("fakeupstream: Release(%d): the pool must never release %d bytes", n, n))
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
	defer s.mu.Unlock()
	if s.mu.relErr != nil {
		return s.mu.relErr
	}
	if h := s.held.Load(); n > h {
		panic(fmt.Sprintf("fakeupstream: Release(%d) but only %d granted and not returned: over-return", n, h))
	}
	s.releases.Add(1)
	s.mu.rels = append(s.mu.rels, n)
	s.held.Add(-n)
	return nil
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
