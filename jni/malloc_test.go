//go:build cgo

package jni

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/bridge"
	"github.com/nativepool/nativepool/jni/internal/mallocprobe"
)

// mallocChildEnv names the mallopt setting a child test process applies.
const mallocChildEnv = "NATIVEPOOL_MALLOC_CHILD"

// runMallocChild runs TestMallocChild in a fresh process (mallopt is
// process-wide and cannot be undone) with the library's setting threshold,
// without any MALLOC_MMAP_THRESHOLD_ unless env adds one, and returns the
// probe's figures for a 256 KiB block.
func runMallocChild(t *testing.T, threshold string, env ...string) (held, after int64, out string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMallocChild$", "-test.v")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, bridge.MallocEnvVar+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, append(env, mallocChildEnv+"="+threshold)...)
	b, err := cmd.CombinedOutput()
	out = string(b)
	require.NoError(t, err, out)
	var ok bool
	for _, line := range strings.Split(out, "\n") {
		if rest, found := strings.CutPrefix(strings.TrimSpace(line), "probe: "); found {
			_, err := fmt.Sscanf(rest, "held=%d after=%d", &held, &after)
			require.NoError(t, err, line)
			ok = true
		}
	}
	require.True(t, ok, "no probe line in %s", out)
	return held, after, out
}

// TestMallocChild is the child of the tests below; it does nothing unless
// started by them.
func TestMallocChild(t *testing.T) {
	v := os.Getenv(mallocChildEnv)
	if v == "" {
		t.Skip("run by the mallopt tests in a process of its own")
	}
	n, err := strconv.ParseInt(v, 10, 64)
	require.NoError(t, err)
	if os.Getenv(mallocChildEnv+"_TRIM") != "" {
		mallocprobe.RaiseDynamicThresholds() // before the plugin starts, as the JVM does
		b := newProcess()
		require.NoError(t, b.ConfigureRuntime(bridge.RuntimeSettings{MallocMmapThreshold: n}))
		fmt.Printf("probe: held=%d after=0\n", mallocprobe.HeapKept(100))
		fmt.Printf("threshold set: %d\n", b.ProcessStats().MallocMmapThreshold)
		return
	}
	b := newProcess()
	require.NoError(t, b.ConfigureRuntime(bridge.RuntimeSettings{MallocMmapThreshold: n}))
	held, after := mallocprobe.Mmapped(256 << 10)
	fmt.Printf("probe: held=%d after=%d\n", held, after)
	fmt.Printf("threshold set: %d\n", b.ProcessStats().MallocMmapThreshold)
}

// After configureRuntime0 with a 128 KiB threshold, glibc keeps serving a
// 256 KiB block with mmap even after a larger block was freed, and its free
// returns the pages to the OS: the behaviour MALLOC_MMAP_THRESHOLD_=131072
// gave the demo, now set by the library itself.
func TestConfigureRuntimeMakesGlibcMmapAndUnmapBlocksFromTheThreshold(t *testing.T) {
	held, after, out := runMallocChild(t, "131072")
	assert.GreaterOrEqual(t, held, int64(256<<10), out)
	assert.Zero(t, after, "unmapped on free")
	assert.Contains(t, out, "threshold set: 131072")
}

// With the setting 0 the library leaves glibc alone: its dynamic threshold
// rises past 256 KiB when the 4 MiB block is freed, so the block comes from
// the heap (the behaviour that kept freed memory resident).
func TestConfigureRuntimeWithZeroLeavesGlibcsDynamicThreshold(t *testing.T) {
	held, _, out := runMallocChild(t, "0")
	assert.Zero(t, held, out)
	assert.Contains(t, out, "threshold set: 0")
}

// A MALLOC_MMAP_THRESHOLD_ the user set wins: the library does not call
// mallopt, and says so.
func TestConfigureRuntimeLeavesAUsersMallocEnvVarInCharge(t *testing.T) {
	held, _, out := runMallocChild(t, "131072", bridge.MallocEnvVar+"=1048576")
	assert.Zero(t, held, "the user's 1 MiB threshold: 256 KiB comes from the heap\n"+out)
	assert.Contains(t, out, "threshold set: 0")
	assert.Contains(t, out, "left to MALLOC_MMAP_THRESHOLD_=1048576 (set by the user)")
}

// Large frees before the plugin starts have raised glibc's trim threshold
// (to 8 MiB here); configureRuntime0 puts it back to 128 KiB, so 6.4 MiB of
// freed heap at the top is given back, where glibc alone keeps it.
func TestConfigureRuntimeResetsATrimThresholdRaisedBeforeIt(t *testing.T) {
	kept, _, out := runMallocChild(t, "131072", mallocChildEnv+"_TRIM=1")
	assert.Less(t, kept, int64(1<<20), "heap kept after the frees\n"+out)
	kept, _, out = runMallocChild(t, "0", mallocChildEnv+"_TRIM=1")
	assert.Greater(t, kept, int64(4<<20), "glibc alone keeps the freed heap\n"+out)
}

// BenchmarkProcessStatsRead is what one processStats0 read costs the
// process's Bridge with glibc's MALLOC_RETAINED (mallinfo2, which locks
// and walks every arena) and without it, side by side (bench/RESULTS.md,
// "Process memory policy"). A Go test process has few arenas; a JVM has
// one per thread up to 8 × cores, so this is mallinfo2's cheap end. Each
// also runs with and without the Go runtime's memory classes (GoClasses,
// the executor memory ledger's Go parts), side by side. The Bridge calls
// mallinfo2 at most once per MallocRetainedInterval; the clock given here
// moves by that much at each read, so that every read calls it.
func BenchmarkProcessStatsRead(b *testing.B) {
	mallocprobe.HeapKept(64) // 4 MiB of freed heap blocks for mallinfo2 to find
	for _, c := range []struct {
		name   string
		malloc func() int64
	}{{"retained=off", nil}, {"retained=mallinfo2", mallocRetained}} {
		// classes: the Go runtime split by owner for the executor memory ledger.
		for _, classes := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/classes=%v", c.name, classes), func(b *testing.B) {
				br := bridge.NewBridge(nil, bridge.ArrowRuntime{})
				rt := processRuntime()
				rt.MallocRetained = c.malloc
				now := time.Now()
				rt.Now = func() time.Time {
					now = now.Add(bridge.MallocRetainedInterval)
					return now
				}
				if !classes {
					rt.GoClasses = nil
				}
				br.UseProcessRuntime(rt)
				for b.Loop() {
					_ = br.ProcessStats()
				}
			})
		}
	}
}

// BenchmarkMallocBesideAStatsReader is native allocation throughput with
// and without a concurrent reader, side by side: threads of their own make
// malloc/free pairs of 1 to 32 KiB (past tcache, so that each takes its
// arena's lock, as native buffers do; ns/op is per pair) while one more
// thread loops without pause on
//
//   - none: no reader;
//   - spin: CPU work touching no malloc memory, the reference for what
//     sharing the cores costs without any lock;
//   - mallinfo2: MALLOC_RETAINED's call, which locks every arena in turn;
//   - processStats: the whole processStats0 read as shipped
//     (Bridge.ProcessStats), which calls mallinfo2 at most once per
//     MallocRetainedInterval.
//
// A reader without pause is the worst case: the executor plugin reads once
// per poll period (1 s). reads/s is the reader's rate.
func BenchmarkMallocBesideAStatsReader(b *testing.B) {
	mallocprobe.HeapKept(64) // 4 MiB of freed heap blocks for mallinfo2 to walk
	br := bridge.NewBridge(nil, bridge.ArrowRuntime{})
	br.UseProcessRuntime(processRuntime())
	readers := []struct {
		name string
		read func()
	}{
		{"none", nil},
		{"spin", func() { mallocprobe.Spin(100_000) }},
		{"mallinfo2", func() { mallocRetained() }},
		{"processStats", func() { _ = br.ProcessStats() }},
	}
	const pairsPerCall = 512
	for _, threads := range []int{1, 2} {
		for _, r := range readers {
			b.Run(fmt.Sprintf("reader=%s/threads=%d", r.name, threads), func(b *testing.B) {
				stop := make(chan struct{})
				var reads atomic.Int64
				var readerDone sync.WaitGroup
				if r.read != nil {
					readerDone.Add(1)
					go func() {
						defer readerDone.Done()
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						for {
							select {
							case <-stop:
								return
							default:
							}
							r.read()
							reads.Add(1)
						}
					}()
				}
				calls := atomic.Int64{}
				calls.Store(int64((b.N + pairsPerCall - 1) / pairsPerCall))
				var workers sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for w := range threads {
					workers.Add(1)
					go func() {
						defer workers.Done()
						runtime.LockOSThread() // one thread, so one arena, per worker
						defer runtime.UnlockOSThread()
						seed := uint32(w + 1)
						for calls.Add(-1) >= 0 {
							seed = seed*1664525 + 1013904223
							mallocprobe.Churn(pairsPerCall, seed)
						}
					}()
				}
				workers.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				close(stop)
				readerDone.Wait()
				b.ReportMetric(float64(reads.Load())/elapsed.Seconds(), "reads/s")
			})
		}
	}
}
