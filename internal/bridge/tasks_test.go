package bridge

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
)

func TestOpenPoolIssuesOneTaskHandleWhenItCreatesThePool(t *testing.T) {
	b, _ := newTestBridge(t)
	owner := &countingOwner{up: newFakeUpstream(1 << 20)}
	p1, err := b.OpenPool(5, KindGreedyUnified, 0, 0, owner.factory)
	require.NoError(t, err)
	p2 := mustOpen(t, b, 5, KindGreedyUnified, 0, 0, newFakeUpstream(0))
	assert.Equal(t, int64(1), owner.calls.Load())
	th := owner.task.Load()
	assert.Equal(t, tagTask, HandleTag(uint64(th)>>tagShift), "the owner got a task handle")
	for _, p := range []int64{p1, p2} {
		got, err := b.taskHandle(p)
		require.NoError(t, err)
		assert.Equal(t, th, got, "every handle of the task reaches one task handle")
	}
	assert.Equal(t, 1, b.LiveTasks())
	require.NoError(t, b.ClosePool(p1))
	require.NoError(t, b.ClosePool(p2))
}

func TestReclaimTaskSpillsTheTasksPoolThroughTheTaskHandle(t *testing.T) {
	b, _ := newTestBridge(t)
	up := newFakeUpstream(1 << 20)
	owner := &countingOwner{up: up}
	p, err := b.OpenPool(6, KindFairUnified, 1<<20, 0, owner.factory)
	require.NoError(t, err)
	var r int64
	sp := &fakeSpiller{spill: func(target int64) (int64, error) {
		n := min(target, 300)
		return n, b.Shrink(r, n)
	}}
	r = mustReserve(t, b, p, "sort", true, sp)
	require.NoError(t, b.TryGrow(r, 500))

	freed, err := b.ReclaimTask(owner.task.Load(), 200)
	require.NoError(t, err)
	assert.Equal(t, int64(200), freed, "exactly what went back upstream")
	assert.Equal(t, int64(300), up.Held())
	assert.Equal(t, int64(1), sp.calls.Load())
	stats, err := b.PoolStats(p)
	require.NoError(t, err)
	assert.Equal(t, int64(1), stats[StatSpillRequests])

	require.NoError(t, b.CloseReservation(r))
	require.NoError(t, b.ClosePool(p))
	up.requireSane(t)
}

func TestReclaimTaskAfterThePoolClosedReturnsZero(t *testing.T) {
	b, _ := newTestBridge(t)
	up := newFakeUpstream(1 << 20)
	owner := &countingOwner{up: up}
	p, err := b.OpenPool(8, KindGreedyUnified, 0, 64, owner.factory)
	require.NoError(t, err)
	require.NoError(t, b.ClosePool(p))

	freed, err := b.ReclaimTask(owner.task.Load(), 1<<20)
	require.NoError(t, err, "a stale task handle is Spark spilling a finished pool, not an error")
	assert.Zero(t, freed)
	assert.Zero(t, up.Held())
}

func TestClosingTheTasksPoolRemovesItsTaskHandle(t *testing.T) {
	b, _ := newTestBridge(t)
	owner := &countingOwner{up: newFakeUpstream(0)}
	p1, err := b.OpenPool(9, KindGreedyUnified, 0, 0, owner.factory)
	require.NoError(t, err)
	p2 := mustOpen(t, b, 9, KindGreedyUnified, 0, 0, newFakeUpstream(0))
	require.NoError(t, b.ClosePool(p1))
	assert.Equal(t, 1, b.LiveTasks(), "the pool is open while a handle is")
	_, err = b.tasks.Get(owner.task.Load())
	require.NoError(t, err)

	require.NoError(t, b.ClosePool(p2))
	assert.Zero(t, b.LiveTasks())
	_, err = b.tasks.Get(owner.task.Load())
	assert.ErrorIs(t, err, ErrStaleHandle)
}

func TestOpenAfterTheTasksPoolClosedGetsANewTaskHandle(t *testing.T) {
	b, _ := newTestBridge(t)
	first := &countingOwner{up: newFakeUpstream(0)}
	p, err := b.OpenPool(10, KindGreedyUnified, 0, 0, first.factory)
	require.NoError(t, err)
	require.NoError(t, b.ClosePool(p))

	second := &countingOwner{up: newFakeUpstream(0)}
	p, err = b.OpenPool(10, KindGreedyUnified, 0, 0, second.factory)
	require.NoError(t, err)
	assert.Equal(t, int64(1), second.calls.Load(), "the reopen creates a pool, with a new owner")
	assert.NotEqual(t, first.task.Load(), second.task.Load())
	owner, err := b.TaskOwner(p)
	require.NoError(t, err)
	assert.Same(t, second.up, owner)
	require.NoError(t, b.ClosePool(p))
}

func TestReclaimTaskWithAPoolHandleIsIllegalArgument(t *testing.T) {
	b, _ := newTestBridge(t)
	p := mustOpen(t, b, 11, KindGreedyUnified, 0, 0, newFakeUpstream(0))
	_, err := b.ReclaimTask(p, 1)
	require.ErrorIs(t, err, ErrInvalidHandle)
	assert.Contains(t, err.Error(), "a pool handle")
	_, err = b.ReclaimTask(0, 1)
	assert.Equal(t, ThrowIllegalArgument, Classify(err))
	require.NoError(t, b.ClosePool(p))
}

func TestOpenPoolWhoseOwnerFailsLeavesNoTaskHandle(t *testing.T) {
	b, _ := newTestBridge(t)
	_, err := b.OpenPool(12, KindGreedyUnified, 0, 0, func(int64) (OwnedUpstream, error) {
		return nil, ErrInvalidArgument
	})
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.Zero(t, b.LiveTasks())
	assert.Zero(t, b.registry.Len())
}

// TestClosePoolWaitsForASparkSpillThroughTheTaskHandle: ReclaimTask runs in
// the pool's call gate, so the last ClosePool returns only after a spill in
// flight (its spiller parked) has finished, and a spill arriving once the
// close has begun reclaims nothing.
func TestClosePoolWaitsForASparkSpillThroughTheTaskHandle(t *testing.T) {
	b, _ := newTestBridge(t)
	up := newFakeUpstream(64 * mib)
	owner := &countingOwner{up: up}
	p, err := b.OpenPool(83, KindGreedyUnified, 0, 0, owner.factory)
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	var r int64
	sp := &fakeSpiller{spill: func(target int64) (int64, error) {
		close(entered)
		<-release
		return b.Free(r)
	}}
	r = mustReserve(t, b, p, "spills", true, sp)
	require.NoError(t, b.TryGrow(r, mib))

	var g errgroup.Group
	var freed int64
	g.Go(func() (err error) { freed, err = b.ReclaimTask(owner.task.Load(), mib); return err })
	<-entered
	var closed atomic.Bool
	g.Go(func() error { defer closed.Store(true); return b.ClosePool(p) })

	assert.Never(t, closed.Load, 200*time.Millisecond, 5*time.Millisecond,
		"ClosePool returned while a spill through the task handle was in flight")
	late, err := b.ReclaimTask(owner.task.Load(), mib)
	require.NoError(t, err)
	assert.Zero(t, late, "a spill arriving while the pool closes reclaims nothing")
	close(release)
	require.NoError(t, g.Wait())

	assert.Equal(t, int64(mib), freed, "the spill finished in the open pool")
	assert.Zero(t, up.Held())
	assert.Zero(t, b.ProcessStats().Leaks, "the spill freed the reservation before the close")
	require.NoError(t, b.CloseReservation(r))
	up.requireSane(t)
}

// TestReclaimTaskReturnsAFailedSpillersErrorAfterReclaiming: the spill
// through the task handle reports like Reclaim (ReclaimReporting), so
// reclaimTask0 rethrows what a spiller threw, after the other consumers
// were asked.
func TestReclaimTaskReturnsAFailedSpillersErrorAfterReclaiming(t *testing.T) {
	b, _ := newTestBridge(t)
	up := newFakeUpstream(1 << 20)
	owner := &countingOwner{up: up}
	p, err := b.OpenPool(13, KindGreedyUnified, 0, 0, owner.factory)
	require.NoError(t, err)
	boom := NewJavaException("java.io.IOException", "spill file system full", "spill", 0, nil) // what jvmSpiller returns
	failing := mustReserve(t, b, p, "failing", true, &fakeSpiller{spill: func(int64) (int64, error) { return 0, boom }})
	var ok int64
	ok = mustReserve(t, b, p, "ok", true, &fakeSpiller{spill: func(target int64) (int64, error) { return b.Free(ok) }})
	require.NoError(t, b.TryGrow(failing, 300))
	require.NoError(t, b.TryGrow(ok, 100))

	freed, err := b.ReclaimTask(owner.task.Load(), 400)
	require.ErrorIs(t, err, boom)
	assert.Equal(t, int64(100), freed, "the other consumer was still asked")
	for _, r := range []int64{failing, ok} {
		require.NoError(t, b.CloseReservation(r))
	}
	require.NoError(t, b.ClosePool(p))
	up.requireSane(t)
}
