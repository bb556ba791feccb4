package bridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/nativepool/nativepool/internal/guard"
	"github.com/nativepool/nativepool/pool"
	"github.com/nativepool/nativepool/taskshared"
)

func TestOpenPoolJoinsTheTasksPoolWithoutMakingAnUpstream(t *testing.T) {
	b, _ := newTestBridge(t)
	first, second := newFakeUpstream(1<<20), newFakeUpstream(1<<20)
	joiner := &countingOwner{up: second}
	p1 := mustOpen(t, b, 42, KindFairUnified, 1000, 0, first)
	p2, err := b.OpenPool(42, KindFairUnified, 1000, 0, joiner.factory)
	require.NoError(t, err)
	require.NotEqual(t, p1, p2)
	assert.Zero(t, joiner.calls.Load(), "a join makes no upstream (no global ref)")
	owner, err := b.TaskOwner(p2)
	require.NoError(t, err)
	assert.Same(t, first, owner, "a join reaches the owner the create registered")
	assert.Equal(t, int64(0), first.Closes())

	// Both handles reach one pool: a reservation through p2 borrows from first.
	r := mustReserve(t, b, p2, "scan", false, nil)
	require.NoError(t, b.TryGrow(r, 100))
	assert.Equal(t, int64(100), first.Held())
	acq, _ := second.Calls()
	assert.Equal(t, int64(0), acq)

	require.NoError(t, b.CloseReservation(r))
	require.NoError(t, b.ClosePool(p1))
	assert.Equal(t, int64(0), first.Closes(), "the task's pool stays open while a handle is open")
	require.NoError(t, b.ClosePool(p2))
	assert.Equal(t, int64(1), first.Closes(), "the last close releases the upstream")
	assert.Equal(t, int64(0), first.Held())
	first.requireSane(t)
	second.requireSane(t)
	pools, res := b.liveHandles()
	assert.Zero(t, pools)
	assert.Zero(t, res)
}

func TestOpenPoolWithAnotherConfigurationIsIllegalStateNamingBoth(t *testing.T) {
	b, _ := newTestBridge(t)
	p := mustOpen(t, b, 7, KindFairUnified, 1000, 0, newFakeUpstream(0))
	up := &countingOwner{up: newFakeUpstream(0)}
	_, err := b.OpenPool(7, KindGreedyUnified, 0, 0, up.factory)
	require.ErrorIs(t, err, taskshared.ErrSpecMismatch)
	want := taskshared.Spec{Kind: "greedy_unified"}.String()
	have := taskshared.Spec{Kind: "fair_unified", Size: 1000}.String()
	assert.Equal(t, "taskshared: task 7: plan asks for pool "+want+" but the task's pool is "+have+": pool spec mismatch", err.Error())
	assert.Equal(t, ThrowIllegalState, Classify(err))
	assert.Zero(t, up.calls.Load(), "a refused join makes no upstream")

	_, err = b.OpenPool(7, KindFairUnified, 1000, 4096, ownerOf(newFakeUpstream(0)))
	assert.ErrorIs(t, err, taskshared.ErrSpecMismatch, "a different chunk is a different configuration")
	require.NoError(t, b.ClosePool(p))
}

func TestOpenPoolGreedyIgnoresPoolSizeWhenJoining(t *testing.T) {
	b, _ := newTestBridge(t)
	p1 := mustOpen(t, b, 9, KindGreedyUnified, 5, 0, newFakeUpstream(0))
	p2 := mustOpen(t, b, 9, KindGreedyUnified, 123456, 0, newFakeUpstream(0))
	require.NoError(t, b.ClosePool(p1))
	require.NoError(t, b.ClosePool(p2))
}

func TestOpenPoolRejectsBadArgumentsAsIllegalArgument(t *testing.T) {
	b, _ := newTestBridge(t)
	for _, tc := range []struct {
		name        string
		kind        int32
		size, chunk int64
		want        string
	}{
		{"kind", 2, 0, 0, "nativepool: openPool(task 1): unknown pool kind 2: invalid argument"},
		{"size", KindFairUnified, -1, 0, "nativepool: openPool(task 1): negative pool size -1: invalid argument"},
		{"greedy size", KindGreedyUnified, -1, 0, "nativepool: openPool(task 1): negative pool size -1: invalid argument"},
		{"chunk", KindFairUnified, 0, -8, "nativepool: openPool(task 1): negative chunk size -8: invalid argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := &countingOwner{up: newFakeUpstream(0)}
			_, err := b.OpenPool(1, tc.kind, tc.size, tc.chunk, up.factory)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.Equal(t, ThrowIllegalArgument, Classify(err))
			assert.Zero(t, up.calls.Load(), "a refused open makes no upstream")
		})
	}
	assert.Equal(t, 0, b.registry.Len())
	assert.Zero(t, b.LiveTasks())
}

func TestClosePoolTwiceIsIllegalStateAndForgedIsIllegalArgument(t *testing.T) {
	b, _ := newTestBridge(t)
	p := mustOpen(t, b, 1, KindFairUnified, 100, 0, newFakeUpstream(100))
	require.NoError(t, b.ClosePool(p))
	err := b.ClosePool(p)
	assert.Equal(t, fmt.Sprintf("nativepool: pool handle 0x%x is closed: stale handle", uint64(p)), err.Error())
	assert.Equal(t, ThrowIllegalState, Classify(err))

	err = b.ClosePool(0x1234)
	assert.Equal(t, "nativepool: invalid pool handle 0x1234: invalid handle", err.Error())
	assert.Equal(t, ThrowIllegalArgument, Classify(err))
}

func TestReservationHandleIsNotAPoolHandle(t *testing.T) {
	b, _ := newTestBridge(t)
	p := mustOpen(t, b, 1, KindFairUnified, 100, 0, newFakeUpstream(100))
	r := mustReserve(t, b, p, "x", false, nil)
	_, err := b.Reclaim(r, 10)
	assert.Equal(t, fmt.Sprintf("nativepool: invalid pool handle 0x%x: a reservation handle: invalid handle", uint64(r)), err.Error())
	_, err = b.Size(p)
	assert.Equal(t, fmt.Sprintf("nativepool: invalid reservation handle 0x%x: a pool handle: invalid handle", uint64(p)), err.Error())
	assert.Equal(t, ThrowIllegalArgument, Classify(err))
	require.NoError(t, b.CloseReservation(r))
	require.NoError(t, b.ClosePool(p))
}

func TestReservationLifecycleThroughTheBridge(t *testing.T) {
	b, _ := newTestBridge(t)
	up := newFakeUpstream(1 << 20)
	p := mustOpen(t, b, 3, KindFairUnified, 1000, 0, up)
	a := mustReserve(t, b, p, "a", false, nil)
	c := mustReserve(t, b, p, "c", false, nil)

	require.NoError(t, b.TryGrow(a, 600))
	require.NoError(t, b.TryGrow(c, 300))
	err := b.TryGrow(c, 200)
	require.ErrorIs(t, err, pool.ErrResourcesExhausted)
	assert.True(t, strings.HasPrefix(err.Error(), "Resources exhausted: Additional allocation failed for c with top memory consumers (across reservations) as:\n"), err.Error())
	assert.Contains(t, err.Error(), "a#")
	assert.Equal(t, ThrowRuntime, Classify(err), "a refusal outside tryGrow0 is not an expected failure")
	size, err := b.Size(c)
	require.NoError(t, err)
	assert.Equal(t, int64(300), size, "a refused TryGrow changes nothing")

	// Grow never refuses: past the pool size, and past upstream's grant.
	up.SetLimit(950)
	require.NoError(t, b.Grow(c, 200))
	size, _ = b.Size(c)
	assert.Equal(t, int64(500), size)
	stats, err := b.PoolStats(p)
	require.NoError(t, err)
	assert.Equal(t, int64(1100), stats[StatReserved])
	assert.Equal(t, int64(950), stats[StatHeld])
	assert.Equal(t, int64(150), stats[StatOvercommit])
	assert.Equal(t, int64(1), stats[StatShortGrants])

	err = b.Shrink(c, 501)
	assert.Equal(t, "Cannot free the capacity 501 out of allocated size 500: invalid size", err.Error())
	assert.Equal(t, ThrowIllegalArgument, Classify(err))
	err = b.Grow(c, -1)
	assert.Equal(t, "pool: Grow(-1): negative size: invalid size", err.Error())
	assert.Equal(t, ThrowIllegalArgument, Classify(err))
	err = b.TryGrow(c, -1)
	assert.Equal(t, ThrowIllegalArgument, Classify(err))

	require.NoError(t, b.Shrink(c, 100))
	freed, err := b.Free(c)
	require.NoError(t, err)
	assert.Equal(t, int64(400), freed)
	require.NoError(t, b.CloseReservation(c))
	_, err = b.Size(c)
	assert.Equal(t, ThrowIllegalState, Classify(err))
	err = b.CloseReservation(c)
	assert.Equal(t, fmt.Sprintf("nativepool: reservation handle 0x%x is closed: stale handle", uint64(c)), err.Error())

	require.NoError(t, b.CloseReservation(a))
	require.NoError(t, b.ClosePool(p))
	assert.Equal(t, int64(0), up.Held())
	up.requireSane(t)
}

func TestGrowOnAClosedReservationIsIllegalStateNotAPanic(t *testing.T) {
	b, _ := newTestBridge(t)
	p := mustOpen(t, b, 3, KindFairUnified, 1000, 0, newFakeUpstream(1000))
	r := mustReserve(t, b, p, "r", false, nil)
	rh, err := b.reservation(r)
	require.NoError(t, err)
	rh.r.Close() // as if closeReservation0 ran between the lookup and the grow
	err = b.Grow(r, 10)
	require.ErrorIs(t, err, pool.ErrClosed)
	assert.Equal(t, ThrowIllegalState, Classify(err))
	require.NoError(t, b.CloseReservation(r))
	require.NoError(t, b.ClosePool(p))
}

func TestOperationsAfterThePoolClosedAreIllegalStateOrLate(t *testing.T) {
	b, _ := newTestBridge(t)
	up := newFakeUpstream(1000)
	p := mustOpen(t, b, 5, KindGreedyUnified, 0, 0, up)
	r := mustReserve(t, b, p, "late", false, nil)
	require.NoError(t, b.TryGrow(r, 100))
	require.NoError(t, b.ClosePool(p))
	assert.Equal(t, int64(0), up.Held(), "close returned everything, leaked bytes included")

	err := b.TryGrow(r, 1)
	require.ErrorIs(t, err, pool.ErrClosed)
	assert.Equal(t, ThrowIllegalState, Classify(err))
	require.NoError(t, b.Shrink(r, 40), "a shrink after close is a late release: counted, not forwarded")
	ps := b.ProcessStats()
	assert.Equal(t, int64(0), ps.LiveTasks)
	assert.Equal(t, int64(1), ps.LateReleases)
	assert.Equal(t, int64(1), ps.Leaks)
	assert.Equal(t, int64(100), ps.LeakedBytes)
	require.NoError(t, b.CloseReservation(r)) // frees the other 60: a second late release
	ps = b.ProcessStats()
	assert.Equal(t, int64(2), ps.LateReleases, "the retired pool's late releases are kept")
	up.requireSane(t)

	_, err = b.NewReservation(p, "too late", false, nil)
	assert.Equal(t, ThrowIllegalState, Classify(err))
}

func TestNewReservationOnAClosedPoolHandleClosesTheSpiller(t *testing.T) {
	b, _ := newTestBridge(t)
	p1 := mustOpen(t, b, 5, KindGreedyUnified, 0, 0, newFakeUpstream(0))
	p2 := mustOpen(t, b, 5, KindGreedyUnified, 0, 0, newFakeUpstream(0))
	require.NoError(t, b.ClosePool(p1))
	sp := &fakeSpiller{}
	_, err := b.NewReservation(p1, "x", true, sp)
	assert.Equal(t, ThrowIllegalState, Classify(err))
	assert.Equal(t, int32(1), sp.closed.Load())
	require.NoError(t, b.ClosePool(p2))
}

// TestReclaimSpillsThroughReentrantShrinks checks the spill path: Reclaim
// returns slack, then calls the largest spillable consumer, whose spiller
// shrinks its reservation through the Bridge on the same goroutine (as the
// Java spiller calls shrink0 from inside reclaim0), and reports exactly the
// bytes released upstream.
func TestReclaimSpillsThroughReentrantShrinks(t *testing.T) {
	b, _ := newTestBridge(t)
	up := newFakeUpstream(1 << 20)
	p := mustOpen(t, b, 11, KindFairUnified, 1<<20, 64, up)
	var big, small int64
	spillerOf := func(h *int64) *fakeSpiller {
		return &fakeSpiller{spill: func(target int64) (int64, error) {
			size, err := b.Size(*h)
			if err != nil {
				return 0, err
			}
			n := min(size, target)
			return n, b.Shrink(*h, n)
		}}
	}
	bigSp, smallSp := spillerOf(&big), spillerOf(&small)
	big = mustReserve(t, b, p, "big", true, bigSp)
	small = mustReserve(t, b, p, "small", true, smallSp)
	fixed := mustReserve(t, b, p, "fixed", false, nil)
	require.NoError(t, b.TryGrow(big, 300))
	require.NoError(t, b.TryGrow(small, 100))
	require.NoError(t, b.TryGrow(fixed, 10))
	heldBefore := up.Held()
	slack := heldBefore - 410

	freed, err := b.Reclaim(p, slack+250)
	require.NoError(t, err)
	assert.Equal(t, slack+250, freed)
	assert.Equal(t, heldBefore-freed, up.Held(), "reclaim reports exactly what went upstream")
	assert.Equal(t, int64(1), bigSp.calls.Load())
	assert.Equal(t, int64(0), smallSp.calls.Load(), "the largest consumer was enough")
	size, _ := b.Size(big)
	assert.Equal(t, int64(50), size)

	stats, err := b.PoolStats(p)
	require.NoError(t, err)
	assert.Equal(t, int64(1), stats[StatSpillRequests])
	assert.Equal(t, freed, stats[StatSpillBytesFreed])

	require.NoError(t, b.CloseReservation(big))
	assert.Equal(t, int32(1), bigSp.closed.Load(), "closing the reservation closes its spiller")
	freed, err = b.Reclaim(p, 1<<30)
	require.NoError(t, err)
	assert.Equal(t, int64(1), smallSp.calls.Load())
	assert.Equal(t, int64(1), bigSp.calls.Load(), "a closed reservation's spiller is not called")
	assert.Equal(t, int64(10), up.Held(), "only the unspillable bytes stay")
	assert.Equal(t, int64(50+100), freed, "big's bytes freed by its close, then small's spill")

	for _, h := range []int64{small, fixed} {
		require.NoError(t, b.CloseReservation(h))
	}
	require.NoError(t, b.ClosePool(p))
	_, err = b.Reclaim(p, 10)
	assert.Equal(t, ThrowIllegalState, Classify(err))
	up.requireSane(t)
}

// An upcall's Java exception comes back from every Bridge call as its
// error, by return value, also where the pool records the operation anyway:
// Grow records a failed acquire as overcommit and returns the exception;
// Shrink, Free, CloseReservation and ClosePool return a failed release after
// shrinking; Reclaim returns a failed spiller after the reclaim. No
// exception is left behind for another call to find.
func TestUpcallExceptionsReachTheCallThatRaisedThemAsItsError(t *testing.T) {
	b, logs := newTestBridge(t)
	refs := &refLog{}
	up := newFakeUpstream(1000)
	p := mustOpen(t, b, 1, KindFairUnified, 1000, 0, up)
	r := mustReserve(t, b, p, "r", false, nil)

	killed := NewJavaException("java.lang.InterruptedException", "killed", "acquireMemory", 0xbeef, refs.delete)
	up.failNextAcquire(killed)
	err := b.Grow(r, 100)
	f := Settle(err)
	assert.Equal(t, ThrowJava, f.Kind)
	assert.Same(t, killed, f.Java)
	assert.Equal(t, "java.lang.InterruptedException: killed (in acquireMemory)", f.Msg)
	assert.Len(t, logs.lines("upstream Acquire failed during Grow"), 1)
	stats, _ := b.PoolStats(p)
	assert.Equal(t, int64(100), stats[StatOvercommit], "the grow is recorded; Spark granted nothing")
	assert.Equal(t, int64(0), stats[StatHeld])
	assert.Equal(t, uintptr(0xbeef), f.Java.Take())

	// TryGrow returns it as its error and records nothing.
	oom := NewJavaException("org.apache.spark.memory.SparkOutOfMemoryError", "no", "acquireMemory", 0xf00d, refs.delete)
	up.failNextAcquire(oom)
	err = b.TryGrow(r, 10)
	f = Settle(err)
	assert.Same(t, oom, f.Java)
	assert.Empty(t, refs.list(), "the chosen exception is not discarded")
	assert.Equal(t, uintptr(0xf00d), f.Java.Take())
	size, _ := b.Size(r)
	assert.Equal(t, int64(100), size)

	// A failed release: the shrink happened, the bytes stay owed, and the
	// exception is the call's error.
	require.NoError(t, b.TryGrow(r, 900)) // repays the overcommit, holds 1000 from Spark
	relFailed := NewJavaException("java.lang.IllegalStateException", "refused", "releaseMemory", 0xabc, refs.delete)
	up.FailReleases(relFailed)
	err = b.Shrink(r, 500)
	assert.Same(t, relFailed, Settle(err).Java)
	size, _ = b.Size(r)
	assert.Equal(t, int64(500), size, "the shrink took effect")
	assert.Equal(t, int64(1000), up.Held(), "Spark released nothing")
	relFailed.Take()

	closeFailed := NewJavaException("java.lang.IllegalStateException", "refused again", "releaseMemory", 0xdef, refs.delete)
	up.FailReleases(closeFailed)
	err = b.CloseReservation(r)
	assert.Same(t, closeFailed, Settle(err).Java)
	closeFailed.Take()

	lastFailed := NewJavaException("java.lang.IllegalStateException", "last", "releaseMemory", 0x123, refs.delete)
	up.FailReleases(lastFailed)
	err = b.ClosePool(p)
	assert.Same(t, lastFailed, Settle(err).Java, "the close that closed the pool returns its failed release")
	lastFailed.Take()
	up.FailReleases(nil)
	assert.Empty(t, refs.list())
}

func TestReclaimReturnsTheSpillersJavaExceptionAfterReclaimingTheRest(t *testing.T) {
	b, _ := newTestBridge(t)
	refs := &refLog{}
	up := newFakeUpstream(1 << 20)
	p := mustOpen(t, b, 2, KindGreedyUnified, 0, 0, up)
	ioErr := NewJavaException("java.io.IOException", "disk full", "spill", 0x10, refs.delete)
	broken := mustReserve(t, b, p, "broken", true, &fakeSpiller{spill: func(int64) (int64, error) { return 0, ioErr }})
	require.NoError(t, b.TryGrow(broken, 500))
	var good int64
	good = mustReserve(t, b, p, "good", true, &fakeSpiller{spill: func(target int64) (int64, error) {
		return target, b.Shrink(good, target)
	}})
	require.NoError(t, b.TryGrow(good, 100))

	freed, err := b.Reclaim(p, 100)

	assert.Equal(t, int64(100), freed, "the failed spiller is skipped, the next one spills")
	f := Settle(err)
	assert.Same(t, ioErr, f.Java)
	f.Java.Take()
	require.NoError(t, b.CloseReservation(broken))
	require.NoError(t, b.CloseReservation(good))
	require.NoError(t, b.ClosePool(p))
	assert.Empty(t, refs.list())
}

func TestThresholdCrossingsAreLoggedAsWarnings(t *testing.T) {
	b, logs := newTestBridge(t)
	require.NoError(t, b.Configure(Settings{Thresholds: []int64{500, 100, 500}}))
	assert.Equal(t, []int64{100, 500}, b.Settings().Thresholds, "sorted and deduplicated")
	p := mustOpen(t, b, 77, KindGreedyUnified, 0, 0, newFakeUpstream(1<<20))
	r := mustReserve(t, b, p, "r", false, nil)
	require.NoError(t, b.TryGrow(r, 600))
	up := logs.lines("nativepool: task pool reserved bytes rose to a threshold")
	require.Len(t, up, 2)
	assert.Contains(t, up[0], "task=77")
	assert.Contains(t, up[0], "threshold=100")
	assert.Contains(t, up[1], "threshold=500")
	require.NoError(t, b.Shrink(r, 600))
	assert.Len(t, logs.lines("nativepool: task pool reserved bytes fell below a threshold"), 2)
	require.NoError(t, b.CloseReservation(r))
	require.NoError(t, b.ClosePool(p))

	err := b.Configure(Settings{Thresholds: []int64{10, 0}})
	assert.Equal(t, "nativepool: configure: threshold 0 must be positive: invalid argument", err.Error())
	assert.Equal(t, []int64{100, 500}, b.Settings().Thresholds, "a rejected configuration changes nothing")
}

func TestLoggingSettingLogsEveryOperationOfPoolsOpenedAfterIt(t *testing.T) {
	b, logs := newTestBridge(t)
	before := mustOpen(t, b, 1, KindGreedyUnified, 0, 0, newFakeUpstream(1000))
	require.NoError(t, b.Configure(Settings{Logging: true}))
	after := mustOpen(t, b, 2, KindGreedyUnified, 0, 0, newFakeUpstream(1000))
	r1 := mustReserve(t, b, before, "quiet", false, nil)
	r2 := mustReserve(t, b, after, "loud", false, nil)
	require.NoError(t, b.TryGrow(r1, 10))
	require.NoError(t, b.TryGrow(r2, 10))
	assert.Empty(t, logs.lines("consumer=quiet"))
	assert.Len(t, logs.lines("msg=register"), 1)
	assert.Len(t, logs.lines("msg=try_grow"), 1)
	assert.Contains(t, logs.lines("msg=try_grow")[0], "consumer=loud")
	for _, h := range []int64{r1, r2} {
		require.NoError(t, b.CloseReservation(h))
	}
	require.NoError(t, b.ClosePool(before))
	require.NoError(t, b.ClosePool(after))
}

func TestProcessStatsSumOpenPoolsAndKeepCountersOfClosedOnes(t *testing.T) {
	b, _ := newTestBridge(t)
	up1, up2 := newFakeUpstream(1<<20), newFakeUpstream(1<<20)
	p1 := mustOpen(t, b, 1, KindFairUnified, 1<<20, 0, up1)
	p2 := mustOpen(t, b, 2, KindGreedyUnified, 0, 100, up2)
	r1 := mustReserve(t, b, p1, "a", false, nil)
	r2 := mustReserve(t, b, p2, "b", false, nil)
	require.NoError(t, b.TryGrow(r1, 300))
	require.NoError(t, b.TryGrow(r2, 30))

	ps := b.ProcessStats()
	assert.Equal(t, ProcessStats{
		LiveTasks: 2, Reserved: 330, Held: 400, Slack: 70, Peak: 300, UpstreamCalls: 2,
	}, poolFigures(ps))

	require.NoError(t, b.Shrink(r1, 300))
	require.NoError(t, b.CloseReservation(r1))
	require.NoError(t, b.ClosePool(p1))
	ps = b.ProcessStats()
	assert.Equal(t, ProcessStats{
		LiveTasks: 1, Reserved: 30, Held: 100, Slack: 70, Peak: 300, UpstreamCalls: 3,
	}, poolFigures(ps), "the closed pool's calls and peak stay")

	require.NoError(t, b.CloseReservation(r2))
	require.NoError(t, b.ClosePool(p2))
	ps = b.ProcessStats()
	assert.Equal(t, ProcessStats{Peak: 300, UpstreamCalls: 4}, poolFigures(ps))
	assert.Equal(t, []int64{0, 0, 0, 0, 0, 300, 4, 0, 0, 0, 0, 0}, ps.Array()[:PStatGoMemoryLimit])
}

// poolFigures is s without the process-memory figures (goruntime.go),
// which the pool tests leave to goruntime_test.go.
func poolFigures(s ProcessStats) ProcessStats {
	s.GoMemoryLimit, s.GoBaseline, s.GoMapped, s.GoPeak = 0, 0, 0, 0
	s.GoHeapReturns, s.GoHeapReturnedBytes, s.VmHWM, s.CgroupPeak, s.MallocMmapThreshold = 0, 0, 0, 0, 0
	s.MallocRetained = 0
	s.GoHeapInUse, s.GoHeapIdle, s.GoStacks, s.GoGCMeta, s.GoOther = 0, 0, 0, 0, 0
	s.Guard = guard.Stats{}
	return s
}

// TestConcurrentTasksOpenGrowShrinkClose runs many JVM-thread-like
// goroutines over a few shared task pools; it checks that every byte goes
// back upstream, every upstream an open created the pool with and every
// spiller is closed once, a join's upstream is never made, and no handle
// (pool, reservation or task) stays live. Returning before the deadline means no deadlock. Run with
// -race.
func TestConcurrentTasksOpenGrowShrinkClose(t *testing.T) {
	b, _ := newTestBridge(t)
	const tasks, threads, rounds = 3, 8, 200
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ups [tasks][]*countingOwner
	upsCh := make(chan struct {
		task int
		up   *countingOwner
	}, threads*rounds)
	var spillers []*fakeSpiller
	spCh := make(chan *fakeSpiller, threads*rounds)
	g, ctx := errgroup.WithContext(ctx)
	for w := range threads {
		g.Go(func() error {
			for i := range rounds {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				task := int64((w + i) % tasks)
				up := &countingOwner{up: newFakeUpstream(1 << 16)}
				upsCh <- struct {
					task int
					up   *countingOwner
				}{int(task), up}
				p, err := b.OpenPool(task, KindFairUnified, 1<<16, 256, up.factory)
				if err != nil {
					return err
				}
				var rh atomic.Int64 // read by other goroutines' reclaims
				sp := &fakeSpiller{spill: func(target int64) (int64, error) {
					return b.Free(rh.Load())
				}}
				spCh <- sp
				r, err := b.NewReservation(p, fmt.Sprintf("w%d", w), true, sp)
				if err != nil {
					return err
				}
				rh.Store(r)
				for k := range 20 {
					n := int64(1 + (k*37+w)%500)
					if err := b.TryGrow(r, n); err != nil && !errors.Is(err, pool.ErrResourcesExhausted) {
						return err
					}
					if err := b.Grow(r, n); err != nil {
						return err
					}
					if k%7 == 0 {
						if _, err := b.Reclaim(p, 100); err != nil {
							return err
						}
					}
					if _, err := b.PoolStats(p); err != nil {
						return err
					}
					_ = b.ProcessStats()
				}
				if _, err := b.Free(r); err != nil {
					return err
				}
				if err := b.CloseReservation(r); err != nil {
					return err
				}
				if err := b.ClosePool(p); err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	close(upsCh)
	close(spCh)
	for x := range upsCh {
		ups[x.task] = append(ups[x.task], x.up)
	}
	for sp := range spCh {
		spillers = append(spillers, sp)
	}
	for task := range tasks {
		for _, o := range ups[task] {
			up := o.up.(*fakeUpstream)
			assert.Equal(t, o.calls.Load(), up.Closes(), "each upstream made is closed exactly once, no other")
			assert.LessOrEqual(t, o.calls.Load(), int64(1))
			assert.Equal(t, int64(0), up.Held(), "every byte went back")
			up.requireSane(t)
		}
	}
	for _, sp := range spillers {
		assert.Equal(t, int32(1), sp.closed.Load())
	}
	pools, res := b.liveHandles()
	assert.Zero(t, pools)
	assert.Zero(t, res)
	assert.Zero(t, b.registry.Len())
	assert.Zero(t, b.LiveTasks())
	ps := b.ProcessStats()
	assert.Zero(t, ps.LiveTasks)
	assert.Zero(t, ps.Leaks)
	assert.Zero(t, ps.Held)
}

func TestASpillerMakesTheConsumerSpillableEvenWithCanSpillFalse(t *testing.T) {
	b, _ := newTestBridge(t)
	up := newFakeUpstream(1 << 20)
	p := mustOpen(t, b, 12, KindGreedyUnified, 0, 0, up)
	var r int64
	sp := &fakeSpiller{spill: func(target int64) (int64, error) { return b.Free(r) }}
	r = mustReserve(t, b, p, "s", false /* canSpill */, sp)
	rh, err := b.reservation(r)
	require.NoError(t, err)
	assert.True(t, rh.r.Consumer().CanSpill())
	require.NoError(t, b.TryGrow(r, 64))
	freed, err := b.Reclaim(p, 64)
	require.NoError(t, err)
	assert.Equal(t, int64(64), freed)
	assert.Equal(t, int64(1), sp.calls.Load())
	require.NoError(t, b.CloseReservation(r))
	require.NoError(t, b.ClosePool(p))
	up.requireSane(t)
}

// A spiller that fails with a Go error (an engine's spiller, or one racing
// its reservation's close) is counted and skipped: only a Java exception
// from a spiller is rethrown from Spark's spill(), so a reclaim that freed
// what it could does not fail the task.
func TestReclaimSkipsAGoSpillersErrorAndCountsIt(t *testing.T) {
	b, _ := newTestBridge(t)
	up := newFakeUpstream(1 << 20)
	p := mustOpen(t, b, 3, KindGreedyUnified, 0, 0, up)
	broken := mustReserve(t, b, p, "broken", true, &fakeSpiller{spill: func(int64) (int64, error) {
		return 0, fmt.Errorf("engine: spill file: %w", ErrStaleHandle)
	}})
	require.NoError(t, b.TryGrow(broken, 500))

	freed, err := b.Reclaim(p, 100)

	require.NoError(t, err)
	assert.Zero(t, freed)
	stats, _ := b.PoolStats(p)
	assert.Equal(t, int64(1), stats[StatSpillerFailures])
	require.NoError(t, b.CloseReservation(broken))
	require.NoError(t, b.ClosePool(p))
}

// A pool's consumer peaks outlive the consumers' reservations, so that the
// task's pool can report them as it closes.
func TestConsumerPeaksIncludeClosedReservations(t *testing.T) {
	b, _ := newTestBridge(t)
	p := mustOpen(t, b, 1, KindGreedyUnified, 0, 0, newFakeUpstream(1<<20))
	r1 := mustReserve(t, b, p, "sort", false, nil)
	r2 := mustReserve(t, b, p, "agg\tx", false, nil)
	require.NoError(t, b.TryGrow(r1, 4096))
	require.NoError(t, b.TryGrow(r2, 100))
	require.NoError(t, b.CloseReservation(r1))
	peaks, err := b.ConsumerPeaks(p)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"sort": 4096, "agg\tx": 100}, peaks)
	assert.Equal(t, "sort\t4096\nagg x\t100\n", EncodeConsumerPeaks(peaks))
	require.NoError(t, b.CloseReservation(r2))
	require.NoError(t, b.ClosePool(p))
	_, err = b.ConsumerPeaks(p)
	assert.Error(t, err)
}
