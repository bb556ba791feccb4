package ffi_test

import (
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/ffi/ffitest"
	"github.com/nativepool/nativepool/pool"
)

func TestAllocateChargesReservationAndFreeGivesItBack(t *testing.T) {
	a, res := newAlloc(t, "op", 1<<10)
	defer ffitest.AssertNoLeak(t, a)

	b := a.Allocate(100)
	require.Len(t, b, 100)
	assert.Equal(t, 100, cap(b))
	assert.Zero(t, uintptr(unsafe.Pointer(&b[0]))%64, "64-byte aligned")
	assert.Equal(t, make([]byte, 100), b, "zeroed")
	assert.Equal(t, int64(100), a.Allocated())
	assert.Equal(t, int64(100), res.Size())

	a.Free(b)
	assert.Zero(t, a.Allocated())
	assert.Zero(t, res.Size())
}

func TestAllocateRefusalPanicsWithAllocationErrorAndChargesNothing(t *testing.T) {
	a, res := newAlloc(t, "op", 100)
	defer ffitest.AssertNoLeak(t, a)
	keep := a.Allocate(30)
	defer a.Free(keep)

	err := ffi.Catch(func() error {
		a.Allocate(200)
		t.Fatal("Allocate returned past the limit")
		return nil
	})

	var ae *ffi.AllocationError
	require.ErrorAs(t, err, &ae)
	assert.True(t, errors.Is(err, pool.ErrResourcesExhausted))
	assert.True(t, ae.Exhausted())
	assert.Equal(t, "Allocate", ae.Op)
	assert.Equal(t, int64(200), ae.Requested)
	assert.Equal(t, int64(30), ae.Allocated)
	assert.Equal(t, res.Consumer().String(), ae.Consumer)
	assert.Equal(t, fmt.Sprintf("ffi: Allocate(200) for %s with 30 bytes allocated: "+
		"Resources exhausted: Failed to allocate additional 200.0 B for op with 30.0 B already allocated for this reservation - "+
		"70.0 B remain available for the total memory pool: greedy(used: 30.0 B, pool_size: 100.0 B)", res.Consumer()), err.Error())
	assert.Equal(t, int64(30), a.Allocated())
	assert.Equal(t, int64(30), res.Size())
	assert.Equal(t, int64(1), a.Snapshot().Refusals)
}

func TestCatchLetsOtherPanicsThrough(t *testing.T) {
	assert.PanicsWithValue(t, "boom", func() {
		_ = ffi.Catch(func() error { panic("boom") })
	})
	plain := errors.New("plain")
	assert.PanicsWithError(t, "plain", func() {
		_ = ffi.Catch(func() error { panic(plain) })
	})
}

func TestCatchReturnsErrorsThatWrapAnAllocationError(t *testing.T) {
	ae := &ffi.AllocationError{Op: "Allocate", Requested: 1, Consumer: "c#1", Err: pool.ErrResourcesExhausted}
	wrapped := fmt.Errorf("kernel: %w", ae)
	err := ffi.Catch(func() error { panic(wrapped) })
	assert.Same(t, wrapped, err)
	assert.Nil(t, ffi.Catch(func() error { return nil }))
	assert.Same(t, wrapped, ffi.Catch(func() error { return wrapped }))
}

func TestReallocateChargesTheNewBufferBeforeFreeingTheOld(t *testing.T) {
	a, res := newAlloc(t, "op", 150)
	defer ffitest.AssertNoLeak(t, a)
	b := a.Allocate(60)
	for i := range b {
		b[i] = byte(i)
	}

	// 60 live + 100 new > 150: refused although 100 alone would fit after
	// the old buffer is freed, because both exist during the copy.
	err := ffi.Catch(func() error { a.Reallocate(100, b); return nil })
	var ae *ffi.AllocationError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "Reallocate", ae.Op)
	assert.Equal(t, int64(60), res.Size(), "refusal changes nothing")
	b[0] = 42 // b is still live and writable
	b[0] = 0

	b = a.Reallocate(80, b)
	require.Len(t, b, 80)
	for i := range 60 {
		require.Equal(t, byte(i), b[i])
	}
	assert.Equal(t, int64(80), a.Allocated())
	assert.Equal(t, int64(80), res.Size())
	a.Free(b)
}

func TestReallocateWithinCapacityKeepsBufferAndCharge(t *testing.T) {
	a, res := newAlloc(t, "op", 1<<10)
	defer ffitest.AssertNoLeak(t, a)
	b := a.Allocate(128)
	s := a.Reallocate(64, b)
	assert.Equal(t, unsafe.SliceData(b), unsafe.SliceData(s))
	assert.Len(t, s, 64)
	assert.Equal(t, int64(128), a.Allocated(), "the capacity stays allocated until Free")
	assert.Equal(t, int64(128), res.Size())
	a.Free(s) // a shorter slice of the same buffer frees all of it
	assert.Zero(t, res.Size())
}

func TestZeroSizeAllocateChargesNothingAndFreeIgnoresEmptySlices(t *testing.T) {
	a, res := newAlloc(t, "op", 0)
	defer ffitest.AssertNoLeak(t, a)
	b := a.Allocate(0)
	assert.NotNil(t, b)
	assert.Empty(t, b)
	a.Free(b)
	a.Free(nil)
	assert.Zero(t, res.Size())
	assert.Zero(t, a.Snapshot().LiveBuffers)
}

func TestFreeTwicePanicsAndReleasesOnce(t *testing.T) {
	a, res := newAlloc(t, "op", 1<<10)
	defer ffitest.AssertNoLeak(t, a)
	other := a.Allocate(10)
	defer a.Free(other)
	b := a.Allocate(100)
	a.Free(b)

	assert.PanicsWithValue(t, fmt.Sprintf("ffi: Free(100 bytes at %#x) for %s: not a live buffer of this allocator (freed already, or allocated elsewhere)",
		uintptr(unsafe.Pointer(unsafe.SliceData(b))), res.Consumer()), func() { a.Free(b) })
	assert.Equal(t, int64(10), res.Size(), "the second Free gave nothing back")
	assert.Equal(t, int64(10), a.Allocated())
}

func TestFreeOfAnotherAllocatorsBufferPanics(t *testing.T) {
	a, res := newAlloc(t, "op", 1<<10)
	defer ffitest.AssertNoLeak(t, a)
	other, _ := newAlloc(t, "other", 1<<10)
	defer ffitest.AssertNoLeak(t, other)
	b := other.Allocate(64)
	defer other.Free(b)
	goBuf := make([]byte, 64)

	for _, buf := range [][]byte{b, goBuf} {
		assert.PanicsWithValue(t, fmt.Sprintf("ffi: Free(64 bytes at %#x) for %s: not a live buffer of this allocator (freed already, or allocated elsewhere)",
			uintptr(unsafe.Pointer(unsafe.SliceData(buf))), res.Consumer()), func() { a.Free(buf) })
		assert.PanicsWithValue(t, fmt.Sprintf("ffi: Reallocate(64 bytes at %#x) for %s: not a live buffer of this allocator (freed already, or allocated elsewhere)",
			uintptr(unsafe.Pointer(unsafe.SliceData(buf))), res.Consumer()), func() { a.Reallocate(128, buf) })
	}
	assert.Zero(t, res.Size())
	assert.Equal(t, int64(64), other.Allocated())
}

func TestNegativeSizesPanic(t *testing.T) {
	a, _ := newAlloc(t, "op", 1<<10)
	assert.PanicsWithValue(t, "ffi: Allocate(-1): negative size", func() { a.Allocate(-1) })
	assert.PanicsWithValue(t, "ffi: Reallocate(-2): negative size", func() { a.Reallocate(-2, nil) })
	assert.PanicsWithValue(t, "ffi: NewAllocator: nil reservation", func() { ffi.NewAllocator(nil, nil) })
}

func TestAllocateAfterCloseRefusesWithErrClosed(t *testing.T) {
	a, res := newAlloc(t, "op", 1<<10)
	require.NoError(t, a.Close())
	err := ffi.Catch(func() error { a.Allocate(8); return nil })
	assert.ErrorIs(t, err, pool.ErrClosed)
	assert.Equal(t, fmt.Sprintf("ffi: Allocate(8) for %s with 0 bytes allocated: ffi: allocator of %s: closed", res.Consumer(), res.Consumer()), err.Error())
	assert.Zero(t, res.Size())
	assert.NoError(t, a.Close(), "second Close")
}

func TestChunkedAllocatorServesFromSlackAndTrimsIt(t *testing.T) {
	a, res := newAlloc(t, "op", 1<<20, ffi.WithChunkSize(1000))
	defer ffitest.AssertNoLeak(t, a)

	b1 := a.Allocate(10)
	assert.Equal(t, int64(1000), res.Size(), "one chunk taken")
	b2 := a.Allocate(900)
	assert.Equal(t, int64(1000), res.Size(), "served from slack")
	b3 := a.Allocate(2500)
	assert.Equal(t, int64(4000), res.Size(), "whole chunks: 3000 more")
	s := a.Snapshot()
	assert.Equal(t, int64(3410), s.Allocated)
	assert.Equal(t, int64(590), s.Slack)
	assert.Equal(t, s.Charged, s.Allocated+s.Slack)

	a.Free(b3) // slack 3090 > 2 chunks: trimmed to one chunk
	assert.Equal(t, int64(1910), res.Size())
	a.Free(b1)
	a.Free(b2)
	assert.Equal(t, int64(1910), res.Size(), "slack ≤ 2 chunks is kept")
	assert.Zero(t, a.Allocated())
	require.NoError(t, a.Close())
	assert.Zero(t, res.Size(), "Close gives the slack back")
}

func TestChunkedAllocatorFallsBackToTheExactRequestWhenAChunkIsRefused(t *testing.T) {
	a, res := newAlloc(t, "op", 700, ffi.WithChunkSize(1000))
	defer ffitest.AssertNoLeak(t, a)
	b := a.Allocate(700)
	assert.Equal(t, int64(700), res.Size())
	a.Free(b)
}

func TestArrowBuildersChargeThroughTheAllocator(t *testing.T) {
	a, res := newAlloc(t, "op", 1<<20)
	defer ffitest.AssertNoLeak(t, a)
	rb := int64Batch(a, 1, 1000)
	assert.Equal(t, int64(1000), rb.NumRows())
	assert.GreaterOrEqual(t, a.Allocated(), int64(8000))
	assert.Equal(t, a.Allocated(), res.Size())
	assert.Equal(t, sumOf(1, 1000), sumInt64(rb.Column(0).(*array.Int64)))
	rb.Release()
	assert.Zero(t, res.Size())
}

func TestAllocatorOverGoAllocatorChargesTheSame(t *testing.T) {
	res := pool.NewConsumer("go").Register(pool.NewGreedy(1 << 20))
	defer res.Close()
	a := ffi.NewAllocator(memory.NewGoAllocator(), res)
	defer ffitest.AssertNoLeak(t, a)
	b := a.Allocate(100)
	assert.Equal(t, 100, cap(b))
	b = a.Reallocate(300, b)
	assert.Equal(t, int64(300), res.Size())
	a.Free(b)
	assert.Zero(t, res.Size())
}

func TestInnerAllocatorPanicGivesTheChargeBack(t *testing.T) {
	res := pool.NewConsumer("op").Register(pool.NewGreedy(1 << 20))
	defer res.Close()
	a := ffi.NewAllocator(&panickyAllocator{}, res)
	assert.PanicsWithValue(t, "inner: out of memory", func() { a.Allocate(10) })
	assert.Zero(t, res.Size())
	assert.Zero(t, a.Allocated())
}

type panickyAllocator struct{ memory.GoAllocator }

func (*panickyAllocator) Allocate(int) []byte { panic("inner: out of memory") }

func sumInt64(arr *array.Int64) int64 {
	var s int64
	for _, v := range arr.Int64Values() {
		s += v
	}
	return s
}
