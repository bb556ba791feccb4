package pool_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/fakeupstream"
	"github.com/nativepool/nativepool/pool"
)

// The tests in this file port Comet's spark_memory tests (overcommit) to the
// books both unified pools share (unified_books.go), in exact mode (chunk 0)
// where the upstream calls are Comet's one for one, and check the chunk
// policy documented with the books.

func TestSparkMemoryTryAcquireHandsBackAPartialGrant(t *testing.T) {
	up := fakeupstream.New()
	up.SetLimit(60)
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0))
	r := pool.NewConsumer("sort").Register(p)

	err := r.TryGrow(100)

	require.ErrorIs(t, err, pool.ErrResourcesExhausted)
	assert.Equal(t, []int64{100}, up.Asks())
	assert.Equal(t, []int64{60}, up.Rels(), "the partial grant goes straight back")
	assert.Zero(t, up.Held())
	assert.Zero(t, r.Size())
	requireUnifiedInvariants(t, p, up.Held(), 0, r)
}

func TestSparkMemoryReleaseRepaysOvercommitBeforeReturningBytesToSpark(t *testing.T) {
	up := fakeupstream.New()
	up.SetLimit(60)
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0))
	r := pool.NewConsumer("sort").Register(p)

	r.Grow(100) // Spark grants 60: 40 overcommitted
	require.Equal(t, int64(40), p.Stats().Overcommit)
	requireUnifiedInvariants(t, p, up.Held(), 0, r)

	r.Shrink(30) // repays 30 of the 40: nothing goes to Spark
	assert.Empty(t, up.Rels())
	assert.Equal(t, int64(10), p.Stats().Overcommit)

	r.Shrink(30) // repays the last 10, then 20 go back
	assert.Equal(t, []int64{20}, up.Rels())
	assert.Zero(t, p.Stats().Overcommit)
	requireUnifiedInvariants(t, p, up.Held(), 0, r)

	r.Shrink(40)
	assert.Equal(t, []int64{20, 40}, up.Rels())
	assert.Zero(t, up.Held())
	requireUnifiedInvariants(t, p, up.Held(), 0, r)
}

func TestSparkMemoryTryAcquireAsksForTheOvercommitToo(t *testing.T) {
	up := fakeupstream.New()
	up.SetLimit(60)
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0))
	r := pool.NewConsumer("sort").Register(p)
	r.Grow(100) // 40 overcommitted

	up.SetLimit(math.MaxInt64)
	require.NoError(t, r.TryGrow(10))

	assert.Equal(t, []int64{100, 50}, up.Asks(), "10 for the request plus the 40 of debt")
	assert.Zero(t, p.Stats().Overcommit)
	assert.Equal(t, int64(110), up.Held())
	requireUnifiedInvariants(t, p, up.Held(), 0, r)
}

func TestSparkMemoryTryAcquireRefusedWhileTheDebtIsNotGranted(t *testing.T) {
	up := fakeupstream.New()
	up.SetLimit(60)
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0))
	r := pool.NewConsumer("sort").Register(p)
	r.Grow(100) // 40 overcommitted, Spark has nothing left

	up.SetLimit(80) // 20 more available: covers the 10 asked but not the debt
	err := r.TryGrow(10)

	require.ErrorIs(t, err, pool.ErrResourcesExhausted)
	// The 20 granted repay half the debt instead of going back: Spark then
	// knows about 80 of the 100 bytes really reserved. (Comet hands a
	// partial grant back even when it is in debt.)
	assert.Empty(t, up.Rels())
	assert.Equal(t, int64(20), p.Stats().Overcommit)
	assert.Equal(t, int64(100), r.Size())
	requireUnifiedInvariants(t, p, up.Held(), 0, r)
}

// With the debt moved into the in-flight TryGrow, a concurrent release
// cannot repay it; its bytes go back to Spark at once and the full grant
// covers the debt, so Spark ends up holding exactly what is reserved
// (Comet hands the surplus back after the fact instead).
func TestSparkMemoryTryAcquireHandsBackDebtRepaidByAConcurrentRelease(t *testing.T) {
	up := fakeupstream.New()
	up.SetLimit(60)
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0))
	a := pool.NewConsumer("a").Register(p)
	b := pool.NewConsumer("b").Register(p)
	a.Grow(70)
	b.Grow(30) // 60 granted, 40 overcommitted
	require.Equal(t, int64(40), p.Stats().Overcommit)
	up.SetLimit(math.MaxInt64)

	once := false
	up.OnAcquire(func(int64) {
		if !once {
			once = true
			b.Shrink(30) // a release while a's TryGrow is inside Acquire
		}
	})
	require.NoError(t, a.TryGrow(10))

	assert.Equal(t, []int64{70, 30, 50}, up.Asks()[:3])
	assert.Equal(t, []int64{30}, up.Rels())
	assert.Zero(t, p.Stats().Overcommit)
	assert.Equal(t, int64(80), up.Held())
	requireUnifiedInvariants(t, p, up.Held(), 0, a, b)
}

func TestSparkMemoryFailedAcquireIsAllOvercommit(t *testing.T) {
	up := fakeupstream.New()
	javaErr := errors.New("java.lang.RuntimeException: interrupted")
	up.Reply(fakeupstream.Fail(javaErr))
	logs := &uniLogs{}
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0), pool.WithLogger(logs.logger()))
	r := pool.NewConsumer("sort").Register(p)

	r.Grow(100)

	s := p.Stats()
	assert.Equal(t, int64(100), s.Overcommit)
	assert.Zero(t, s.Held)
	assert.Equal(t, int64(1), s.UpstreamErrors)
	assert.Contains(t, logs.String(), "upstream Acquire failed during Grow")
	requireUnifiedInvariants(t, p, up.Held(), 0, r)

	r.Shrink(100) // all debt: nothing reaches Spark
	assert.Empty(t, up.Rels())
	requireUnifiedInvariants(t, p, up.Held(), 0, r)
}

func TestSparkMemoryGrantedIsClampedToTheRequest(t *testing.T) {
	t.Run("a negative reply counts as 0", func(t *testing.T) {
		up := fakeupstream.New()
		up.Reply(fakeupstream.Grant(-5))
		p := unified(t, "greedy", up, 0, pool.WithChunkSize(0))
		r := pool.NewConsumer("sort").Register(p)

		require.ErrorIs(t, r.TryGrow(100), pool.ErrResourcesExhausted)
		assert.Empty(t, up.Rels(), "nothing was granted, nothing goes back")
		assert.Equal(t, int64(1), p.Stats().ShortGrants)
		requireUnifiedInvariants(t, p, up.Held(), 0, r)
	})
	t.Run("a reply above the request is clamped and the excess released at once", func(t *testing.T) {
		up := fakeupstream.New()
		up.Reply(fakeupstream.GrantAsk(50))
		p := unified(t, "greedy", up, 0, pool.WithChunkSize(0))
		r := pool.NewConsumer("sort").Register(p)

		require.NoError(t, r.TryGrow(100))
		assert.Equal(t, []int64{50}, up.Rels())
		assert.Equal(t, int64(100), up.Held())
		s := p.Stats()
		assert.Equal(t, int64(1), s.OverGrants)
		assert.Zero(t, s.ShortGrants)
		requireUnifiedInvariants(t, p, up.Held(), 0, r)
	})
	t.Run("an over-grant during Grow is clamped too", func(t *testing.T) {
		up := fakeupstream.New()
		up.Reply(fakeupstream.GrantAsk(7))
		p := unified(t, "fair", up, 1000, pool.WithChunkSize(64))
		r := pool.NewConsumer("sort").Register(p)

		r.Grow(10) // asks 64 (one chunk), gets 71
		assert.Equal(t, []int64{64}, up.Asks())
		assert.Equal(t, []int64{7}, up.Rels())
		requireUnifiedInvariants(t, p, up.Held(), 64, r)
	})
}

func TestUnifiedUpstreamErrorIsWrappedAndLeavesNothingBorrowed(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New()
			javaErr := errors.New("org.apache.spark.memory.SparkOutOfMemoryError: spill failed")
			up.Reply(fakeupstream.Fail(javaErr))
			p := unified(t, kind, up, 1<<30, pool.WithChunkSize(1024))
			r := pool.NewConsumer("sort").Register(p)

			err := r.TryGrow(100)

			require.ErrorIs(t, err, javaErr)
			assert.NotErrorIs(t, err, pool.ErrResourcesExhausted)
			assert.Equal(t, "pool: "+kind+"_unified: acquiring 1024 bytes upstream for "+r.Consumer().String()+
				": org.apache.spark.memory.SparkOutOfMemoryError: spill failed", err.Error())
			assert.Zero(t, r.Size())
			assert.Zero(t, up.Held())
			assert.Equal(t, int64(1), p.Stats().UpstreamErrors)
			requireUnifiedInvariants(t, p, up.Held(), 1024, r)
		})
	}
}

// An upstream Acquire that reports an error is believed even if it also
// reports bytes: re-releasing them could over-return.
func TestUnifiedUpstreamErrorWithBytesIsTreatedAsAZeroGrant(t *testing.T) {
	up := fakeupstream.New()
	up.Reply(func(int64) (int64, error) { return 100, errors.New("boom") })
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0))
	r := pool.NewConsumer("sort").Register(p)

	require.Error(t, r.TryGrow(100))
	assert.Zero(t, p.Stats().Held)
	assert.Empty(t, up.Rels())
}

// A failed Release released nothing (the Upstream contract; the JVM side
// rejects a bad release before telling Spark), so the pool keeps the bytes
// held: its view and upstream's stay equal. They stay charged as owed, not
// slack: the next grow asks upstream instead of spending bytes the JVM may
// be about to take back, and the next sweep (here: the last consumer
// leaving) hands them back.
func TestUnifiedFailedReleaseLeavesTheBytesChargedNotSpendable(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0))
	r := pool.NewConsumer("sort").Register(p)
	r.Grow(100)

	up.FailReleases(errors.New("java.lang.IllegalStateException"))
	r.Shrink(100)
	up.FailReleases(nil)

	s := p.Stats()
	assert.Equal(t, int64(100), s.Held, "upstream still holds the bytes, so the pool does too")
	assert.Equal(t, up.Held(), s.Held)
	assert.Equal(t, int64(100), s.Owed)
	assert.Zero(t, s.Slack, "owed bytes are never slack")
	assert.Equal(t, int64(1), s.UpstreamErrors)
	requireUnifiedInvariants(t, p, up.Held(), 0, r)

	require.NoError(t, r.TryGrow(60))
	assert.Equal(t, []int64{100, 60}, up.Asks(), "the grow borrows; it does not spend owed bytes")
	r.Close()
	assert.Equal(t, []int64{60, 100}, up.Rels(), "the shrink returns its 60 bytes; the last consumer leaving, the owed 100")
	assert.Zero(t, up.Held())
	require.NoError(t, p.Close())
	assert.Equal(t, []int64{60, 100}, up.Rels(), "nothing is handed back twice")
}

func TestUnifiedChunkedBorrowsWholeChunksAndKeepsSlackWithinTwoChunks(t *testing.T) {
	const chunk = 1 << 20
	up := fakeupstream.New()
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(chunk))
	r := pool.NewConsumer("sort").Register(p)

	require.NoError(t, r.TryGrow(10))
	assert.Equal(t, []int64{chunk}, up.Asks())
	assert.Equal(t, int64(chunk-10), p.Stats().Slack)

	require.NoError(t, r.TryGrow(chunk-10)) // exactly the slack: no call
	assert.Len(t, up.Asks(), 1)
	assert.Zero(t, p.Stats().Slack)

	r.Grow(3*chunk + 1) // needs 3 chunks + 1 byte: asks 4 chunks
	assert.Equal(t, []int64{chunk, 4 * chunk}, up.Asks())
	assert.Equal(t, int64(chunk-1), p.Stats().Slack)
	requireUnifiedInvariants(t, p, up.Held(), chunk, r)

	r.Shrink(chunk) // slack 2 chunks - 1: stays local
	assert.Empty(t, up.Rels())
	r.Shrink(2) // slack 2 chunks + 1 > 2 chunks: release down to 1 chunk
	assert.Equal(t, []int64{chunk + 1}, up.Rels())
	assert.Equal(t, int64(chunk), p.Stats().Slack)
	requireUnifiedInvariants(t, p, up.Held(), chunk, r)

	r.Close()
	require.NoError(t, p.Close())
	assert.Zero(t, up.Held())
}

func TestUnifiedChunkedGrowShrinkPairsAtAChunkBoundaryDoNotThrash(t *testing.T) {
	const chunk = 1 << 20
	up := fakeupstream.New()
	p := unified(t, "fair", up, 1<<40, pool.WithChunkSize(chunk))
	r := pool.NewConsumer("sort").Register(p)
	r.Grow(chunk) // exactly one chunk, no slack
	for range 1000 {
		require.NoError(t, r.TryGrow(1))
		r.Shrink(1)
	}
	acq, rel := up.Calls()
	assert.Equal(t, int64(2), acq)
	assert.Zero(t, rel)
	requireUnifiedInvariants(t, p, up.Held(), chunk, r)
}

func TestUnifiedChunkedTryGrowSucceedsOnAGrantShortOfTheChunkButCoveringTheNeed(t *testing.T) {
	const chunk = 1024
	up := fakeupstream.New()
	up.SetLimit(100)
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(chunk))
	r := pool.NewConsumer("sort").Register(p)

	require.NoError(t, r.TryGrow(100))
	assert.Equal(t, []int64{chunk}, up.Asks())
	assert.Equal(t, int64(1), p.Stats().ShortGrants)
	requireUnifiedInvariants(t, p, up.Held(), chunk, r)
}

// Regression (found by the arbiter test): while a TryGrow is inside Acquire
// asking for its bytes plus the debt, another consumer frees more than the
// pool holds upstream. Those bytes must repay the debt, not count as slack;
// the fake panics if upstream is handed back more than it granted.
func TestUnifiedTryGrowInFlightWhileItsDebtIsRepaidNeverOverReturns(t *testing.T) {
	for _, chunk := range []int64{0, 16} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) {
			up := fakeupstream.New()
			up.SetLimit(64)
			p := unified(t, "greedy", up, 0, pool.WithChunkSize(chunk))
			a := pool.NewConsumer("a").Register(p)
			b := pool.NewConsumer("b").Register(p)
			b.Grow(100) // 64 granted, 36 overcommitted
			up.SetLimit(math.MaxInt64)
			once := false
			up.OnAcquire(func(int64) {
				if !once {
					once = true
					b.Shrink(100)
				}
			})

			require.NoError(t, a.TryGrow(10)) // asks 10 + 36

			requireUnifiedInvariants(t, p, up.Held(), chunk, a, b)
			assert.Zero(t, p.Stats().Overcommit)
			b.Close()
			a.Close()
			require.NoError(t, p.Close())
			assert.Zero(t, up.Held())
		})
	}
}
