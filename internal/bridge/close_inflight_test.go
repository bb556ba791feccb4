package bridge

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/nativepool/nativepool/pool"
)

const mib = 1 << 20

// blockFirstAcquire makes the upstream's next Acquire park, as Spark's 1/2N
// wait does, until the returned release func is called; entered is closed
// once it parks.
func blockFirstAcquire(up *fakeUpstream) (entered <-chan struct{}, release func()) {
	in := make(chan struct{})
	out := make(chan struct{})
	var once atomic.Bool
	up.setBefore(func(op string, _ int64) {
		if op == "acquire" && once.CompareAndSwap(false, true) {
			close(in)
			<-out
		}
	})
	return in, func() { close(out) }
}

// TestClosePoolWaitsForATryGrowWaitingUpstream checks, without a JVM, that
// the last ClosePool while a TryGrow waits in the upstream returns only after
// that TryGrow, whose grant lands in the still-open pool and goes back with
// the close. Upstream ends holding nothing, is never called after Close, and
// the only leak reported is the 16 MiB the open reservation really held.
// Observed by ClosePool not returning while the acquire waits.
func TestClosePoolWaitsForATryGrowWaitingUpstream(t *testing.T) {
	b, _ := newTestBridge(t)
	up := newFakeUpstream(64 * mib)
	p := mustOpen(t, b, 81, KindGreedyUnified, 0, 0, up)
	r := mustReserve(t, b, p, "b", false, nil)
	entered, release := blockFirstAcquire(up)

	var g errgroup.Group
	var growErr error
	g.Go(func() error { growErr = b.TryGrow(r, 16*mib); return nil })
	<-entered
	var closed atomic.Bool
	g.Go(func() error { defer closed.Store(true); return b.ClosePool(p) })

	assert.Never(t, closed.Load, 200*time.Millisecond, 5*time.Millisecond,
		"ClosePool returned while a TryGrow was waiting in the upstream")
	release()
	require.NoError(t, g.Wait())

	require.NoError(t, growErr, "the grow completed in the open pool")
	assert.Equal(t, int64(0), up.Held(), "the close gave the grant back")
	up.requireSane(t) // nothing acquired or released after Close
	ps := b.ProcessStats()
	assert.Equal(t, int64(1), ps.Leaks)
	assert.Equal(t, int64(16*mib), ps.LeakedBytes, "exactly what the open reservation held")
	require.NoError(t, b.CloseReservation(r)) // a late release now: counted, never forwarded
	assert.Equal(t, int64(0), up.Held())
	up.requireSane(t)
}

// TestCallsArrivingWhileThePoolClosesAreRefusedOrLate checks the gate's two
// kinds of calls while the last ClosePool waits for a TryGrow parked in the
// upstream: acquiring calls (TryGrow, Grow) fail with
// pool.ErrClosed and change nothing, and releasing calls
// (Shrink, Free, CloseReservation) still reach the upstream before the pool
// closes, so it ends holding nothing.
func TestCallsArrivingWhileThePoolClosesAreRefusedOrLate(t *testing.T) {
	b, _ := newTestBridge(t)
	up := newFakeUpstream(64 * mib)
	p := mustOpen(t, b, 82, KindGreedyUnified, 0, 0, up)
	waiting := mustReserve(t, b, p, "waiting", false, nil)
	other := mustReserve(t, b, p, "other", false, nil)
	require.NoError(t, b.TryGrow(other, 4*mib))
	entered, release := blockFirstAcquire(up)

	var g errgroup.Group
	g.Go(func() error { return b.TryGrow(waiting, 16*mib) })
	<-entered
	var closed atomic.Bool
	g.Go(func() error { defer closed.Store(true); return b.ClosePool(p) })
	rh, err := b.reservation(other)
	require.NoError(t, err)
	require.Eventually(t, rh.tp.calls.closing,
		10*time.Second, time.Millisecond, "the close began")

	require.ErrorIs(t, b.TryGrow(other, 1), pool.ErrClosed)
	require.ErrorIs(t, b.Grow(other, 1), pool.ErrClosed)
	require.NoError(t, b.Shrink(other, mib))
	_, err = b.Free(other)
	require.NoError(t, err)
	assert.False(t, closed.Load(), "the close still waits for the TryGrow")
	assert.Equal(t, int64(1), rh.tp.calls.inFlight())

	release()
	require.NoError(t, g.Wait())
	assert.Equal(t, int64(0), up.Held())
	require.NoError(t, b.CloseReservation(other))
	require.NoError(t, b.CloseReservation(waiting))
	assert.Equal(t, int64(0), up.Held())
	up.requireSane(t)
}

// TestCallGateRefusesAcquiresAndCountsReleasesWhileClosing checks the gate
// on its own: while the close waits, acquiring calls are refused and
// releasing calls are counted (the close waits for them too); once closed,
// releasing calls run uncounted. Returning means the close was woken.
func TestCallGateRefusesAcquiresAndCountsReleasesWhileClosing(t *testing.T) {
	g := newCallGate()
	require.True(t, g.enterAcquire())
	done := make(chan struct{})
	go func() { g.closeAndWait(); close(done) }()
	require.Eventually(t, g.closing, 10*time.Second, time.Millisecond)
	assert.False(t, g.enterAcquire(), "no acquire once the close began")
	require.True(t, g.enterRelease(), "a release is admitted while the close waits")
	g.exit() // the acquire
	select {
	case <-done:
		t.Fatal("the close returned while a release was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	assert.Equal(t, int64(1), g.inFlight())
	g.exit() // the release
	<-done
	assert.False(t, g.enterRelease(), "after the close, releases are late and uncounted")
	assert.False(t, g.enterAcquire())
	assert.Equal(t, int64(0), g.inFlight())
	g.closeAndWait() // a second close returns at once
}
