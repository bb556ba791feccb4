package ffi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/ffi/ffitest"
	"github.com/nativepool/nativepool/pool"
)

// leakyOperator forgets two buffers it allocated directly, from one line.
//
//go:noinline
func leakyOperator(a *ffi.Allocator) {
	for range 2 {
		_ = a.Allocate(4096)
	}
}

// leakyBuilder forgets an array built with an arrow-go builder.
//
//go:noinline
func leakyBuilder(mem memory.Allocator) {
	b := array.NewInt64Builder(mem)
	b.AppendValues(make([]int64, 10), nil)
	_ = b.NewInt64Array() // never released
	b.Release()
}

func TestCloseReportsLeaksGroupedBySiteAndNamesTheAllocatingFunction(t *testing.T) {
	log := &captureLog{}
	a, res := newAlloc(t, "sorter", 1<<20, ffi.WithAllocationSites(true), ffi.WithLogger(log.logger()))
	leakyOperator(a)
	leakyBuilder(a)
	kept := a.Allocate(10)
	a.Free(kept)
	leaked := a.Allocated()

	err := a.Close()
	var leak *ffi.LeakError
	require.ErrorAs(t, err, &leak)
	assert.Equal(t, res.Consumer().String(), leak.Consumer)
	assert.Equal(t, leaked, leak.Bytes)
	require.Len(t, leak.Sites, 3, "leakyOperator's line, and the builder's bitmap and values")
	top := leak.Sites[0]
	assert.Equal(t, "github.com/nativepool/nativepool/ffi_test.leakyOperator", top.Function)
	assert.Equal(t, 2, top.Buffers, "two allocations from one stack, grouped")
	assert.Equal(t, int64(8192), top.Bytes)
	assert.True(t, strings.HasSuffix(top.File, "ffi/leak_test.go"), top.File)
	for _, s := range leak.Sites[1:] {
		assert.Equal(t, "github.com/nativepool/nativepool/ffi_test.leakyBuilder", s.Function, "the first frame outside arrow-go")
		assert.Contains(t, s.Stack[0].Function, "github.com/apache/arrow-go/v18/arrow/memory.(*Buffer)", "the stack keeps arrow-go's frames")
	}
	assert.Greater(t, leak.Sites[1].Bytes, leak.Sites[2].Bytes, "sorted by bytes")
	assert.Contains(t, err.Error(), fmt.Sprintf("ffi: %s leaked %d buffers", res.Consumer(), leak.Buffers))
	assert.Contains(t, err.Error(), fmt.Sprintf("; 8.0 KB in 2 buffers from github.com/nativepool/nativepool/ffi_test.leakyOperator (%s:%d)", top.File, top.Line))
	assert.Contains(t, leak.Report(), "LEAK of 8192 bytes in 2 buffers FROM github.com/nativepool/nativepool/ffi_test.leakyOperator")
	assert.Contains(t, leak.Report(), "ffi_test.TestCloseReportsLeaksGroupedBySiteAndNamesTheAllocatingFunction", "whole stack")
	assert.Contains(t, log.String(), "leakyOperator")

	assert.Zero(t, res.Size(), "Close released the leaked bytes from the reservation")
	assert.Equal(t, leaked, a.Allocated(), "…but freed no memory a consumer might still read")
	assert.True(t, a.Snapshot().Closed)
}

// fakeT records what AssertNoLeak reports.
type fakeT struct{ errors []string }

func (f *fakeT) Helper() {}
func (f *fakeT) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func TestAssertNoLeakFailsNamingTheConsumerAndSite(t *testing.T) {
	a, res := newAlloc(t, "joiner", 1<<20, ffi.WithAllocationSites(true))
	ft := &fakeT{}
	ffitest.AssertNoLeak(ft, a)
	assert.Empty(t, ft.errors, "nothing live yet")

	leakyOperator(a)
	ffitest.AssertNoLeak(ft, a)
	require.Len(t, ft.errors, 1)
	assert.True(t, strings.HasPrefix(ft.errors[0], fmt.Sprintf("ffi: %s leaked 2 buffers (8.0 KB); 8.0 KB in 2 buffers from github.com/nativepool/nativepool/ffi_test.leakyOperator", res.Consumer())), ft.errors[0])
	assert.Contains(t, ft.errors[0], "LEAK of 8192 bytes in 2 buffers FROM")
	log := &captureLog{}
	_ = ffi.NewAllocator(nil, res, ffi.WithLogger(log.logger())) // unrelated allocator: unaffected
	_ = a.Close()
}

func TestLeakReportWithoutSitesSaysHowToGetThem(t *testing.T) {
	log := &captureLog{}
	a, res := newAlloc(t, "agg", 1<<20, ffi.WithLogger(log.logger()))
	_ = a.Allocate(100)
	err := a.Close()
	assert.EqualError(t, err, fmt.Sprintf("ffi: %s leaked 1 buffers (100.0 B); allocation sites not recorded (use WithAllocationSites(true))", res.Consumer()))
}

func TestFreeAfterCloseFreesMemoryWithoutTouchingTheReservation(t *testing.T) {
	log := &captureLog{}
	a, res := newAlloc(t, "op", 1<<20, ffi.WithLogger(log.logger()))
	b := a.Allocate(100)
	other := pool.NewConsumer("neighbour").Register(res.Pool())
	defer other.Close()
	other.Grow(50)

	require.Error(t, a.Close())
	assert.Zero(t, res.Size())
	a.Free(b)
	assert.Zero(t, res.Size())
	assert.Equal(t, int64(50), res.Pool().Reserved(), "the neighbour's bytes are untouched")
	assert.Equal(t, int64(1), a.Snapshot().LateFrees)
	assert.Zero(t, a.Allocated())
}

func TestFreeAfterTheReservationWasClosedIsALateFree(t *testing.T) {
	res := pool.NewConsumer("op").Register(pool.NewGreedy(1 << 20))
	a := ffi.NewAllocator(nil, res)
	b := a.Allocate(100)
	res.Close() // wrong order: the reservation before its allocator
	a.Free(b)
	assert.Equal(t, int64(1), a.Snapshot().LateFrees)
	assert.NoError(t, a.Close())
}

func TestWithCallerNamesTheForeignCallerForAStackOfNativepoolAndArrowFramesOnly(t *testing.T) {
	// Depth 1 keeps only arrow-go's frame of the builder's allocation: the
	// recorded Go stack is all internal, as a JNI entry's is.
	a, _ := newAlloc(t, "copy", 1<<20, ffi.WithAllocationSites(true), ffi.WithSiteDepth(1), ffi.WithLogger((&captureLog{}).logger()))
	leakyBuilder(a.WithCaller("org.example.Job.run(Job.java:42)"))
	var leak *ffi.LeakError
	require.ErrorAs(t, a.Close(), &leak)
	require.NotEmpty(t, leak.Sites)
	for _, s := range leak.Sites {
		assert.Equal(t, "org.example.Job.run", s.Function)
		assert.Equal(t, "Job.java", s.File)
		assert.Equal(t, 42, s.Line)
	}
	assert.Equal(t, "org.example.Job.run (Job.java:42)", leak.TopSite())
	assert.Contains(t, leak.Error(), "from org.example.Job.run (Job.java:42)")
}

// leakyCaller forgets a buffer it allocated from mem.
//
//go:noinline
func leakyCaller(mem memory.Allocator) {
	_ = mem.Allocate(4096)
}

func TestWithCallerKeepsTheGoCallerWhenItIsOutsideNativepool(t *testing.T) {
	a, _ := newAlloc(t, "op", 1<<20, ffi.WithAllocationSites(true), ffi.WithLogger((&captureLog{}).logger()))
	leakyCaller(a.WithCaller("org.example.Job.run(Job.java:42)"))
	var leak *ffi.LeakError
	require.ErrorAs(t, a.Close(), &leak)
	require.Len(t, leak.Sites, 1)
	assert.Equal(t, "github.com/nativepool/nativepool/ffi_test.leakyCaller", leak.Sites[0].Function)
}

func TestWithCallerWithoutSitesIsTheAllocatorItself(t *testing.T) {
	a, _ := newAlloc(t, "op", 1<<20)
	assert.Same(t, a, a.WithCaller("org.example.Job.run(Job.java:42)"))
	b, _ := newAlloc(t, "op", 1<<20, ffi.WithAllocationSites(true))
	assert.Same(t, b, b.WithCaller(""), "no caller: nothing to add")
}

func TestLiveSitesGroupsLiveBuffersBySiteLargestFirst(t *testing.T) {
	a, _ := newAlloc(t, "op", 1<<20, ffi.WithAllocationSites(true), ffi.WithLogger((&captureLog{}).logger()))
	leakyOperator(a)
	leakyCaller(a.WithCaller("org.example.Job.run(Job.java:42)"))
	sites := a.LiveSites()
	require.Len(t, sites, 2)
	assert.True(t, strings.HasPrefix(sites[0].Site, "github.com/nativepool/nativepool/ffi_test.leakyOperator ("), sites[0].Site)
	assert.Equal(t, ffi.LiveSite{Site: sites[0].Site, Bytes: 8192, Buffers: 2}, sites[0])
	assert.True(t, strings.HasPrefix(sites[1].Site, "github.com/nativepool/nativepool/ffi_test.leakyCaller ("), sites[1].Site)
	assert.Equal(t, int64(4096), sites[1].Bytes)

	off, _ := newAlloc(t, "off", 1<<20, ffi.WithLogger((&captureLog{}).logger()))
	assert.Empty(t, off.LiveSites())
	leakyOperator(off)
	assert.Equal(t, []ffi.LiveSite{{Bytes: 8192, Buffers: 2}}, off.LiveSites(), "without sites: one total")
	_ = a.Close()
	_ = off.Close()
}
