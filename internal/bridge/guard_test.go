package bridge

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeKernel is the memory group a test guard keeps: a limit and what the
// kernel cannot reclaim, set by the test.
type fakeKernel struct{ limit, unreclaimable atomic.Int64 }

func (k *fakeKernel) read() (int64, int64, error) { return k.limit.Load(), k.unreclaimable.Load(), nil }

// startTestGuard runs a guard over k with reserve, stepped by the test.
func startTestGuard(t *testing.T, b *Bridge, k *fakeKernel, reserve int64) {
	t.Helper()
	b.guard.mu.Lock()
	b.startGuard(&guardSource{b: b, kernel: k.read}, reserve, nil, false)
	b.guard.mu.Unlock()
	t.Cleanup(b.StopGuard)
}

// spillAllOf is a spiller that frees everything reservation *res holds, as
// an engine's spill to disk does.
func spillAllOf(t *testing.T, b *Bridge, res *int64) *fakeSpiller {
	return &fakeSpiller{spill: func(int64) (int64, error) {
		n, err := b.Size(*res)
		if err != nil || n == 0 {
			return 0, err
		}
		return n, b.Shrink(*res, n)
	}}
}

// When the headroom under the limit falls below the reserve, the guard
// spills the task pool that reserves the most into ballast: Spark keeps
// counting the bytes for the task (its other consumers cannot take them),
// the pool's own consumers may spend them, spillable consumers that hold
// memory are refused new borrows while the headroom is short, and once the
// headroom is back the ballast goes back to Spark. The episode names who
// spilled what.
func TestGuardSpillsTheLargestPoolIntoBallastUntilTheHeadroomIsBack(t *testing.T) {
	const mib = 1 << 20
	b, logs := newTestBridge(t)
	up1, up2 := newFakeUpstream(1<<30), newFakeUpstream(1<<30)
	p1 := mustOpen(t, b, 1, KindGreedyUnified, 0, mib, up1)
	p2 := mustOpen(t, b, 2, KindGreedyUnified, 0, mib, up2)
	var r1, r2 int64
	r1 = mustReserve(t, b, p1, "sort-1", true, spillAllOf(t, b, &r1))
	r2 = mustReserve(t, b, p2, "sort-2", true, spillAllOf(t, b, &r2))
	require.NoError(t, b.TryGrow(r1, 64*mib))
	require.NoError(t, b.TryGrow(r2, 16*mib))

	k := &fakeKernel{}
	k.limit.Store(1024 * mib)
	k.unreclaimable.Store(800 * mib)
	startTestGuard(t, b, k, 32*mib)
	require.True(t, b.GuardStep())
	assert.Empty(t, b.GuardEpisodes(), "224 MiB of headroom: calm")

	k.unreclaimable.Store(1014 * mib) // a burst outside native memory: 10 MiB left
	b.GuardStep()
	size1, _ := b.Size(r1)
	size2, _ := b.Size(r2)
	assert.Zero(t, size1, "the largest pool spilled")
	assert.Equal(t, int64(16*mib), size2, "its spill covered the deficit: the other kept its memory")
	assert.Equal(t, int64(64*mib), up1.Held(), "Spark still counts the bytes for the task: ballast")
	eps := b.GuardEpisodes()
	require.Len(t, eps, 1)
	assert.True(t, eps[0].Open())
	assert.Equal(t, int64(64*mib), eps[0].Spilled)
	require.Len(t, eps[0].Spills, 1)
	assert.Contains(t, eps[0].Spills[0].Consumer, "sort-1")
	assert.Contains(t, eps[0].Spills[0].Consumer, "(task 1)")
	assert.GreaterOrEqual(t, eps[0].Reaction, time.Duration(0))

	// Short of headroom, a borrow waits for the guard to make room; this
	// guard is not stepped meanwhile, so it is admitted when its wait runs
	// out: never refused. A grow the pool's ballast covers spends it
	// without asking Spark.
	require.NoError(t, b.TryGrow(r2, 8*mib))
	asks := len(up1.Asks())
	require.NoError(t, b.TryGrow(r1, 4*mib))
	assert.Len(t, up1.Asks(), asks, "spent from the ballast")

	// Growth its consumer can do without is not made to wait: short of
	// headroom, its borrow is refused at once, the reservation unchanged,
	// and the process stats count it.
	rh2, err := b.reservation(r2)
	require.NoError(t, err)
	asks = len(up2.Asks())
	err = rh2.r.WithoutWaiting(func() error { return rh2.r.TryGrow(32 * mib) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the pod guard keeps")
	size2, _ = b.Size(r2)
	assert.Equal(t, int64(24*mib), size2)
	assert.Len(t, up2.Asks(), asks, "Spark was not asked")

	st := b.ProcessStats()
	assert.Equal(t, int64(1), st.Guard.Episodes)
	assert.Equal(t, int64(2), st.Guard.AdmissionWaits)
	assert.Equal(t, int64(2), st.Guard.AdmittedShort)
	assert.Equal(t, int64(1), st.Guard.RefusedNow)
	assert.Equal(t, int64(1), st.Array()[PStatGuardRefusedNow])
	assert.Equal(t, int64(60*mib), st.Ballast)
	assert.Equal(t, int64(10*mib), st.Guard.Headroom)

	k.unreclaimable.Store(700 * mib) // the burst is over
	b.GuardStep()
	eps = b.GuardEpisodes()
	assert.False(t, eps[0].Open())
	assert.Equal(t, int64(0), b.ProcessStats().Ballast, "the ballast went back to Spark")
	assert.LessOrEqual(t, up1.Held(), int64(5*mib))
	assert.Equal(t, int64(60*mib), b.GuardStats().Released)

	rec := FormatGuardEpisodes(eps, eps[0].End)
	f := strings.Split(strings.TrimSuffix(rec, "\n"), "\t")
	require.Len(t, f, 19, rec)
	assert.Equal(t, "1", f[0])
	assert.Equal(t, "67108864", f[9], "spilled")
	assert.Equal(t, []string{"0", "0", "-1"}, f[15:18], "no off-heap ballast without Spark's off-heap memory")
	assert.True(t, strings.HasPrefix(f[18], "67108864=sort-1"), f[18])
	assert.Empty(t, logs.lines("level=ERROR"))

	require.NoError(t, b.CloseReservation(r1))
	require.NoError(t, b.CloseReservation(r2))
	require.NoError(t, b.ClosePool(p1))
	require.NoError(t, b.ClosePool(p2))
	assert.Zero(t, up1.Held())
	assert.Zero(t, up2.Held())
	up1.requireSane(t)
	up2.requireSane(t)
}

// A pool that closes with ballast hands it back with everything, and a
// guard that stops hands back the ballast of the pools still open.
func TestGuardBallastGoesBackWhenThePoolClosesOrTheGuardStops(t *testing.T) {
	const mib = 1 << 20
	b, _ := newTestBridge(t)
	up := newFakeUpstream(1 << 30)
	p := mustOpen(t, b, 1, KindFairUnified, 256*mib, mib, up)
	var r int64
	r = mustReserve(t, b, p, "sort", true, spillAllOf(t, b, &r))
	keep := mustReserve(t, b, p, "hash table", false, nil)
	require.NoError(t, b.TryGrow(r, 32*mib))
	require.NoError(t, b.TryGrow(keep, 2*mib))
	k := &fakeKernel{}
	k.limit.Store(512 * mib)
	k.unreclaimable.Store(500 * mib)
	startTestGuard(t, b, k, 32*mib)
	b.GuardStep()
	require.Equal(t, int64(32*mib), b.ProcessStats().Ballast)
	assert.Equal(t, int64(34*mib), up.Held())

	b.StopGuard()
	assert.Zero(t, b.ProcessStats().Ballast, "a stopped guard hands the ballast back")
	assert.LessOrEqual(t, up.Held(), int64(4*mib))
	assert.Equal(t, int64(-1), b.GuardStats().Limit)

	startTestGuard(t, b, k, 32*mib)
	require.NoError(t, b.TryGrow(r, 8*mib)) // no sample yet: admitted at once
	b.GuardStep()
	require.Positive(t, b.ProcessStats().Ballast)
	require.NoError(t, b.CloseReservation(r))
	require.NoError(t, b.CloseReservation(keep))
	require.NoError(t, b.ClosePool(p))
	assert.Zero(t, up.Held(), "the closing pool returned its ballast")
	up.requireSane(t)
}

// Bad settings change nothing; a guard without a limit to keep stands by.
func TestConfigureGuardRejectsNegativeFiguresAndStandsByWithoutALimit(t *testing.T) {
	b, logs := newTestBridge(t)
	require.ErrorIs(t, b.ConfigureGuard(GuardSettings{Enabled: true, Reserve: -1}), ErrInvalidArgument)
	require.ErrorIs(t, b.ConfigureGuard(GuardSettings{Enabled: true, Limit: -1}), ErrInvalidArgument)
	assert.False(t, b.GuardStep(), "nothing started")

	b.guard.mu.Lock()
	b.startGuard(&guardSource{b: b, kernel: func() (int64, int64, error) { return -1, 0, nil }}, 0, nil, false)
	b.guard.mu.Unlock()
	defer b.StopGuard()
	require.True(t, b.GuardStep())
	st := b.GuardStats()
	assert.False(t, st.Active)
	assert.Equal(t, int64(-1), st.Headroom)
	assert.Len(t, logs.lines("pod guard stands by"), 1)
}

// Against the real process: with a configured limit and no cgroup limit
// (or under a cgroup's, when the tests run in one), the guard reads a
// limit and the memory the kernel cannot reclaim.
func TestConfigureGuardKeepsALimitOfTheRealProcess(t *testing.T) {
	b, _ := newTestBridge(t)
	require.NoError(t, b.ConfigureGuard(GuardSettings{Enabled: true, Limit: 1 << 42}))
	defer b.StopGuard()
	b.GuardStep()
	st := b.GuardStats()
	require.True(t, st.Active)
	assert.Positive(t, st.Limit)
	assert.Positive(t, st.Unreclaimable)
	assert.Equal(t, st.Limit-st.Unreclaimable, st.Headroom)
	assert.Equal(t, max(int64(32<<20), st.Limit/50), st.Reserve, "the default reserve")
}
