package bridge

import (
	"math"
	"sync"
	"testing"
	"time"
)

// fakeProcess is the process as ProcessRuntime sees it: a Go runtime whose
// mapped and released bytes the test sets, a FreeOSMemory that moves
// `idle` bytes from mapped to released, a settable clock, and a record of
// every limit and mallopt the Bridge asked for.
type fakeProcess struct {
	mu                sync.Mutex
	limit             int64 // math.MaxInt64 = none, as the Go runtime starts
	limits            []int64
	mapped, released  int64
	idle              int64 // what the next FreeOSMemory returns
	frees             int
	malloptCalls      []int64
	env               map[string]string
	now               time.Time
	vmHWM, cgroupPeak int64
}

func newFakeProcess() *fakeProcess {
	return &fakeProcess{limit: math.MaxInt64, mapped: 5 << 20, env: map[string]string{},
		now: time.Unix(1_000_000, 0), vmHWM: -1, cgroupPeak: -1}
}

func (f *fakeProcess) runtime() ProcessRuntime {
	return ProcessRuntime{
		SetMemoryLimit: func(n int64) int64 {
			f.mu.Lock()
			defer f.mu.Unlock()
			old := f.limit
			if n >= 0 {
				f.limit = n
				f.limits = append(f.limits, n)
			}
			return old
		},
		FreeOSMemory: func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.frees++
			f.mapped -= f.idle
			f.released += f.idle
			f.idle = 0
		},
		GoMemory: func() (int64, int64) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.mapped, f.released
		},
		SetMallocMmapThreshold: func(n int64) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.malloptCalls = append(f.malloptCalls, n)
			return nil
		},
		Getenv: func(k string) string {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.env[k]
		},
		VmHWM:      func() int64 { f.mu.Lock(); defer f.mu.Unlock(); return f.vmHWM },
		CgroupPeak: func() int64 { f.mu.Lock(); defer f.mu.Unlock(); return f.cgroupPeak },
		Now:        func() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now },
	}
}

func (f *fakeProcess) set(fn func(f *fakeProcess)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// fakeCalls is what the Bridge asked of a fakeProcess so far.
type fakeCalls struct {
	limits, malloptCalls []int64
	frees                int
}

func (f *fakeProcess) get() fakeCalls {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fakeCalls{limits: append([]int64(nil), f.limits...), malloptCalls: append([]int64(nil), f.malloptCalls...), frees: f.frees}
}

// newRuntimeBridge is newTestBridge with the fake process it runs in.
func newRuntimeBridge(t testing.TB) (*Bridge, *fakeProcess, *logBuffer) {
	t.Helper()
	b, logs := newTestBridge(t)
	f := newFakeProcess()
	b.UseProcessRuntime(f.runtime())
	return b, f, logs
}
