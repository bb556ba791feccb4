package bridge

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/nativepool/nativepool/internal/gomem"
)

// The process's own memory: the Go runtime's soft limit, its baseline and
// high-water mark, the idle heap a spill request with nothing to spill hands
// back to the OS, glibc's mmap threshold, and the process's true peaks
// (VmHWM, the memory cgroup's peak). The calls that reach the Go runtime,
// libc and /proc sit behind ProcessRuntime, so tests drive the Bridge with
// fakes and observe what it asked for.

// ProcessRuntime is what the Bridge asks of the process it runs in. Every
// field may be nil: a nil field does nothing (setters) or reads as -1
// (figures). DefaultProcessRuntime is the real one minus the cgo part
// (SetMallocMmapThreshold, supplied by package jni).
type ProcessRuntime struct {
	// SetMemoryLimit is debug.SetMemoryLimit: it sets the Go runtime's soft
	// memory limit when limit >= 0 and returns the previous one.
	SetMemoryLimit func(limit int64) int64
	// FreeOSMemory is debug.FreeOSMemory: a forced GC that returns as much
	// idle heap to the OS as it can.
	FreeOSMemory func()
	// GoMemory reads the Go runtime's footprint: mapped is
	// /memory/classes/total:bytes minus /memory/classes/heap/released:bytes
	// (what the runtime holds from the OS), released is the latter.
	GoMemory func() (mapped, released int64)
	// GoClasses splits the runtime's mapped bytes by owner (heap in use,
	// idle heap, stacks, metadata, other) for the executor memory ledger; ok false
	// when unknown.
	GoClasses func() (c gomem.Classes, ok bool)
	// SetMallocMmapThreshold sets glibc's M_MMAP_THRESHOLD to n bytes with
	// mallopt, which also turns off glibc's dynamic raising of the
	// threshold (and of M_TRIM_THRESHOLD with it). nil: not supported.
	SetMallocMmapThreshold func(n int64) error
	// Getenv reads the environment (os.Getenv).
	Getenv func(string) string
	// VmHWM reads the process's peak resident set (/proc/self/status,
	// bytes); -1 if unknown.
	VmHWM func() int64
	// CgroupPeak reads the peak memory usage of the process's memory
	// cgroup (v2 memory.peak, v1 memory.max_usage_in_bytes); -1 when the
	// process is in none or it cannot be read.
	CgroupPeak func() int64
	// MallocRetained reads the free bytes the C allocator keeps in its
	// arenas for reuse (glibc's mallinfo2 fordblks): freed by C code, not
	// returned to the OS, possibly resident. -1 when unknown; nil: not
	// supported (the pure-Go default; package jni supplies glibc's).
	MallocRetained func() int64
	// MallocTrim is glibc's malloc_trim(0): the C allocator's free memory
	// goes back to the OS (the pod guard's last resort). nil: not supported
	// (the pure-Go default; package jni supplies glibc's).
	MallocTrim func()
	// Now is time.Now (the rate limit of FreeOSMemory).
	Now func() time.Time
}

// DefaultProcessRuntime is the ProcessRuntime of the real process, without
// glibc (SetMallocMmapThreshold is nil: package jni supplies it).
func DefaultProcessRuntime() ProcessRuntime {
	return ProcessRuntime{
		SetMemoryLimit: debug.SetMemoryLimit,
		FreeOSMemory:   debug.FreeOSMemory,
		GoMemory:       readGoMemory,
		GoClasses:      gomem.ReadClasses,
		Getenv:         os.Getenv,
		VmHWM:          func() int64 { return readVmHWM(os.ReadFile) },
		CgroupPeak:     func() int64 { return readCgroupPeak(os.ReadFile) },
		Now:            time.Now,
	}
}

// readGoMemory samples runtime/metrics: total mapped minus released, and
// released.
func readGoMemory() (mapped, released int64) {
	total, rel, ok := gomem.Read()
	if !ok {
		return -1, -1
	}
	return total - rel, rel
}

// MallocEnvVar is glibc's environment variable for M_MMAP_THRESHOLD. When
// the user set it, the library leaves the threshold to it.
const MallocEnvVar = "MALLOC_MMAP_THRESHOLD_"

// MaxMallocMmapThreshold is the largest M_MMAP_THRESHOLD glibc accepts on
// 64-bit (HEAP_MAX_SIZE / 2).
const MaxMallocMmapThreshold = 32 << 20

// FreeOSMemoryInterval is the least time between two FreeOSMemory calls a
// spill request makes (each forces a full GC).
const FreeOSMemoryInterval = time.Second

// GoLimitOverheadDivisor: the default Go soft memory limit is the measured
// Go baseline plus memoryOverhead / GoLimitOverheadDivisor.
const GoLimitOverheadDivisor = 8

// RuntimeSettings are the process-wide options of configureRuntime0, from
// the plugin's spark.nativepool.* settings.
type RuntimeSettings struct {
	// MallocMmapThreshold is the glibc M_MMAP_THRESHOLD the library sets
	// (bytes); 0 leaves glibc alone. Ignored (logged) when the user set
	// MALLOC_MMAP_THRESHOLD_.
	MallocMmapThreshold int64
	// GoMemoryLimit is the Go runtime's soft memory limit: > 0 sets it, 0
	// leaves the runtime alone (no limit, unless GOMEMLIMIT set one), -1
	// derives it: Go baseline + MemoryOverhead / GoLimitOverheadDivisor.
	GoMemoryLimit int64
	// MemoryOverhead is the executor's memoryOverhead in bytes, for the
	// derived limit.
	MemoryOverhead int64
}

// runtimeState is the Bridge's process memory policy: the process runtime
// and what it has set and measured. Guarded by mu except where noted.
type runtimeState struct {
	mu sync.Mutex
	rt ProcessRuntime
	// baseline is the Go runtime's footprint when first measured (-1 until
	// then): mapped minus released, right after the library initialised.
	baseline int64
	// mmapThreshold is the M_MMAP_THRESHOLD the Bridge set (0: none).
	mmapThreshold int64
	// goPeak is the high-water mark of the Go runtime's mapped bytes, as
	// sampled at each stats read and each spill request.
	goPeak int64
	// returns counts FreeOSMemory calls made for spill requests;
	// returned sums the heap they released (the growth of
	// /memory/classes/heap/released:bytes across each call).
	returns, returned int64
	// lastReturn is when the last FreeOSMemory for a spill request ran.
	lastReturn time.Time
	// mallocRetained is the last MallocRetained figure (-1 before the
	// first), read at mallocReadAt: a stats read calls mallinfo2 only when
	// that is MallocRetainedInterval old, and returns this figure otherwise.
	mallocRetained int64
	mallocReadAt   time.Time
}

// MallocRetainedInterval is the least time between two calls of
// MallocRetained (glibc's mallinfo2): mallinfo2 locks every malloc arena in
// turn while it sums its free lists, so the native code allocating in that
// arena waits, and a process may read its stats far more often than the
// executor's reporter does once a second (a growth detector's reading at
// every task end, a tool sampling every 50 ms). MALLOC_RETAINED is then up
// to this old.
const MallocRetainedInterval = time.Second

// UseProcessRuntime replaces the Bridge's process runtime (the Bridge
// starts with DefaultProcessRuntime). jni adds glibc's mallopt; tests pass
// fakes. Call it before the Bridge is used.
func (b *Bridge) UseProcessRuntime(rt ProcessRuntime) {
	b.rts.mu.Lock()
	defer b.rts.mu.Unlock()
	b.rts.rt = rt
}

// MeasureGoBaseline records the Go runtime's footprint now as its baseline
// (once; later calls return the first figure). init0 calls it, so the
// figure is the idle runtime's right after the library loaded.
func (b *Bridge) MeasureGoBaseline() int64 {
	b.rts.mu.Lock()
	defer b.rts.mu.Unlock()
	return b.measureBaselineLocked()
}

func (b *Bridge) measureBaselineLocked() int64 {
	if b.rts.baseline < 0 {
		if mapped := b.goMappedLocked(); mapped >= 0 {
			b.rts.baseline = mapped
		}
	}
	return b.rts.baseline
}

// goMappedLocked samples the Go runtime's mapped bytes and folds them into
// the high-water mark; -1 if unknown.
func (b *Bridge) goMappedLocked() int64 {
	if b.rts.rt.GoMemory == nil {
		return -1
	}
	mapped, _ := b.rts.rt.GoMemory()
	b.rts.goPeak = max(b.rts.goPeak, mapped)
	return mapped
}

// ConfigureRuntime applies s once per call: glibc's mmap threshold (unless
// the user set MALLOC_MMAP_THRESHOLD_, or s says 0) and the Go soft memory
// limit, and logs one line with what it set. A negative threshold or
// overhead, or a limit below -1, wraps ErrInvalidArgument and nothing
// changes (so does a threshold above MaxMallocMmapThreshold); a failed
// mallopt is returned after the Go limit is set.
func (b *Bridge) ConfigureRuntime(s RuntimeSettings) error {
	if s.MallocMmapThreshold < 0 || s.MallocMmapThreshold > MaxMallocMmapThreshold || s.MemoryOverhead < 0 || s.GoMemoryLimit < -1 {
		return fmt.Errorf("nativepool: configureRuntime: mallocMmapThreshold %d, goMemoryLimit %d, memoryOverhead %d: %w",
			s.MallocMmapThreshold, s.GoMemoryLimit, s.MemoryOverhead, ErrInvalidArgument)
	}
	b.rts.mu.Lock()
	defer b.rts.mu.Unlock()
	rt := b.rts.rt
	baseline := b.measureBaselineLocked()
	attrs := []any{slog.Int64("goBaseline", baseline)}

	var mallocErr error
	env := ""
	if rt.Getenv != nil {
		env = rt.Getenv(MallocEnvVar)
	}
	switch {
	case s.MallocMmapThreshold == 0:
		attrs = append(attrs, slog.String("mallocMmapThreshold", "left to glibc (setting is 0)"))
	case env != "":
		attrs = append(attrs, slog.String("mallocMmapThreshold", "left to "+MallocEnvVar+"="+env+" (set by the user)"))
	case rt.SetMallocMmapThreshold == nil:
		attrs = append(attrs, slog.String("mallocMmapThreshold", "not supported here"))
	default:
		if err := rt.SetMallocMmapThreshold(s.MallocMmapThreshold); err != nil {
			mallocErr = fmt.Errorf("nativepool: configureRuntime: mallopt(M_MMAP_THRESHOLD, %d): %w", s.MallocMmapThreshold, err)
		} else {
			b.rts.mmapThreshold = s.MallocMmapThreshold
			attrs = append(attrs, slog.Int64("mallocMmapThreshold", s.MallocMmapThreshold))
		}
	}

	limit := s.GoMemoryLimit
	how := "set"
	if limit == -1 {
		how = fmt.Sprintf("derived: goBaseline + memoryOverhead %d / %d", s.MemoryOverhead, GoLimitOverheadDivisor)
		limit = max(baseline, 0) + s.MemoryOverhead/GoLimitOverheadDivisor
		if s.MemoryOverhead == 0 {
			limit, how = 0, "left alone (memoryOverhead unknown)"
		}
	}
	switch {
	case limit > 0 && rt.SetMemoryLimit != nil:
		rt.SetMemoryLimit(limit)
		attrs = append(attrs, slog.Int64("goMemoryLimit", limit), slog.String("goMemoryLimitFrom", how))
	case limit == 0:
		if s.GoMemoryLimit == 0 {
			how = "left alone (setting is 0)"
		}
		attrs = append(attrs, slog.String("goMemoryLimit", how))
	}
	b.logger.Info("nativepool: process memory policy", attrs...)
	return mallocErr
}

// goMemoryLimitLocked is the Go runtime's soft memory limit now
// (debug.SetMemoryLimit(-1); math.MaxInt64 = none), or -1 if unknown.
func (b *Bridge) goMemoryLimitLocked() int64 {
	if b.rts.rt.SetMemoryLimit == nil {
		return -1
	}
	return b.rts.rt.SetMemoryLimit(-1)
}

// returnIdleHeap is what a spill request that freed nothing does: unless
// one ran less than FreeOSMemoryInterval ago, it calls FreeOSMemory and
// counts the heap that released (in either case it samples the Go peak).
func (b *Bridge) returnIdleHeap() {
	b.rts.mu.Lock()
	defer b.rts.mu.Unlock()
	rt := b.rts.rt
	b.goMappedLocked()
	if rt.FreeOSMemory == nil || rt.GoMemory == nil || rt.Now == nil {
		return
	}
	now := rt.Now()
	if !b.rts.lastReturn.IsZero() && now.Sub(b.rts.lastReturn) < FreeOSMemoryInterval {
		return
	}
	b.rts.lastReturn = now
	_, before := rt.GoMemory()
	rt.FreeOSMemory()
	mapped, after := rt.GoMemory()
	freed := max(after-before, 0)
	b.rts.returns++
	b.rts.returned += freed
	b.logger.Debug("nativepool: a spill request found nothing to spill; returned idle Go heap to the OS",
		slog.Int64("freed", freed), slog.Int64("goMapped", mapped))
}

// afterReclaim is called with a reclaim's outcome: one that freed nothing
// and failed nothing returns idle Go heap; every one samples the Go peak.
func (b *Bridge) afterReclaim(freed int64, err error) {
	if freed == 0 && err == nil {
		b.returnIdleHeap()
		return
	}
	b.rts.mu.Lock()
	b.goMappedLocked()
	b.rts.mu.Unlock()
}

// processMemory fills the process-memory figures of s (reading the Go
// runtime, /proc, the cgroup and glibc). Only the Bridge's own figures and
// the Go peak's sample are read under b.rts.mu; the reads that go to the
// kernel and to glibc (mallinfo2 locks every malloc arena) run after it is
// released, because a spill request takes it (afterReclaim) and must not
// wait on a stats read.
func (b *Bridge) processMemory(s *ProcessStats) {
	rt, readMalloc := b.processFigures(s)
	s.VmHWM, s.CgroupPeak = -1, -1
	if rt.VmHWM != nil {
		s.VmHWM = rt.VmHWM()
	}
	if rt.CgroupPeak != nil {
		s.CgroupPeak = rt.CgroupPeak()
	}
	s.GoHeapInUse, s.GoHeapIdle, s.GoStacks, s.GoGCMeta, s.GoOther = -1, -1, -1, -1, -1
	if rt.GoClasses != nil {
		if c, ok := rt.GoClasses(); ok {
			s.GoHeapInUse, s.GoHeapIdle, s.GoStacks, s.GoGCMeta, s.GoOther = c.HeapInUse, c.HeapIdle, c.Stacks, c.GCMeta, c.Other
		}
	}
	if readMalloc {
		s.MallocRetained = rt.MallocRetained()
		b.rts.mu.Lock()
		b.rts.mallocRetained = s.MallocRetained
		b.rts.mu.Unlock()
	}
}

// processFigures fills the figures of s that the Bridge keeps itself, and
// samples the Go peak, under b.rts.mu; it returns the process runtime for
// the reads processMemory makes after, and whether this read is the one
// that calls MallocRetained (claimed here, so that two concurrent reads do
// not both call it; s.MallocRetained is the last figure otherwise).
func (b *Bridge) processFigures(s *ProcessStats) (ProcessRuntime, bool) {
	b.rts.mu.Lock()
	defer b.rts.mu.Unlock()
	s.GoMemoryLimit = b.goMemoryLimitLocked()
	if s.GoMemoryLimit == math.MaxInt64 {
		s.GoMemoryLimit = 0
	}
	s.GoBaseline = b.rts.baseline
	s.GoMapped = b.goMappedLocked()
	s.GoPeak = b.rts.goPeak
	if s.GoMapped < 0 {
		s.GoPeak = -1
	}
	s.GoHeapReturns = b.rts.returns
	s.GoHeapReturnedBytes = b.rts.returned
	s.MallocMmapThreshold = b.rts.mmapThreshold
	rt := b.rts.rt
	s.MallocRetained = -1
	if rt.MallocRetained == nil {
		return rt, false
	}
	s.MallocRetained = b.rts.mallocRetained
	now := time.Now()
	if rt.Now != nil {
		now = rt.Now()
	}
	if !b.rts.mallocReadAt.IsZero() && now.Sub(b.rts.mallocReadAt) < MallocRetainedInterval {
		return rt, false
	}
	b.rts.mallocReadAt = now
	return rt, true
}
