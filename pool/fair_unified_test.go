package pool_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/nativepool/nativepool/internal/fakeupstream"
	"github.com/nativepool/nativepool/pool"
)

// fairShareRefusal is the exact text of a fair-share refusal.
func fairShareRefusal(n int64, c *pool.Consumer, holds, limit, num, oc int64, p pool.Pool) string {
	return fmt.Sprintf("Resources exhausted: Failed to acquire %d bytes for %s where this consumer already holds %d bytes "+
		"and the fair limit is %d bytes, %d spillable registered (%d bytes overcommitted): %s", n, c, holds, limit, num, oc, p)
}

// poolTotalRefusal is the exact text of a pool-total refusal.
func poolTotalRefusal(n int64, c *pool.Consumer, used, oc, size int64, p pool.Pool) string {
	return fmt.Sprintf("Resources exhausted: Failed to acquire %d bytes for %s where %d bytes already reserved "+
		"(%d bytes overcommitted) and the pool limit is %d bytes: %s", n, c, used, oc, size, p)
}

func spillable(name string) *pool.Consumer { return pool.NewConsumer(name).WithCanSpill(true) }

// Fair share as a pure function of (size, spillable consumers), after
// Comet #5214's tests.

func TestFairUnifiedSoleConsumerMayUseWholePool(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "fair", up, 1000, pool.WithChunkSize(0))
	a := spillable("a")
	r := a.Register(p)
	require.NoError(t, r.TryGrow(1000))
	err := r.TryGrow(1)
	require.ErrorIs(t, err, pool.ErrResourcesExhausted)
	assert.Equal(t, fairShareRefusal(1, a, 1000, 1000, 1, 0, p), err.Error())
}

func TestFairUnifiedShareIsDividedEvenlyBetweenConsumers(t *testing.T) {
	p := unified(t, "fair", fakeupstream.New(), 1000, pool.WithChunkSize(0))
	cs := []*pool.Consumer{spillable("a"), spillable("b"), spillable("c"), spillable("d")}
	var rs []*pool.Reservation
	for _, c := range cs {
		rs = append(rs, c.Register(p))
	}
	err := rs[0].TryGrow(251)
	require.ErrorIs(t, err, pool.ErrResourcesExhausted)
	assert.Equal(t, fairShareRefusal(251, cs[0], 0, 250, 4, 0, p), err.Error())
	require.NoError(t, rs[0].TryGrow(250))
}

func TestFairUnifiedEachConsumerMayReachItsOwnShare(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "fair", up, 1000, pool.WithChunkSize(0))
	a := spillable("a").Register(p)
	b := spillable("b").Register(p)
	require.NoError(t, a.TryGrow(500))
	require.NoError(t, b.TryGrow(500))
	assert.Equal(t, int64(1000), up.Held())
}

func TestFairUnifiedConsumerMayNotExceedItsOwnShare(t *testing.T) {
	p := unified(t, "fair", fakeupstream.New(), 1000, pool.WithChunkSize(0))
	c := spillable("a")
	a := c.Register(p)
	spillable("b").Register(p) // registered, holds nothing: still halves the share
	require.NoError(t, a.TryGrow(500))
	err := a.TryGrow(1)
	assert.Equal(t, fairShareRefusal(1, c, 500, 500, 2, 0, p), err.Error())
}

// A reservation whose consumer never registered with this pool (Comet
// panics there) is accounted as if it had: it gets the whole share when it
// is the only spillable consumer.
func TestFairUnifiedNoRegisteredConsumersDoesNotPanic(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "fair", up, 1000, pool.WithChunkSize(0))
	r := spillable("stray").Register(pool.NewUnbounded())
	require.NoError(t, p.TryGrow(r, 1000))
	require.ErrorIs(t, p.TryGrow(r, 1), pool.ErrResourcesExhausted)
	p.Shrink(r, 1000)
	assert.Zero(t, up.Held())
}

func TestFairUnifiedOversizedRequestDoesNotOverflow(t *testing.T) {
	p := unified(t, "fair", fakeupstream.New(), math.MaxInt64, pool.WithChunkSize(0))
	a := spillable("a")
	u := pool.NewConsumer("u")
	ra, ru := a.Register(p), u.Register(p)
	require.NoError(t, ra.TryGrow(10))
	require.NoError(t, ru.TryGrow(10))
	err := ra.TryGrow(math.MaxInt64)
	require.ErrorIs(t, err, pool.ErrResourcesExhausted)
	assert.Equal(t, fairShareRefusal(math.MaxInt64, a, 10, math.MaxInt64-10, 1, 0, p), err.Error())
	err = ru.TryGrow(math.MaxInt64)
	require.ErrorIs(t, err, pool.ErrResourcesExhausted)
	assert.Equal(t, poolTotalRefusal(math.MaxInt64, u, 20, 0, math.MaxInt64, p), err.Error())
}

// Comet's later fair pool tests.

func TestFairUnifiedGrowPastTheFairLimitIsRecordedAndRefusesTheNextTryGrow(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "fair", up, 100, pool.WithChunkSize(0))
	c := spillable("a")
	r := c.Register(p)
	r.Grow(150) // past the fair limit and the pool: recorded, no panic
	assert.Equal(t, int64(150), p.Reserved())
	err := r.TryGrow(1)
	assert.Equal(t, fairShareRefusal(1, c, 150, 100, 1, 0, p), err.Error())
	r.Close()
	require.NoError(t, p.Close())
	assert.Zero(t, up.Held(), "Spark gets back exactly what it granted")
}

func TestFairUnifiedEachConsumerIsLimitedToItsOwnShare(t *testing.T) {
	p := unified(t, "fair", fakeupstream.New(), 900, pool.WithChunkSize(0))
	var rs []*pool.Reservation
	for _, n := range []string{"a", "b", "c"} {
		rs = append(rs, spillable(n).Register(p))
	}
	require.NoError(t, rs[0].TryGrow(300))
	require.ErrorIs(t, rs[0].TryGrow(1), pool.ErrResourcesExhausted, "a is at its share while 600 bytes are free")
	require.NoError(t, rs[1].TryGrow(300))
	require.NoError(t, rs[2].TryGrow(300))
}

func TestFairUnifiedAConsumerRegisteredLateIsLimitedByThePoolTotal(t *testing.T) {
	p := unified(t, "fair", fakeupstream.New(), 1000, pool.WithChunkSize(0))
	a := spillable("a").Register(p)
	require.NoError(t, a.TryGrow(1000))
	c := spillable("late")
	b := c.Register(p) // share is now 500, but the pool is full
	err := b.TryGrow(1)
	assert.Equal(t, poolTotalRefusal(1, c, 1000, 0, 1000, p), err.Error())
	a.Shrink(600)
	require.NoError(t, b.TryGrow(400))
	err = b.TryGrow(101)
	assert.Equal(t, fairShareRefusal(101, c, 400, 500, 2, 0, p), err.Error())
}

// docs/SEMANTICS.md, difference 1 (apache/datafusion#25172, Comet #5961): the
// share is per consumer, across all its reservations.
func TestFairUnifiedSiblingReservationsDrawOnOneShare(t *testing.T) {
	p := unified(t, "fair", fakeupstream.New(), 1000, pool.WithChunkSize(0))
	c := spillable("a")
	r1 := c.Register(p)
	r2 := r1.NewEmpty()
	spillable("b").Register(p)
	require.NoError(t, r1.TryGrow(300))
	err := r2.TryGrow(201)
	assert.Equal(t, fairShareRefusal(201, c, 300, 500, 2, 0, p), err.Error())
	require.NoError(t, r2.TryGrow(200))
}

func TestFairUnifiedSplitAndTakeKeepTheBytesOnTheirConsumer(t *testing.T) {
	p := unified(t, "fair", fakeupstream.New(), 1000, pool.WithChunkSize(0))
	c := spillable("a")
	r := c.Register(p)
	spillable("b").Register(p)
	require.NoError(t, r.TryGrow(400))
	s := r.Split(100)
	taken := r.Take()
	assert.Zero(t, r.Size())
	require.ErrorIs(t, r.TryGrow(101), pool.ErrResourcesExhausted, "the consumer still holds 400")
	s.Close()
	require.NoError(t, r.TryGrow(101), "closing the split gave its 100 back to the consumer's share")
	taken.Close()
	r.Close()
	assert.Zero(t, p.Reserved())
}

// Comet #5465: unspillable consumers neither divide the share nor are held
// to it; they are limited by the pool total, and their bytes come off the
// spillable share.
func TestFairUnifiedUnspillableConsumersAreLimitedByThePoolTotalOnly(t *testing.T) {
	p := unified(t, "fair", fakeupstream.New(), 1000, pool.WithChunkSize(0))
	uc := pool.NewConsumer("join")
	u := uc.Register(p)
	ac := spillable("a")
	a := ac.Register(p)
	spillable("b").Register(p)

	require.NoError(t, u.TryGrow(600), "more than a third: the share does not apply")
	err := a.TryGrow(201)
	assert.Equal(t, fairShareRefusal(201, ac, 0, 200, 2, 0, p), err.Error(), "(1000 - 600) / 2 spillable")
	require.NoError(t, a.TryGrow(200))
	err = u.TryGrow(201)
	assert.Equal(t, poolTotalRefusal(201, uc, 800, 0, 1000, p), err.Error())
	require.NoError(t, u.TryGrow(200))
}

func TestFairUnifiedUnspillableConsumersDoNotDivideTheShare(t *testing.T) {
	p := unified(t, "fair", fakeupstream.New(), 1000, pool.WithChunkSize(0))
	for _, n := range []string{"u1", "u2", "u3"} {
		pool.NewConsumer(n).Register(p)
	}
	a := spillable("a").Register(p)
	require.NoError(t, a.TryGrow(1000))
}

// DataFusion's test_fair: free() keeps the consumer registered, so the
// other consumer's share does not grow; closing its reservation (which
// unregisters it) does.
func TestFairUnifiedOnlyUnregisteringRaisesAnotherConsumersShare(t *testing.T) {
	p := unified(t, "fair", fakeupstream.New(), 100, pool.WithChunkSize(0))
	a := spillable("a").Register(p)
	b := spillable("b").Register(p)
	require.NoError(t, a.TryGrow(50))
	require.NoError(t, b.TryGrow(50))
	a.Free()
	require.ErrorIs(t, b.TryGrow(1), pool.ErrResourcesExhausted)
	a.Close()
	require.NoError(t, b.TryGrow(50))
}

func TestFairUnifiedGrowAfterRefusedTryGrowIsRecordedAsOvercommit(t *testing.T) {
	up := fakeupstream.New()
	up.SetLimit(100)
	p := unified(t, "fair", up, 1000, pool.WithChunkSize(0))
	r := spillable("a").Register(p)
	require.ErrorIs(t, r.TryGrow(200), pool.ErrResourcesExhausted)
	r.Grow(200)
	assert.Equal(t, int64(100), p.Stats().Overcommit)
	requireUnifiedInvariants(t, p, up.Held(), 0, r)
}

func TestFairUnifiedNameLimitAndString(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "fair", up, 1<<30, pool.WithChunkSize(1<<20), pool.WithName("task 9"))
	assert.Equal(t, "fair_unified", p.Name())
	assert.Equal(t, pool.Limit{Kind: pool.Finite, Bytes: 1 << 30}, p.Limit())
	assert.Equal(t, "fair_unified[task 9](pool_size: 1024.0 MB, used: 0.0 B, held: 0.0 B, overcommit: 0.0 B, consumers: 0)", p.String())
	r := spillable("a").Register(p)
	pool.NewConsumer("b").Register(p)
	r.Grow(3 << 20)
	assert.Equal(t, "fair_unified[task 9](pool_size: 1024.0 MB, used: 3.0 MB, held: 3.0 MB, overcommit: 0.0 B, consumers: 2)", p.String())
}

// Comet #5212 item 17 / PR #5613: no lock across the upstream call. While
// one consumer's TryGrow waits inside a blocked upstream Acquire (Spark's
// wait() for 1/2N), other consumers grow, shrink, read stats and reclaim.
// Returning within the timeout is the claim.
func TestFairUnifiedOtherConsumersProceedWhileOneWaitsForUpstream(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "fair", up, 1<<20, pool.WithChunkSize(0))
	blocked := pool.NewConsumer("blocked").Register(p)
	other := pool.NewConsumer("other").Register(p)
	other.Grow(100)
	entered, release := make(chan struct{}), make(chan struct{})
	up.OnAcquire(func(ask int64) {
		if ask == 5000 {
			close(entered)
			<-release
		}
	})
	var g errgroup.Group
	g.Go(func() error { return blocked.TryGrow(5000) })
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the blocked TryGrow never reached upstream")
	}
	within(t, 5*time.Second, "other consumers while one waits upstream", func() {
		other.Grow(10)
		if err := other.TryGrow(10); err != nil {
			panic(err)
		}
		other.Shrink(20)
		_ = p.Stats()
		_ = p.String()
		if _, err := p.Reclaim(1); err != nil {
			panic(err)
		}
	})
	close(release)
	require.NoError(t, g.Wait())
	requireUnifiedInvariants(t, p, up.Held(), 0, blocked, other)
}

// Bytes booked by a TryGrow still waiting for upstream count against the
// pool total, so two concurrent requests cannot both pass the check.
func TestFairUnifiedAdmissionCountsRequestsStillWaitingForUpstream(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "fair", up, 1000, pool.WithChunkSize(0))
	a := pool.NewConsumer("a").Register(p)
	bc := pool.NewConsumer("b")
	b := bc.Register(p)
	var inner error
	up.OnAcquire(func(ask int64) {
		if ask == 600 {
			inner = b.TryGrow(600)
		}
	})
	require.NoError(t, a.TryGrow(600))
	require.ErrorIs(t, inner, pool.ErrResourcesExhausted)
	assert.Contains(t, inner.Error(), "where 600 bytes already reserved")
	assert.Equal(t, int64(600), up.Held())
}

func TestUnifiedNegativeSizesAreRejected(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New()
			p := unified(t, kind, up, 100)
			r := pool.NewConsumer("a").Register(p)
			require.ErrorIs(t, r.TryGrow(-1), pool.ErrInvalidSize)
			require.ErrorIs(t, p.TryGrow(r, -1), pool.ErrInvalidSize, "the pool defends too")
			assert.PanicsWithValue(t, "pool: Grow(-1): negative size", func() { p.Grow(r, -1) })
			assert.PanicsWithValue(t, "pool: Shrink(-1): negative size", func() { p.Shrink(r, -1) })
			_, err := p.Reclaim(-1)
			require.ErrorIs(t, err, pool.ErrInvalidSize)
			acq, rel := up.Calls()
			assert.Zero(t, acq+rel)
		})
	}
}

func TestUnifiedConstructorsRejectCallerBugs(t *testing.T) {
	assert.PanicsWithValue(t, "pool: NewGreedyUnified(nil): nil upstream", func() { pool.NewGreedyUnified(nil) })
	assert.PanicsWithValue(t, "pool: NewFairUnified(nil): nil upstream", func() { pool.NewFairUnified(nil, 1) })
	assert.PanicsWithValue(t, "pool: NewFairUnified(-1): negative size", func() { pool.NewFairUnified(fakeupstream.New(), -1) })
}

// A consumer's own rollback counts against its share until Spark has the
// bytes back (Comet's fair-pool test, ported one to one). The first
// reservation's TryGrow(100) is granted 50 and rolls back; while those 50
// bytes are on their way back to Spark, a sibling reservation of the same
// consumer asks for 60 where the consumer's share is 100: it is refused by
// the fair limit, holding 50, and never reaches Spark.
func TestFairUnifiedRollbackInFlightCountsAgainstTheConsumersShare(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "fair", up, 200, pool.WithChunkSize(0))
	c := spillable("c")
	first := c.Register(p)
	sibling := first.NewEmpty()
	other := spillable("other").Register(p) // two spillable consumers: a share of 100 each
	defer other.Close()

	up.Reply(fakeupstream.Grant(50))
	var siblingErr error
	var want string
	up.OnRelease(func(n int64) {
		if n == 50 && siblingErr == nil {
			siblingErr = sibling.TryGrow(60)
			want = fairShareRefusal(60, c, 50, 100, 2, 0, p)
		}
	})
	err := first.TryGrow(100)
	require.ErrorIs(t, err, pool.ErrResourcesExhausted)
	require.ErrorIs(t, siblingErr, pool.ErrResourcesExhausted, "the sibling was admitted on bytes still on their way back")
	assert.Equal(t, want, siblingErr.Error())
	assert.Equal(t, []int64{100}, up.Asks(), "the sibling never reached Spark")
	assert.Equal(t, int64(0), sibling.Size())
	assert.Equal(t, int64(0), up.Held())

	up.OnRelease(nil)
	require.NoError(t, sibling.TryGrow(100), "the share is whole again once Spark has the bytes back")
	sibling.Close()
	first.Close()
	requireUnifiedInvariants(t, p, up.Held(), 0)
}

// When that rollback's release fails, the 50 bytes stay owed by the pool
// and still count against the consumer's share (Comet's fair-pool test,
// ported one to one): the sibling's TryGrow(51) is refused by the fair
// limit instead of going to Spark. A sweep hands the owed bytes back, and
// the share is whole again.
func TestFairUnifiedOwedBytesOfARollbackCountAgainstTheConsumersShare(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "fair", up, 200, pool.WithChunkSize(0))
	c := spillable("c")
	first := c.Register(p)
	sibling := first.NewEmpty()
	other := spillable("other").Register(p)
	defer other.Close()

	up.Reply(fakeupstream.Grant(50))
	up.FailReleases(errors.New("spark: releaseExecutionMemory failed"))
	require.ErrorIs(t, first.TryGrow(100), pool.ErrResourcesExhausted)
	up.FailReleases(nil)
	require.Equal(t, int64(50), p.Stats().Owed)

	err := sibling.TryGrow(51)
	require.ErrorIs(t, err, pool.ErrResourcesExhausted, "the owed bytes were not counted against the share")
	assert.Equal(t, fairShareRefusal(51, c, 50, 100, 2, 0, p), err.Error())
	assert.Equal(t, []int64{100}, up.Asks(), "the refusal came from the fair limit, not from Spark")
	require.NoError(t, sibling.TryGrow(50), "50 + 50 owed is exactly the share")
	sibling.Shrink(50)

	n, err := p.Reclaim(1) // a sweep: the owed bytes go back
	require.NoError(t, err)
	assert.Equal(t, int64(50), n)
	assert.Equal(t, int64(0), p.Stats().Owed)
	require.NoError(t, sibling.TryGrow(100), "the share is whole again once Spark has the bytes back")
	sibling.Close()
	first.Close()
	requireUnifiedInvariants(t, p, up.Held(), 0)
}

// A shrink's release that fails stays against the consumer's share as well,
// as its release in flight already did: a consumer cannot grow again on
// bytes the pool still owes upstream for it.
func TestFairUnifiedOwedBytesOfAShrinkCountAgainstTheConsumersShare(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "fair", up, 200, pool.WithChunkSize(0))
	c := spillable("c")
	r := c.Register(p)
	other := spillable("other").Register(p)
	defer other.Close()

	require.NoError(t, r.TryGrow(80))
	up.FailReleases(errors.New("spark: releaseExecutionMemory failed"))
	r.Shrink(80)
	up.FailReleases(nil)
	require.Equal(t, int64(80), p.Stats().Owed)
	err := r.TryGrow(21)
	require.ErrorIs(t, err, pool.ErrResourcesExhausted)
	assert.Equal(t, fairShareRefusal(21, c, 80, 100, 2, 0, p), err.Error())
	require.NoError(t, r.TryGrow(20))
	r.Close()
	requireUnifiedInvariants(t, p, up.Held(), 0)
}
