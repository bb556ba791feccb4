package ffi_test

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/pool"
)

var benchSizes = []int{64, 4 << 10, 64 << 10, 256 << 10, 1 << 20, 8 << 20}

// benchAllocators is the table every allocator benchmark runs: the raw
// allocators arrow-go ships (the baselines) beside ours in its
// configurations. Each entry builds a fresh allocator and returns a cleanup.
var benchAllocators = []struct {
	name string
	make func() (memory.Allocator, func())
}{
	{"mallocator", func() (memory.Allocator, func()) { return mallocator.NewMallocator(), func() {} }},
	{"go", func() (memory.Allocator, func()) { return memory.NewGoAllocator(), func() {} }},
	{"checked", func() (memory.Allocator, func()) {
		return memory.NewCheckedAllocator(mallocator.NewMallocator()), func() {}
	}},
	{"ffi", func() (memory.Allocator, func()) { return newBenchFFI(nil) }},
	{"ffi-chunk1MiB", func() (memory.Allocator, func()) { return newBenchFFI(nil, ffi.WithChunkSize(1<<20)) }},
	{"ffi-sites", func() (memory.Allocator, func()) { return newBenchFFI(nil, ffi.WithAllocationSites(true)) }},
	{"ffi-over-mallocator", func() (memory.Allocator, func()) { return newBenchFFI(mallocator.NewMallocator()) }},
}

// newBenchFFI charges a greedy pool far larger than any benchmark needs: a
// compare-and-swap per TryGrow, like the pools an operator really uses.
func newBenchFFI(inner memory.Allocator, opts ...ffi.Option) (memory.Allocator, func()) {
	res := pool.NewConsumer("bench").Register(pool.NewGreedy(1 << 50))
	a := ffi.NewAllocator(inner, res, opts...)
	return a, func() {
		if err := a.Close(); err != nil {
			panic(err)
		}
		res.Close()
	}
}

// pageSize is the unit touch writes: one byte per page faults every page in.
const pageSize = 4096

// touch writes one byte in every page of buf, as a real user of the buffer
// does. Without it an mmap'ed buffer whose pages are never faulted in looks
// almost free, and the benchmark would not show what the page policy costs.
func touch(buf []byte) {
	for i := 0; i < len(buf); i += pageSize {
		buf[i] = 1
	}
	if len(buf) > 0 {
		buf[len(buf)-1] = 1
	}
}

// BenchmarkAllocateFree measures one Allocate, a write to every page of the
// buffer (touch), and one Free, single goroutine, per size and allocator.
// Run it under MALLOC_MMAP_THRESHOLD_=131072 (what the library's mallopt
// sets, jni/malloc.go) and without it to see what the page policy costs
// glibc's allocators (bench/RESULTS.md).
func BenchmarkAllocateFree(b *testing.B) {
	for _, size := range benchSizes {
		for _, ba := range benchAllocators {
			b.Run(fmt.Sprintf("size=%d/alloc=%s", size, ba.name), func(b *testing.B) {
				a, done := ba.make()
				defer done()
				b.SetBytes(int64(size))
				runtime.GC() // no GC work left over from the previous entry (the Go allocator's garbage)
				start := cpuTime()
				for b.Loop() {
					buf := a.Allocate(size)
					touch(buf)
					a.Free(buf)
				}
				reportCPU(b, start)
			})
		}
	}
}

// BenchmarkAllocateFreeParallel is BenchmarkAllocateFree from GOMAXPROCS
// goroutines sharing one allocator: the cost of the shared state.
func BenchmarkAllocateFreeParallel(b *testing.B) {
	for _, size := range benchSizes[:2] {
		for _, ba := range benchAllocators {
			b.Run(fmt.Sprintf("size=%d/alloc=%s", size, ba.name), func(b *testing.B) {
				a, done := ba.make()
				defer done()
				b.SetBytes(int64(size))
				runtime.GC()
				start := cpuTime()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						a.Free(a.Allocate(size))
					}
				})
				reportCPU(b, start)
			})
		}
	}
}

// cpuTime is the CPU time (user + system) this process has used. On a
// shared machine wall time includes the time the benchmark was descheduled;
// CPU time does not, so reportCPU adds it as a second metric.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process CPU time per operation since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}
