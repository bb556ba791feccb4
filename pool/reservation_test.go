package pool

import (
	"errors"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// callRecordingPool decorates a pool and records every call it receives,
// with the reservation's size as seen during the call, so tests can pin the
// Reservation's call ordering.
type callRecordingPool struct {
	Pool
	mu    sync.Mutex
	calls []recordedCall
}

type recordedCall struct {
	op       string // register, unregister, grow, shrink, try_grow
	consumer string
	n        int64
	seen     int64 // r.Size() during the call (0 for register/unregister)
	reserved int64 // inner Reserved() during the call, before delegating
}

func (p *callRecordingPool) record(c recordedCall) {
	p.mu.Lock()
	p.calls = append(p.calls, c)
	p.mu.Unlock()
}

func (p *callRecordingPool) Register(c *Consumer) {
	p.record(recordedCall{op: "register", consumer: c.Name(), reserved: p.Pool.Reserved()})
	p.Pool.Register(c)
}

func (p *callRecordingPool) Unregister(c *Consumer) {
	p.record(recordedCall{op: "unregister", consumer: c.Name(), reserved: p.Pool.Reserved()})
	p.Pool.Unregister(c)
}

func (p *callRecordingPool) Grow(r *Reservation, n int64) {
	p.record(recordedCall{"grow", r.Consumer().Name(), n, r.Size(), p.Pool.Reserved()})
	p.Pool.Grow(r, n)
}

func (p *callRecordingPool) Shrink(r *Reservation, n int64) {
	p.record(recordedCall{"shrink", r.Consumer().Name(), n, r.Size(), p.Pool.Reserved()})
	p.Pool.Shrink(r, n)
}

func (p *callRecordingPool) TryGrow(r *Reservation, n int64) error {
	p.record(recordedCall{"try_grow", r.Consumer().Name(), n, r.Size(), p.Pool.Reserved()})
	return p.Pool.TryGrow(r, n)
}

func (p *callRecordingPool) Unwrap() Pool { return p.Pool }

// take returns the calls recorded so far and forgets them.
func (p *callRecordingPool) take() []recordedCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls
	p.calls = nil
	return c
}

var consumerIDPattern = regexp.MustCompile(`#\d+\(can spill: `)

// maskConsumerIDs replaces the volatile consumer IDs in a TrackConsumers
// report with [ID], as DataFusion's snapshot tests do.
func maskConsumerIDs(s string) string {
	return consumerIDPattern.ReplaceAllString(s, "#[ID](can spill: ")
}

// --- DataFusion mod.rs tests, ported with the same numbers ---------------

// TestGrowPastLimitThenFreeRestoresTryGrow ports test_memory_pool_underflow.
func TestGrowPastLimitThenFreeRestoresTryGrow(t *testing.T) {
	p := NewGreedy(50)
	a1 := NewConsumer("a1").Register(p)
	assert.Equal(t, int64(0), p.Reserved())

	a1.Grow(100)
	assert.Equal(t, int64(100), p.Reserved())

	assert.Equal(t, int64(100), a1.Free())
	assert.Equal(t, int64(0), p.Reserved())

	require.ErrorIs(t, a1.TryGrow(100), ErrResourcesExhausted)
	assert.Equal(t, int64(0), p.Reserved())

	require.NoError(t, a1.TryGrow(30))
	assert.Equal(t, int64(30), p.Reserved())

	a2 := NewConsumer("a2").Register(p)
	require.ErrorIs(t, a2.TryGrow(25), ErrResourcesExhausted)
	assert.Equal(t, int64(30), p.Reserved())

	a1.Close()
	assert.Equal(t, int64(0), p.Reserved())

	require.NoError(t, a2.TryGrow(25))
	assert.Equal(t, int64(25), p.Reserved())
}

// TestSplitKeepsBytesWithTheConsumer ports test_split.
func TestSplitKeepsBytesWithTheConsumer(t *testing.T) {
	p := NewGreedy(50)
	r1 := NewConsumer("r1").Register(p)
	require.NoError(t, r1.TryGrow(20))
	assert.Equal(t, int64(20), r1.Size())
	assert.Equal(t, int64(20), p.Reserved())

	r2 := r1.Split(5)
	assert.Equal(t, int64(15), r1.Size())
	assert.Equal(t, int64(5), r2.Size())
	assert.Equal(t, int64(20), p.Reserved())

	r1.Close()
	assert.Equal(t, int64(5), r2.Size())
	assert.Equal(t, int64(5), p.Reserved())
}

// TestNewEmptySiblingsAddUpInPool ports test_new_empty.
func TestNewEmptySiblingsAddUpInPool(t *testing.T) {
	p := NewGreedy(50)
	r1 := NewConsumer("r1").Register(p)
	require.NoError(t, r1.TryGrow(20))
	r2 := r1.NewEmpty()
	require.NoError(t, r2.TryGrow(5))

	assert.Equal(t, int64(20), r1.Size())
	assert.Equal(t, int64(5), r2.Size())
	assert.Equal(t, int64(25), p.Reserved())
}

// TestTakeMovesAllBytesAndOriginalCanGrowAgain ports test_take.
func TestTakeMovesAllBytesAndOriginalCanGrowAgain(t *testing.T) {
	p := NewGreedy(50)
	r1 := NewConsumer("r1").Register(p)
	require.NoError(t, r1.TryGrow(20))
	r2 := r1.Take()
	require.NoError(t, r2.TryGrow(5))

	assert.Equal(t, int64(0), r1.Size())
	assert.Equal(t, int64(25), r2.Size())
	assert.Equal(t, int64(25), p.Reserved())

	require.NoError(t, r1.TryGrow(3))
	assert.Equal(t, int64(3), r1.Size())
	assert.Equal(t, int64(25), r2.Size())
	assert.Equal(t, int64(28), p.Reserved())
}

// TestTryShrinkReturnsNewSizeAndFailsWithoutChangingState ports
// test_try_shrink.
func TestTryShrinkReturnsNewSizeAndFailsWithoutChangingState(t *testing.T) {
	p := NewGreedy(100)
	r1 := NewConsumer("r1").Register(p)
	require.NoError(t, r1.TryGrow(50))
	assert.Equal(t, int64(50), r1.Size())
	assert.Equal(t, int64(50), p.Reserved())

	got, err := r1.TryShrink(30)
	require.NoError(t, err)
	assert.Equal(t, int64(20), got)
	assert.Equal(t, int64(20), r1.Size())
	assert.Equal(t, int64(20), p.Reserved())

	r2 := NewConsumer("r2").Register(p)
	require.NoError(t, r2.TryGrow(80))
	assert.Equal(t, int64(100), p.Reserved())

	got, err = r1.TryShrink(25)
	require.ErrorIs(t, err, ErrInvalidSize)
	assert.EqualError(t, err, "Cannot free the capacity 25 out of allocated size 20: invalid size")
	assert.Equal(t, int64(20), got)
	assert.Equal(t, int64(20), r1.Size())
	assert.Equal(t, int64(100), p.Reserved())

	got, err = r1.TryShrink(20)
	require.NoError(t, err)
	assert.Equal(t, int64(0), got)
	assert.Equal(t, int64(0), r1.Size())
	assert.Equal(t, int64(80), p.Reserved())
}

// --- Call ordering (reference §7: Comet broke its pool misreading it) -----

// TestPoolSeesSizeBeforeGrowAndAfterShrink pins the ordering contract:
// inside TryGrow and Grow r.Size() excludes the request, inside Shrink it
// already excludes the shrunk bytes.
func TestPoolSeesSizeBeforeGrowAndAfterShrink(t *testing.T) {
	rec := &callRecordingPool{Pool: NewGreedy(1000)}
	r := NewConsumer("c").Register(rec)
	require.NoError(t, r.TryGrow(10))
	r.Grow(5)
	require.NoError(t, r.TryGrow(7))
	r.Shrink(4)
	_, err := r.TryShrink(8)
	require.NoError(t, err)
	require.NoError(t, r.TryResize(20))
	r.Resize(2)
	assert.Equal(t, []recordedCall{
		{op: "register", consumer: "c"},
		{"try_grow", "c", 10, 0, 0},
		{"grow", "c", 5, 10, 10},
		{"try_grow", "c", 7, 15, 15},
		{"shrink", "c", 4, 18, 22},
		{"shrink", "c", 8, 10, 18},
		{"try_grow", "c", 10, 10, 10},
		{"shrink", "c", 18, 2, 20},
	}, rec.take())
}

// TestFailedTryGrowLeavesReservationAndPoolUnchanged: a refusal records
// nothing anywhere.
func TestFailedTryGrowLeavesReservationAndPoolUnchanged(t *testing.T) {
	p := NewGreedy(10)
	r := NewConsumer("c").Register(p)
	require.NoError(t, r.TryGrow(6))
	require.ErrorIs(t, r.TryGrow(5), ErrResourcesExhausted)
	assert.Equal(t, int64(6), r.Size())
	assert.Equal(t, int64(6), p.Reserved())
	require.ErrorIs(t, r.TryResize(11), ErrResourcesExhausted)
	assert.Equal(t, int64(6), r.Size())
	assert.Equal(t, int64(6), p.Reserved())
}

// TestZeroByteCallsReachPool: Grow(0), TryGrow(0) and Shrink(0) are not
// filtered by the reservation.
func TestZeroByteCallsReachPool(t *testing.T) {
	rec := &callRecordingPool{Pool: NewGreedy(100)}
	r := NewConsumer("z").Register(rec)
	rec.take()
	r.Grow(0)
	require.NoError(t, r.TryGrow(0))
	r.Shrink(0)
	_, err := r.TryShrink(0)
	require.NoError(t, err)
	assert.Equal(t, []recordedCall{
		{"grow", "z", 0, 0, 0},
		{"try_grow", "z", 0, 0, 0},
		{"shrink", "z", 0, 0, 0},
		{"shrink", "z", 0, 0, 0},
	}, rec.take())
}

// TestSplitTakeNewEmptyNeverCallPool: moving bytes between siblings is
// invisible to the pool.
func TestSplitTakeNewEmptyNeverCallPool(t *testing.T) {
	rec := &callRecordingPool{Pool: NewGreedy(100)}
	r := NewConsumer("s").Register(rec)
	require.NoError(t, r.TryGrow(30))
	rec.take()

	a := r.Split(10)
	b := r.Take()
	e := r.NewEmpty()
	assert.Empty(t, rec.take())
	assert.Equal(t, []int64{0, 10, 20, 0}, []int64{r.Size(), a.Size(), b.Size(), e.Size()})
	assert.Equal(t, int64(30), rec.Reserved())
}

// TestFreeShowsZeroSizeToPoolAndSkipsEmptyReservations: Free swaps the size
// to 0 before shrinking, and does not call the pool when already empty.
func TestFreeShowsZeroSizeToPoolAndSkipsEmptyReservations(t *testing.T) {
	rec := &callRecordingPool{Pool: NewGreedy(100)}
	r := NewConsumer("f").Register(rec)
	require.NoError(t, r.TryGrow(30))
	rec.take()
	assert.Equal(t, int64(30), r.Free())
	assert.Equal(t, int64(0), r.Free())
	assert.Equal(t, []recordedCall{{"shrink", "f", 30, 0, 30}}, rec.take())
}

// TestLastCloseUnregistersAfterFinalShrink: siblings share one registration;
// only the last Close unregisters, after that reservation's final shrink.
func TestLastCloseUnregistersAfterFinalShrink(t *testing.T) {
	rec := &callRecordingPool{Pool: NewGreedy(100)}
	r := NewConsumer("l").Register(rec)
	require.NoError(t, r.TryGrow(30))
	s := r.Split(10)
	rec.take()

	r.Close()
	assert.Equal(t, []recordedCall{{"shrink", "l", 20, 0, 30}}, rec.take())
	s.Close()
	assert.Equal(t, []recordedCall{
		{"shrink", "l", 10, 0, 10},
		{op: "unregister", consumer: "l"},
	}, rec.take())
	assert.Equal(t, int64(0), rec.Reserved())
}

// TestEmptyReservationCloseUnregistersWithoutShrink: closing an empty
// reservation makes exactly one pool call.
func TestEmptyReservationCloseUnregistersWithoutShrink(t *testing.T) {
	rec := &callRecordingPool{Pool: NewGreedy(100)}
	r := NewConsumer("e").Register(rec)
	r.Close()
	assert.Equal(t, []recordedCall{
		{op: "register", consumer: "e"},
		{op: "unregister", consumer: "e"},
	}, rec.take())
}

// --- Bad input and misuse -------------------------------------------------

// TestNegativeSizesAreRejectedWithoutChangingState: Try forms return an
// error wrapping ErrInvalidSize, infallible forms panic naming the value.
func TestNegativeSizesAreRejectedWithoutChangingState(t *testing.T) {
	rec := &callRecordingPool{Pool: NewGreedy(100)}
	r := NewConsumer("n").Register(rec)
	require.NoError(t, r.TryGrow(10))
	rec.take()

	err := r.TryGrow(-5)
	require.ErrorIs(t, err, ErrInvalidSize)
	assert.EqualError(t, err, "pool: TryGrow(-5): negative size: invalid size")

	got, err := r.TryShrink(-5)
	require.ErrorIs(t, err, ErrInvalidSize)
	assert.EqualError(t, err, "pool: TryShrink(-5): negative size: invalid size")
	assert.Equal(t, int64(10), got)

	err = r.TryResize(-5)
	require.ErrorIs(t, err, ErrInvalidSize)
	assert.EqualError(t, err, "pool: TryResize(-5): negative size: invalid size")

	assert.PanicsWithValue(t, "pool: Grow(-5): negative size", func() { r.Grow(-5) })
	assert.PanicsWithValue(t, "pool: Shrink(-5): negative size", func() { r.Shrink(-5) })
	assert.PanicsWithValue(t, "pool: Resize(-5): negative size", func() { r.Resize(-5) })
	assert.PanicsWithValue(t, "pool: Split(-5): negative size", func() { r.Split(-5) })

	assert.Empty(t, rec.take())
	assert.Equal(t, int64(10), r.Size())
	assert.Equal(t, int64(10), rec.Reserved())
}

// TestShrinkBelowZeroPanicsWithDataFusionMessage, and changes nothing.
func TestShrinkBelowZeroPanicsWithDataFusionMessage(t *testing.T) {
	rec := &callRecordingPool{Pool: NewGreedy(100)}
	r := NewConsumer("u").Register(rec)
	require.NoError(t, r.TryGrow(10))
	rec.take()
	assert.PanicsWithValue(t, "Cannot free the capacity 11 out of allocated size 10", func() { r.Shrink(11) })
	assert.PanicsWithValue(t, "pool: Split(11): exceeds reservation size 10", func() { r.Split(11) })
	assert.Empty(t, rec.take())
	assert.Equal(t, int64(10), r.Size())
	assert.Equal(t, int64(10), rec.Reserved())
}

// TestDoubleCloseIsANoOp: the second Close neither shrinks nor
// unregisters again.
func TestDoubleCloseIsANoOp(t *testing.T) {
	rec := &callRecordingPool{Pool: NewFair(100)}
	r := NewConsumer("d").WithCanSpill(true).Register(rec)
	require.NoError(t, r.TryGrow(10))
	r.Close()
	assert.True(t, r.Closed())
	rec.take()
	r.Close()
	assert.Empty(t, rec.take())
	assert.Equal(t, int64(0), rec.Reserved())
}

// TestClosedReservationFailsLoudly: every mutating method of a closed
// reservation panics or returns ErrClosed, and nothing reaches the pool.
func TestClosedReservationFailsLoudly(t *testing.T) {
	rec := &callRecordingPool{Pool: NewGreedy(100)}
	c := NewConsumer("x")
	r := c.Register(rec)
	r.Close()
	rec.take()
	closedMsg := func(op string) string {
		return "pool: " + op + " on closed reservation of " + c.String() + ": closed"
	}

	err := r.TryGrow(1)
	require.ErrorIs(t, err, ErrClosed)
	assert.EqualError(t, err, "pool: TryGrow(1) on closed reservation of "+c.String()+": closed")
	_, err = r.TryShrink(0)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, r.TryResize(0), ErrClosed)
	require.ErrorIs(t, r.TryResize(1), ErrClosed)

	assert.PanicsWithValue(t, closedMsg("Grow(1)"), func() { r.Grow(1) })
	assert.PanicsWithValue(t, closedMsg("Shrink(0)"), func() { r.Shrink(0) })
	assert.PanicsWithValue(t, closedMsg("Split(0)"), func() { r.Split(0) })
	assert.PanicsWithValue(t, closedMsg("NewEmpty(0)"), func() { r.NewEmpty() })
	assert.PanicsWithValue(t, closedMsg("Take(0)"), func() { r.Take() })
	assert.PanicsWithValue(t, closedMsg("Resize(0)"), func() { r.Resize(0) })
	assert.PanicsWithValue(t, closedMsg("Resize(3)"), func() { r.Resize(3) })
	assert.Equal(t, int64(0), r.Free())
	assert.Empty(t, rec.take())
}

// TestResizeGrowsAndShrinksToTarget, through the pool.
func TestResizeGrowsAndShrinksToTarget(t *testing.T) {
	p := NewGreedy(100)
	r := NewConsumer("rs").Register(p)
	r.Resize(40)
	assert.Equal(t, int64(40), r.Size())
	r.Resize(40)
	r.Resize(15)
	assert.Equal(t, int64(15), r.Size())
	require.NoError(t, r.TryResize(90))
	require.NoError(t, r.TryResize(5))
	assert.Equal(t, int64(5), r.Size())
	assert.Equal(t, int64(5), p.Reserved())
}

// TestReservationStringNamesConsumerAndSize.
func TestReservationStringNamesConsumerAndSize(t *testing.T) {
	c := NewConsumer("op")
	r := c.Register(NewUnbounded())
	r.Grow(3)
	assert.Equal(t, "reservation("+c.String()+", size: 3)", r.String())
	assert.Same(t, c, r.Consumer())
	assert.Equal(t, "unbounded", r.Pool().Name())
}

// TestErrorsFromRefusalsAreNotInvalidSize: the sentinels do not overlap.
func TestErrorsFromRefusalsAreNotInvalidSize(t *testing.T) {
	r := NewConsumer("c").Register(NewGreedy(1))
	err := r.TryGrow(2)
	require.ErrorIs(t, err, ErrResourcesExhausted)
	assert.False(t, errors.Is(err, ErrInvalidSize))
	assert.False(t, errors.Is(err, ErrClosed))
}
