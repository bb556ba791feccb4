package bridge

import (
	"errors"
	"log/slog"
	"math"
	"runtime"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigureRuntimeSetsTheGoLimitAndTheMmapThresholdAndLogsThemOnce(t *testing.T) {
	b, f, logs := newRuntimeBridge(t)
	require.NoError(t, b.ConfigureRuntime(RuntimeSettings{MallocMmapThreshold: 128 << 10, GoMemoryLimit: 300 << 20}))
	got := f.get()
	assert.Equal(t, []int64{300 << 20}, got.limits)
	assert.Equal(t, []int64{128 << 10}, got.malloptCalls)
	s := b.ProcessStats()
	assert.Equal(t, int64(300<<20), s.GoMemoryLimit)
	assert.Equal(t, int64(128<<10), s.MallocMmapThreshold)
	assert.Equal(t, int64(5<<20), s.GoBaseline, "measured at the first configure")
	lines := logs.lines("nativepool: process memory policy")
	require.Len(t, lines, 1)
	assert.Contains(t, lines[0], "mallocMmapThreshold=131072")
	assert.Contains(t, lines[0], "goMemoryLimit=314572800")
}

func TestConfigureRuntimeDerivesTheGoLimitFromTheBaselineAndMemoryOverhead(t *testing.T) {
	b, f, logs := newRuntimeBridge(t)
	assert.Equal(t, int64(5<<20), b.MeasureGoBaseline())
	f.set(func(f *fakeProcess) { f.mapped = 50 << 20 })
	assert.Equal(t, int64(5<<20), b.MeasureGoBaseline(), "the baseline is measured once")
	require.NoError(t, b.ConfigureRuntime(RuntimeSettings{GoMemoryLimit: -1, MemoryOverhead: 384 << 20}))
	assert.Equal(t, []int64{5<<20 + 48<<20}, f.get().limits, "baseline + overhead/8")
	assert.Contains(t, logs.String(), "derived: goBaseline + memoryOverhead")
}

func TestConfigureRuntimeWithZerosLeavesGlibcAndTheGoRuntimeAlone(t *testing.T) {
	b, f, logs := newRuntimeBridge(t)
	require.NoError(t, b.ConfigureRuntime(RuntimeSettings{}))
	require.NoError(t, b.ConfigureRuntime(RuntimeSettings{GoMemoryLimit: -1})) // overhead unknown
	got := f.get()
	assert.Empty(t, got.limits)
	assert.Empty(t, got.malloptCalls)
	s := b.ProcessStats()
	assert.Equal(t, int64(0), s.GoMemoryLimit, "math.MaxInt64 (no limit) reads as 0")
	assert.Equal(t, int64(0), s.MallocMmapThreshold)
	assert.Contains(t, logs.String(), "left to glibc (setting is 0)")
}

func TestConfigureRuntimeRespectsTheUsersMallocEnvVarAndSaysSo(t *testing.T) {
	b, f, logs := newRuntimeBridge(t)
	f.set(func(f *fakeProcess) { f.env[MallocEnvVar] = "65536" })
	require.NoError(t, b.ConfigureRuntime(RuntimeSettings{MallocMmapThreshold: 128 << 10}))
	assert.Empty(t, f.get().malloptCalls)
	assert.Equal(t, int64(0), b.ProcessStats().MallocMmapThreshold)
	assert.Contains(t, logs.String(), "left to MALLOC_MMAP_THRESHOLD_=65536 (set by the user)")
}

func TestConfigureRuntimeRejectsNegativeSettingsAndChangesNothing(t *testing.T) {
	b, f, _ := newRuntimeBridge(t)
	for _, s := range []RuntimeSettings{{MallocMmapThreshold: -1}, {MallocMmapThreshold: 64 << 20}, {GoMemoryLimit: -2}, {MemoryOverhead: -1}} {
		err := b.ConfigureRuntime(s)
		assert.ErrorIs(t, err, ErrInvalidArgument, "%+v", s)
	}
	got := f.get()
	assert.Empty(t, got.limits)
	assert.Empty(t, got.malloptCalls)
}

// A spill request that frees nothing (no slack, nothing spillable) asks
// the Go runtime to return its idle heap, at most once per
// FreeOSMemoryInterval, and counts what that released.
func TestASpillThatFreesNothingReturnsIdleGoHeapRateLimitedAndCountsIt(t *testing.T) {
	b, f, logs := newRuntimeBridge(t)
	p := mustOpen(t, b, 1, KindGreedyUnified, 0, 0, newFakeUpstream(1<<20))
	r := mustReserve(t, b, p, "fixed", false, nil)
	require.NoError(t, b.TryGrow(r, 100))

	f.set(func(f *fakeProcess) { f.idle = 7 << 20 })
	freed, err := b.Reclaim(p, 100)
	require.NoError(t, err)
	assert.Zero(t, freed)
	assert.Equal(t, 1, f.get().frees)
	s := b.ProcessStats()
	assert.Equal(t, int64(1), s.GoHeapReturns)
	assert.Equal(t, int64(7<<20), s.GoHeapReturnedBytes)
	assert.Len(t, logs.lines("returned idle Go heap to the OS"), 1)
	assert.Contains(t, logs.String(), "freed=7340032")

	// Through the task handle too, but not within the interval.
	th, err := b.taskHandle(p)
	require.NoError(t, err)
	f.set(func(f *fakeProcess) { f.idle = 1 << 20; f.now = f.now.Add(FreeOSMemoryInterval / 2) })
	_, err = b.ReclaimTask(th, 100)
	require.NoError(t, err)
	assert.Equal(t, 1, f.get().frees, "rate-limited")
	f.set(func(f *fakeProcess) { f.now = f.now.Add(FreeOSMemoryInterval) })
	_, err = b.ReclaimTask(th, 100)
	require.NoError(t, err)
	assert.Equal(t, 2, f.get().frees)
	assert.Equal(t, int64(8<<20), b.ProcessStats().GoHeapReturnedBytes)

	require.NoError(t, b.CloseReservation(r))
	require.NoError(t, b.ClosePool(p))
}

func TestASpillThatFreesSlackDoesNotForceAGC(t *testing.T) {
	b, f, _ := newRuntimeBridge(t)
	p := mustOpen(t, b, 2, KindGreedyUnified, 0, 1<<10, newFakeUpstream(1<<20))
	r := mustReserve(t, b, p, "r", false, nil)
	require.NoError(t, b.TryGrow(r, 100)) // a 1 KiB chunk: slack to reclaim
	freed, err := b.Reclaim(p, 1<<10)
	require.NoError(t, err)
	assert.Positive(t, freed)
	assert.Zero(t, f.get().frees)
	assert.Zero(t, b.ProcessStats().GoHeapReturns)
	require.NoError(t, b.CloseReservation(r))
	require.NoError(t, b.ClosePool(p))
}

func TestGoPeakIsTheHighWaterOfSamplesAtStatsReadsAndSpills(t *testing.T) {
	b, f, _ := newRuntimeBridge(t)
	p := mustOpen(t, b, 3, KindGreedyUnified, 0, 0, newFakeUpstream(1<<20))
	f.set(func(f *fakeProcess) { f.mapped = 40 << 20 })
	_, err := b.Reclaim(p, 1) // sampled here
	require.NoError(t, err)
	f.set(func(f *fakeProcess) { f.mapped = 10 << 20 })
	s := b.ProcessStats()
	assert.Equal(t, int64(10<<20), s.GoMapped)
	assert.Equal(t, int64(40<<20), s.GoPeak)
	require.NoError(t, b.ClosePool(p))
}

func TestProcessStatsReportVmHWMAndTheCgroupPeak(t *testing.T) {
	b, f, _ := newRuntimeBridge(t)
	s := b.ProcessStats()
	assert.Equal(t, int64(-1), s.VmHWM)
	assert.Equal(t, int64(-1), s.CgroupPeak)
	f.set(func(f *fakeProcess) { f.vmHWM, f.cgroupPeak = 300<<20, 400<<20 })
	s = b.ProcessStats()
	assert.Equal(t, int64(300<<20), s.VmHWM)
	assert.Equal(t, int64(400<<20), s.CgroupPeak)
}

func mapReader(fs fstest.MapFS) readFileFunc {
	return func(name string) ([]byte, error) { return fs.ReadFile(name[1:]) }
}

func TestReadVmHWMParsesProcSelfStatusInBytes(t *testing.T) {
	read := mapReader(fstest.MapFS{"proc/self/status": {Data: []byte("Name:\tjava\nVmPeak:\t 9 kB\nVmHWM:\t    2084 kB\nVmRSS:\t 1 kB\n")}})
	assert.Equal(t, int64(2084<<10), readVmHWM(read))
	assert.Equal(t, int64(-1), readVmHWM(mapReader(fstest.MapFS{})))
}

func TestReadCgroupPeakReadsV1MemoryOrV2PeakAndMinusOneOutsideACgroup(t *testing.T) {
	v1 := fstest.MapFS{
		"proc/self/cgroup": {Data: []byte("9:name=systemd:/\n4:memory:/pod/exec1\n0::/\n")},
		"sys/fs/cgroup/memory/pod/exec1/memory.max_usage_in_bytes": {Data: []byte("4517007360\n")},
	}
	assert.Equal(t, int64(4517007360), readCgroupPeak(mapReader(v1)))
	v2 := fstest.MapFS{
		"proc/self/cgroup":                        {Data: []byte("0::/kubepods/pod1\n")},
		"sys/fs/cgroup/kubepods/pod1/memory.peak": {Data: []byte("123\n")},
	}
	assert.Equal(t, int64(123), readCgroupPeak(mapReader(v2)))
	root := fstest.MapFS{
		"proc/self/cgroup": {Data: []byte("4:memory:/\n0::/\n")},
		"sys/fs/cgroup/memory/memory.max_usage_in_bytes": {Data: []byte("1\n")},
	}
	assert.Equal(t, int64(-1), readCgroupPeak(mapReader(root)), "the root cgroup is no cgroup of its own")
	assert.Equal(t, int64(-1), readCgroupPeak(mapReader(fstest.MapFS{})))
}

// A cgroup shared with processes other than this one, its ancestors and its
// descendants has no peak of this process's: -1, as the demo's report says.
func TestReadCgroupPeakIsMinusOneForACgroupSharedWithOtherProcesses(t *testing.T) {
	procs := "sys/fs/cgroup/memory/pod/exec1/cgroup.procs"
	fs := fstest.MapFS{
		"proc/self/cgroup": {Data: []byte("4:memory:/pod/exec1\n")},
		"sys/fs/cgroup/memory/pod/exec1/memory.max_usage_in_bytes": {Data: []byte("4517007360\n")},
		"proc/self/stat": {Data: []byte("100 (java (exec)) S 10 1 1 0\n")},
		"proc/10/stat":   {Data: []byte("10 (tini) S 1 1 1 0\n")},
		"proc/200/stat":  {Data: []byte("200 (python3) S 100 1 1 0\n")},
		"proc/300/stat":  {Data: []byte("300 (bash) S 1 1 1 0\n")},
		procs:            {Data: []byte("10\n100\n200\n")},
	}
	assert.Equal(t, int64(4517007360), readCgroupPeak(mapReader(fs)), "its launcher and its children are its own")
	fs[procs] = &fstest.MapFile{Data: []byte("10\n100\n200\n300\n")}
	assert.Equal(t, int64(-1), readCgroupPeak(mapReader(fs)), "another process's memory counts in its peak")
}

// sink keeps the garbage of the test below reachable until it drops it.
var sink [][]byte

// The real runtime (no fake): a spill that frees nothing after the Go heap
// grew and became garbage returns it to the OS, and the counter says how
// much (the figure bench/RESULTS.md quotes).
func TestASpillThatFreesNothingReturnsRealIdleGoHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("forces GCs and allocates 64 MiB")
	}
	b, _ := newTestBridge(t)
	b.UseProcessRuntime(DefaultProcessRuntime())
	base := b.MeasureGoBaseline()
	require.Positive(t, base)
	p := mustOpen(t, b, 4, KindGreedyUnified, 0, 0, newFakeUpstream(1<<20))
	for range 64 {
		sink = append(sink, make([]byte, 1<<20))
	}
	sink = nil
	runtime.GC() // garbage now, but still mapped until the scavenger gets to it
	start := time.Now()
	_, err := b.Reclaim(p, 1)
	require.NoError(t, err)
	s := b.ProcessStats()
	t.Logf("Go baseline %d B; FreeOSMemory after 64 MiB of garbage returned %d B in %v; Go peak %d B, now %d B",
		base, s.GoHeapReturnedBytes, time.Since(start), s.GoPeak, s.GoMapped)
	assert.Equal(t, int64(1), s.GoHeapReturns)
	assert.Greater(t, s.GoHeapReturnedBytes, int64(16<<20))
	assert.NotEqual(t, int64(math.MaxInt64), s.GoMemoryLimit)
	require.NoError(t, b.ClosePool(p))
}

// The ledger's Go parts come from the runtime's own classes and add up to
// GoMapped, read in the same stats call.
func TestProcessStatsSplitTheGoRuntimeByClass(t *testing.T) {
	b := NewBridge(slog.New(slog.DiscardHandler), ArrowRuntime{}) // the real process runtime
	s := b.ProcessStats()
	for name, v := range map[string]int64{"heap in use": s.GoHeapInUse, "stacks": s.GoStacks, "gc meta": s.GoGCMeta} {
		assert.Positive(t, v, name)
	}
	assert.GreaterOrEqual(t, s.GoHeapIdle, int64(0))
	assert.GreaterOrEqual(t, s.GoOther, int64(0))
	assert.InDelta(t, s.GoMapped, s.GoHeapInUse+s.GoHeapIdle+s.GoStacks+s.GoGCMeta+s.GoOther, 1<<20)
}

// A process-stats read holds no lock a task's call takes while it reads
// process memory (mallinfo2, /proc, the cgroup): opening a pool, a new
// reservation and a spill request complete while a read is stuck inside
// MallocRetained. Returning means none of them waited on the read.
func TestProcessStatsReadsProcessMemoryOutsideTheLocksTasksTake(t *testing.T) {
	b, f, _ := newRuntimeBridge(t)
	rt := f.runtime()
	entered, release := make(chan struct{}), make(chan struct{})
	rt.MallocRetained = func() int64 {
		close(entered)
		<-release
		return 42
	}
	b.UseProcessRuntime(rt)
	read := make(chan ProcessStats)
	go func() { read <- b.ProcessStats() }()
	<-entered

	tasks := make(chan error)
	go func() {
		p, err := b.OpenPool(7, KindGreedyUnified, 0, 0, ownerOf(newFakeUpstream(1<<20)))
		if err != nil {
			tasks <- err
			return
		}
		r, err := b.NewReservation(p, "r", false, nil)
		if err != nil {
			tasks <- err
			return
		}
		_, err = b.Reclaim(p, 100) // frees nothing: returns idle Go heap, under b.rts.mu
		tasks <- errors.Join(err, b.CloseReservation(r), b.ClosePool(p))
	}()
	select {
	case err := <-tasks:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("a task's call waited on the process-stats read")
	}
	close(release)
	assert.Equal(t, int64(42), (<-read).MallocRetained)
}

// mallinfo2 (MallocRetained) locks every malloc arena, so however often the
// stats are read it runs at most once per MallocRetainedInterval; reads in
// between return its last figure.
func TestProcessStatsCallMallocRetainedAtMostOncePerInterval(t *testing.T) {
	b, f, _ := newRuntimeBridge(t)
	rt := f.runtime()
	calls := 0
	rt.MallocRetained = func() int64 {
		calls++
		return int64(calls) << 20
	}
	b.UseProcessRuntime(rt)
	for range 10 {
		assert.Equal(t, int64(1<<20), b.ProcessStats().MallocRetained)
	}
	assert.Equal(t, 1, calls)
	f.set(func(f *fakeProcess) { f.now = f.now.Add(MallocRetainedInterval - time.Millisecond) })
	assert.Equal(t, int64(1<<20), b.ProcessStats().MallocRetained)
	assert.Equal(t, 1, calls)
	f.set(func(f *fakeProcess) { f.now = f.now.Add(time.Millisecond) })
	assert.Equal(t, int64(2<<20), b.ProcessStats().MallocRetained)
	assert.Equal(t, 2, calls)
}
