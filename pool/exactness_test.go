package pool_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/nativepool/nativepool/arbiter"
	"github.com/nativepool/nativepool/internal/fakeupstream"
	"github.com/nativepool/nativepool/pool"
)

// The tests in this file pin the exactness rules: the books stay exact when a
// Close races a grow or a split, when a callout panics, when a caller shrinks
// more than was recorded, while bytes are on their way to or from upstream,
// and when a pool goes idle.

// exactPool is one pool under test with the upstream figure it is checked
// against (0 for the standalone pools, which borrow from nobody).
type exactPool struct {
	name     string
	pool     pool.Pool
	upstream func() int64
}

// exactPools builds one of each pool kind: the standalone pools, and both
// unified pools over the Spark fake with the default chunk (and so the
// quantised 1 MiB chunk at these sizes).
func exactPools(t *testing.T) []exactPool {
	t.Helper()
	none := func() int64 { return 0 }
	upG, upF := fakeupstream.New(), fakeupstream.New()
	return []exactPool{
		{"unbounded", pool.NewUnbounded(), none},
		{"greedy", pool.NewGreedy(1 << 30), none},
		{"fair", pool.NewFair(1 << 30), none},
		{"track_consumers(fair)", pool.NewTrackConsumers(pool.NewFair(1<<30), 5), none},
		{"greedy_unified", unified(t, "greedy", upG, 0), upG.Held},
		{"fair_unified", unified(t, "fair", upF, 1<<30), upF.Held},
	}
}

// Race: a grow and a Close of the same reservation on two goroutines, 20,000
// times on every pool. Either the grow lands first (Close frees it) or it
// fails with ErrClosed (Grow panics); after every round the pool's Reserved
// and upstream's figure are back where they were, and the consumer is
// unregistered exactly once (the fair pool panics on a second Unregister).
func TestGrowRacingCloseLeavesNothingInThePoolOrUpstream(t *testing.T) {
	rounds := 20_000
	if testing.Short() {
		rounds = 2_000
	}
	for _, ep := range exactPools(t) {
		t.Run(ep.name, func(t *testing.T) {
			var landed, refused int
			for i := range rounds {
				r := pool.NewConsumer("race").WithCanSpill(true).Register(ep.pool)
				start := make(chan struct{})
				var g errgroup.Group
				g.Go(func() error {
					<-start
					if i%2 == 0 {
						return r.TryGrow(4096)
					}
					return growRecovering(r, 4096)
				})
				g.Go(func() error { <-start; r.Close(); return nil })
				close(start)
				if err := g.Wait(); err != nil {
					require.ErrorIs(t, err, pool.ErrClosed, "round %d", i)
					refused++
				} else {
					landed++
				}
				require.Zero(t, ep.pool.Reserved(), "round %d: the pool keeps bytes of a closed reservation", i)
				require.Zero(t, ep.upstream(), "round %d: upstream keeps bytes of a closed reservation", i)
			}
			t.Logf("%d rounds: grow first %d, close first %d", rounds, landed, refused)
		})
	}
}

// growRecovering calls r.Grow(n) and turns its panic into the error it
// names (a Grow on a closed reservation panics with ErrClosed's text).
func growRecovering(r *pool.Reservation, n int64) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v: %w", v, pool.ErrClosed)
		}
	}()
	r.Grow(n)
	return nil
}

// Race: a Split or NewEmpty racing the registration's last Close either
// makes a sibling before it (whose own Close is then the last) or panics
// with ErrClosed; no sibling is born after the last Close, so the consumer
// is unregistered once and a late sibling's Close never panics.
func TestSplitRacingTheLastCloseBearsNoSiblingAfterIt(t *testing.T) {
	rounds := 20_000
	if testing.Short() {
		rounds = 2_000
	}
	for _, ep := range exactPools(t) {
		t.Run(ep.name, func(t *testing.T) {
			for i := range rounds {
				r := pool.NewConsumer("race").WithCanSpill(true).Register(ep.pool)
				r.Grow(4096)
				start := make(chan struct{})
				var g errgroup.Group
				g.Go(func() error {
					<-start
					s, err := splitRecovering(r, i%2 == 0)
					if err != nil {
						return err
					}
					s.Close()
					return nil
				})
				g.Go(func() error { <-start; r.Close(); return nil })
				close(start)
				if err := g.Wait(); err != nil {
					require.ErrorIs(t, err, pool.ErrClosed, "round %d", i)
				}
				require.Zero(t, ep.pool.Reserved(), "round %d", i)
				require.Zero(t, ep.upstream(), "round %d", i)
			}
		})
	}
}

func splitRecovering(r *pool.Reservation, split bool) (s *pool.Reservation, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v: %w", v, pool.ErrClosed)
		}
	}()
	if split {
		return r.Split(1024), nil
	}
	return r.NewEmpty(), nil
}

// A threshold callback may close the reservation whose grow fired it: the
// grow then fails with ErrClosed (Grow panics) and hands its bytes back.
func TestThresholdCallbackMayCloseTheReservationItFiresFor(t *testing.T) {
	for _, ep := range exactPools(t) {
		t.Run(ep.name, func(t *testing.T) {
			w, ok := ep.pool.(pool.Watcher)
			require.True(t, ok)
			var current *pool.Reservation
			stop := w.OnThreshold(pool.Threshold{Level: 1000}, func(c pool.Crossing) {
				if c.Up {
					current.Close()
				}
			})
			defer stop()

			current = pool.NewConsumer("closes-itself").WithCanSpill(true).Register(ep.pool)
			err := current.TryGrow(4096)
			require.ErrorIs(t, err, pool.ErrClosed)
			assert.True(t, current.Closed())
			assert.Zero(t, ep.pool.Reserved())
			assert.Zero(t, ep.upstream())

			current = pool.NewConsumer("closes-itself").WithCanSpill(true).Register(ep.pool)
			assert.PanicsWithValue(t, fmt.Sprintf("pool: Grow(4096) on closed reservation of %s: closed while growing: %v",
				current.Consumer(), pool.ErrClosed), func() { current.Grow(4096) })
			assert.Zero(t, ep.pool.Reserved())
			assert.Zero(t, ep.upstream())
		})
	}
}

// A panicking threshold callback reaches the grow's caller unchanged and
// takes the grow back out: the next grow is judged on the true figures.
func TestPanickingThresholdCallbackLeavesTheBooksAsBefore(t *testing.T) {
	for _, ep := range exactPools(t) {
		t.Run(ep.name, func(t *testing.T) {
			w := ep.pool.(pool.Watcher)
			boom := errors.New("callback panic")
			stop := w.OnThreshold(pool.Threshold{Level: 5000}, func(c pool.Crossing) {
				if c.Up {
					panic(boom)
				}
			})
			r := pool.NewConsumer("c").WithCanSpill(true).Register(ep.pool)
			r.Grow(1000)
			assert.PanicsWithValue(t, boom, func() { _ = r.TryGrow(6000) })
			assert.Equal(t, int64(1000), r.Size())
			assert.Equal(t, int64(1000), ep.pool.Reserved())
			assert.PanicsWithValue(t, boom, func() { r.Grow(6000) })
			assert.Equal(t, int64(1000), r.Size())
			assert.Equal(t, int64(1000), ep.pool.Reserved())
			stop()
			require.NoError(t, r.TryGrow(6000))
			assert.Equal(t, int64(7000), ep.pool.Reserved())
			r.Close()
			assert.Zero(t, ep.pool.Reserved())
			assert.Zero(t, ep.upstream())
		})
	}
}

// A panicking Acquire leaves the books as they were before the TryGrow or
// Grow: the panic reaches the caller unchanged, the bytes it had booked are
// gone from the pool total and from the consumer's fair share, so the next
// TryGrow is judged on the true figures (a share that still counted the 600
// bytes of the panicked request would refuse it).
func TestPanickingAcquireLeavesTheBooksAsBefore(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New()
			p := unified(t, kind, up, 1000, pool.WithChunkSize(0))
			r := pool.NewConsumer("sort").WithCanSpill(true).Register(p)
			r.Grow(100)

			boom := errors.New("JVM went away")
			up.OnAcquire(func(int64) { panic(boom) })
			assert.PanicsWithValue(t, boom, func() { _ = r.TryGrow(600) })
			assert.PanicsWithValue(t, boom, func() { r.Grow(600) })
			up.OnAcquire(nil)

			assert.Equal(t, int64(100), r.Size())
			assert.Equal(t, int64(100), p.Reserved())
			requireUnifiedInvariants(t, p, up.Held(), 0, r)
			require.NoError(t, r.TryGrow(600), "the share must not count the panicked requests")
			requireUnifiedInvariants(t, p, up.Held(), 0, r)
			r.Close()
			require.NoError(t, p.Close())
			assert.Zero(t, up.Held())
		})
	}
}

// A panicking Release is settled like a failed one before the panic goes on:
// upstream released nothing, so the pool still holds the bytes, as owed.
func TestPanickingReleaseKeepsTheBytesHeldAsOwed(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New()
			p := unified(t, kind, up, 1000, pool.WithChunkSize(0))
			r := pool.NewConsumer("sort").WithCanSpill(true).Register(p)
			r.Grow(300)

			boom := errors.New("release panic")
			up.OnRelease(func(int64) { panic(boom) })
			assert.PanicsWithValue(t, boom, func() { r.Shrink(200) })
			up.OnRelease(nil)

			s := p.Stats()
			assert.Equal(t, int64(100), r.Size())
			assert.Equal(t, int64(100), s.Reserved)
			assert.Equal(t, int64(200), s.Owed)
			assert.Zero(t, s.Returning)
			requireUnifiedInvariants(t, p, up.Held(), 0, r)
			r.Close()
			assert.Zero(t, up.Held(), "the last consumer leaving hands back the owed bytes")
			require.NoError(t, p.Close())
		})
	}
}

// Through the in-process arbiter: a TryGrow whose Acquire makes the arbiter
// spill another consumer of the same pool, whose Spiller panics. The panic
// reaches the TryGrow's caller; the arbiter gives back what it gathered,
// and the pool's books and the arbiter's agree afterwards.
func TestPanickingSpillerInsideAReentrantReclaimLeavesTheBooksAsBefore(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			arb := arbiter.New(1000, arbiter.WithLogger(quietLogger()))
			task := arb.NewTask(t.Context(), "task")
			upc := task.NewConsumer("native", nil)
			p := unified(t, kind, upc, 2000, pool.WithChunkSize(0))
			upc.SetReclaimer(p)

			boom := errors.New("spiller panic")
			victim := pool.NewConsumer("victim").WithSpiller(pool.SpillerFunc(func(int64) (int64, error) { panic(boom) })).Register(p)
			victim.Grow(800)
			other := pool.NewConsumer("other").WithCanSpill(true).Register(p)

			assert.PanicsWithValue(t, boom, func() { _ = other.TryGrow(500) })
			assert.Zero(t, other.Size())
			assert.Equal(t, int64(800), p.Reserved())
			requireUnifiedInvariants(t, p, upc.Used(), 0, victim, other)
			require.NoError(t, other.TryGrow(100), "the failed request is not counted against the share or total")
			requireUnifiedInvariants(t, p, upc.Used(), 0, victim, other)

			victim.Close()
			other.Close()
			require.NoError(t, p.Close())
			assert.Zero(t, upc.Used())
			assert.Zero(t, task.Close())
		})
	}
}

// A pool-level shrink of more than the pool recorded for the consumer is an
// accounting bug: it panics with Comet's "Failed to release …" wording and
// changes nothing.
func TestShrinkOfMoreThanThePoolRecordedPanics(t *testing.T) {
	pools := map[string]func() pool.Pool{
		"fair":           func() pool.Pool { return pool.NewFair(1 << 20) },
		"greedy_unified": func() pool.Pool { return unified(t, "greedy", fakeupstream.New(), 0, pool.WithChunkSize(0)) },
		"fair_unified":   func() pool.Pool { return unified(t, "fair", fakeupstream.New(), 1<<20, pool.WithChunkSize(0)) },
	}
	for name, mk := range pools {
		t.Run(name, func(t *testing.T) {
			p := mk()
			c := pool.NewConsumer("sort").WithCanSpill(true)
			r := c.Register(p)
			r.Grow(100)
			assert.PanicsWithValue(t, fmt.Sprintf("Failed to release 101 bytes where only 100 bytes tracked for the consumer %s", c),
				func() { p.Shrink(r, 101) })
			assert.Equal(t, int64(100), p.Reserved(), "nothing changed")
			r.Close()
			assert.Zero(t, p.Reserved())
		})
	}
}

// blockingRelease makes up's next Release wait until the returned func is
// called, and closes entered when it starts waiting.
func blockingRelease(up *fakeupstream.Spark) (entered chan struct{}, unblock func()) {
	entered, gate := make(chan struct{}), make(chan struct{})
	var once sync.Once
	up.OnRelease(func(int64) {
		once.Do(func() { close(entered); <-gate })
	})
	return entered, func() { close(gate) }
}

// While a release is on its way upstream, its bytes still count against the
// pool total and the consumer's fair share: upstream still counts them.
func TestReleaseInFlightStillCountsAgainstTheLimits(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "fair", up, 1000, pool.WithChunkSize(0))
	a := pool.NewConsumer("a").WithCanSpill(true).Register(p)
	b := pool.NewConsumer("b").Register(p) // unspillable: limited by the pool total only
	require.NoError(t, a.TryGrow(600))

	entered, unblock := blockingRelease(up)
	var g errgroup.Group
	g.Go(func() error { a.Shrink(600); return nil })
	<-entered

	s := p.Stats()
	assert.Zero(t, s.Reserved, "the reservation gave its bytes back")
	assert.Equal(t, int64(600), s.Held, "upstream still counts them")
	assert.Equal(t, int64(600), s.Returning)
	require.ErrorIs(t, b.TryGrow(600), pool.ErrResourcesExhausted, "the pool total counts the release in flight")
	require.ErrorIs(t, a.TryGrow(600), pool.ErrResourcesExhausted, "so does the consumer's share")

	unblock()
	require.NoError(t, g.Wait())
	requireUnifiedInvariants(t, p, up.Held(), 0, a, b)
	require.NoError(t, b.TryGrow(600))
	a.Close()
	b.Close()
	require.NoError(t, p.Close())
	assert.Zero(t, up.Held())
}

// A grow whose Acquire is still in flight counts against the pool total
// until it settles.
func TestGrowInFlightCountsAgainstThePoolLimit(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "fair", up, 1000, pool.WithChunkSize(0))
	a := pool.NewConsumer("a").Register(p)
	b := pool.NewConsumer("b").Register(p)
	entered, gate := make(chan struct{}), make(chan struct{})
	up.OnAcquire(func(int64) { close(entered); <-gate })
	var g errgroup.Group
	g.Go(func() error { return a.TryGrow(600) })
	<-entered
	up.OnAcquire(nil)

	assert.Zero(t, p.Reserved(), "a TryGrow in flight is not reserved yet")
	assert.Equal(t, int64(600), p.Stats().Acquiring)
	require.ErrorIs(t, b.TryGrow(600), pool.ErrResourcesExhausted)

	close(gate)
	require.NoError(t, g.Wait())
	assert.Equal(t, int64(600), p.Reserved())
	a.Close()
	b.Close()
	require.NoError(t, p.Close())
}

// An idle pool holds nothing: when its last consumer unregisters, every
// byte of slack goes back upstream in that call.
func TestLastConsumerLeavingReturnsAllSlack(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New()
			p := unified(t, kind, up, 1<<30) // default 8 MiB chunk
			r := pool.NewConsumer("sort").WithCanSpill(true).Register(p)
			require.NoError(t, r.TryGrow(10<<10))
			assert.Positive(t, p.Stats().Slack)
			s := r.Split(4 << 10)
			r.Close()
			assert.Positive(t, up.Held(), "a sibling is still open")
			s.Close()
			assert.Zero(t, up.Held(), "the last Close returned the slack")
			assert.Equal(t, pool.UnifiedStats{}, zeroCounters(p.Stats()))
		})
	}
}

// zeroCounters keeps only the figures of the books in a stats snapshot.
func zeroCounters(s pool.UnifiedStats) pool.UnifiedStats {
	return pool.UnifiedStats{Reserved: s.Reserved, Held: s.Held, Slack: s.Slack, Overcommit: s.Overcommit,
		Acquiring: s.Acquiring, Returning: s.Returning, Owed: s.Owed}
}

// Small pools borrow small chunks, as Velox quantises: 1 MiB while reserved
// is under 16 MiB, 4 MiB under 64 MiB, then the configured chunk, so a
// small task keeps at most a few MiB of slack.
func TestChunkIsQuantisedByPoolSize(t *testing.T) {
	const mib = 1 << 20
	up := fakeupstream.New()
	p := unified(t, "greedy", up, 0) // default 8 MiB chunk
	r := pool.NewConsumer("sort").Register(p)

	require.NoError(t, r.TryGrow(10<<10))
	assert.Equal(t, []int64{mib}, up.Asks())
	require.NoError(t, r.TryGrow(20*mib-r.Size())) // 20 MiB reserved: 4 MiB chunks
	assert.Equal(t, int64(20*mib), up.Asks()[1], "the missing 19 MiB rounded up to 4 MiB")
	require.NoError(t, r.TryGrow(80*mib-r.Size())) // 80 MiB: 8 MiB chunks
	assert.Zero(t, up.Asks()[2]%(8*mib))
	assert.Less(t, p.Stats().Slack, int64(8*mib))

	r.Shrink(r.Size() - mib) // back to 1 MiB reserved: slack trimmed to the small chunk
	assert.LessOrEqual(t, p.Stats().Slack, int64(2*mib))
	requireUnifiedInvariants(t, p, up.Held(), 8*mib, r)
	r.Close()
	assert.Zero(t, up.Held())
}

// Close of a pool while a TryGrow waits upstream: the grant goes back and
// the TryGrow fails with ErrClosed; nothing is left upstream.
func TestPoolCloseDuringAcquireHandsTheGrantBack(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "fair", up, 1<<20, pool.WithChunkSize(0))
	r := pool.NewConsumer("a").Register(p)
	entered, gate := make(chan struct{}), make(chan struct{})
	up.OnAcquire(func(int64) { close(entered); <-gate })
	var g errgroup.Group
	g.Go(func() error { return r.TryGrow(600) })
	<-entered
	require.NoError(t, p.Close())
	close(gate)
	require.ErrorIs(t, g.Wait(), pool.ErrClosed)
	require.Eventually(t, func() bool { return up.Held() == 0 }, time.Second, time.Millisecond)
}
