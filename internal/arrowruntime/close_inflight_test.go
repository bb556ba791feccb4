package arrowruntime

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
)

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

// TestClosePoolWaitsForACopyBatchWaitingUpstream: an Arrow copy charges its
// reservation, so it is an acquiring call too: the last ClosePool waits for
// a CopyBatch parked in the upstream, the copy lands in the open pool and
// goes back with the close, and upstream ends holding nothing. Observed by
// ClosePool not returning while the copy's acquire waits.
func TestClosePoolWaitsForACopyBatchWaitingUpstream(t *testing.T) {
	f := newArrowFixture(t, 1<<30)
	p := newProducer()
	res := mustReserve(t, f.b, f.pool, "owner", false, nil)
	arr, sc := p.export(t, 1, 1000)
	in, err := importBatch(f.b, res, arr, sc)
	require.NoError(t, err)
	entered, release := blockFirstAcquire(f.up)

	var g errgroup.Group
	var copyErr error
	g.Go(func() error { _, copyErr = CopyBatch(f.b, res, in, ""); return nil })
	<-entered
	var closed atomic.Bool
	g.Go(func() error { defer closed.Store(true); return f.b.ClosePool(f.pool) })

	assert.Never(t, closed.Load, 200*time.Millisecond, 5*time.Millisecond,
		"ClosePool returned while a CopyBatch was waiting in the upstream")
	release()
	require.NoError(t, g.Wait())
	require.NoError(t, copyErr, "the copy completed in the open pool")
	assert.Equal(t, int64(0), f.up.Held(), "the close gave the copy's charge back")
	f.up.requireSane(t)
	_, err = CopyBatch(f.b, res, in, "")
	require.Error(t, err, "the pool's close closed the batch and the reservation's allocator")
}
