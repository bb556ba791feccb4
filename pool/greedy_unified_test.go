package pool_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/nativepool/nativepool/internal/fakeupstream"
	"github.com/nativepool/nativepool/pool"
)

func TestUnifiedGrowAndShrinkTrackSparkGrants(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0))
	r := pool.NewConsumer("sort").Register(p)

	r.Grow(100)
	require.NoError(t, r.TryGrow(50))
	assert.Equal(t, int64(150), up.Held())
	assert.Equal(t, int64(150), p.Reserved())
	r.Shrink(120)
	assert.Equal(t, int64(30), up.Held())
	assert.Equal(t, int64(30), p.Reserved())
	requireUnifiedInvariants(t, p, up.Held(), 0, r)
}

func TestUnifiedShortGrantIsReturnedToSparkAndReportedAsAnError(t *testing.T) {
	up := fakeupstream.New()
	up.SetLimit(40)
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0), pool.WithName("task 7"))
	c := pool.NewConsumer("sort")
	r := c.Register(p)

	err := r.TryGrow(100)

	var ex *pool.ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, fmt.Sprintf("Resources exhausted: Failed to acquire 100 bytes for sort#%d plus 0 bytes overcommitted, "+
		"only got 40 bytes from upstream: greedy_unified[task 7](used: 0.0 B, held: 0.0 B, overcommit: 0.0 B)", c.ID()), err.Error())
	assert.Equal(t, []int64{40}, up.Rels())
	assert.Zero(t, up.Held())
	assert.Equal(t, int64(1), p.Stats().ShortGrants)
	requireUnifiedInvariants(t, p, up.Held(), 0, r)
}

// Comet #5384: in exact mode the pool is a pass-through, one backend call
// per grow and per shrink.
func TestUnifiedExactModeEveryGrowAndShrinkReachesUpstream(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New()
			p := unified(t, kind, up, 1<<30, pool.WithChunkSize(0))
			r := pool.NewConsumer("sort").Register(p)
			for i := range 10 {
				if i%2 == 0 {
					r.Grow(8 << 10)
				} else {
					require.NoError(t, r.TryGrow(8<<10))
				}
			}
			for range 10 {
				r.Shrink(8 << 10)
			}
			acq, rel := up.Calls()
			assert.Equal(t, int64(10), acq)
			assert.Equal(t, int64(10), rel)
			s := p.Stats()
			assert.Equal(t, int64(10), s.AcquireCalls)
			assert.Equal(t, int64(10), s.ReleaseCalls)
			requireUnifiedInvariants(t, p, up.Held(), 0, r)
		})
	}
}

func TestUnifiedZeroByteCallsNeverReachUpstream(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New() // panics on a zero-byte call
			p := unified(t, kind, up, 100, pool.WithChunkSize(0))
			r := pool.NewConsumer("sort").Register(p)
			r.Grow(0)
			require.NoError(t, r.TryGrow(0))
			r.Shrink(0)
			_, err := r.TryShrink(0)
			require.NoError(t, err)
			r.Free()
			r.Close()
			acq, rel := up.Calls()
			assert.Zero(t, acq+rel)
		})
	}
}

func TestUnifiedGrowPastUpstreamIsRecordedAndRefusesTryGrowUntilRepaid(t *testing.T) {
	up := fakeupstream.New()
	up.SetLimit(100)
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0))
	a := pool.NewConsumer("a").Register(p)
	b := pool.NewConsumer("b").Register(p)

	a.Grow(150) // never panics (Comet #6127): 50 overcommitted
	assert.Equal(t, int64(150), a.Size())
	assert.Equal(t, int64(50), p.Stats().Overcommit)

	up.SetLimit(130) // 30 more: not enough for 10 + the 50 of debt
	require.ErrorIs(t, b.TryGrow(10), pool.ErrResourcesExhausted)
	assert.Zero(t, b.Size())
	requireUnifiedInvariants(t, p, up.Held(), 0, a, b)

	// The 30 granted to the refused TryGrow repaid 30 of the debt; a
	// shrink of 40 repays the other 20 and hands 20 back.
	require.Equal(t, int64(20), p.Stats().Overcommit)
	a.Shrink(40)
	assert.Equal(t, []int64{20}, up.Rels())
	assert.Zero(t, p.Stats().Overcommit)
	require.NoError(t, b.TryGrow(10))
	requireUnifiedInvariants(t, p, up.Held(), 0, a, b)

	a.Close()
	b.Close()
	require.NoError(t, p.Close())
	assert.Zero(t, up.Held(), "Spark got back exactly what it granted")
}

func TestUnifiedStatsAreEmptyBeforeAnyCall(t *testing.T) {
	p := unified(t, "greedy", fakeupstream.New(), 0)
	assert.Equal(t, pool.UnifiedStats{}, p.Stats())
}

func TestUnifiedStatsCountAcquiresAndReleases(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0))
	r := pool.NewConsumer("sort").Register(p)
	r.Grow(10)
	r.Grow(20)
	r.Shrink(5)
	s := p.Stats()
	assert.Equal(t, int64(2), s.AcquireCalls)
	assert.Equal(t, int64(1), s.ReleaseCalls)
	assert.Equal(t, int64(25), s.Reserved)
	assert.Equal(t, int64(25), s.Held)
	assert.Equal(t, int64(30), s.Peak)
}

func TestUnifiedStatsCountShortGrants(t *testing.T) {
	up := fakeupstream.New()
	up.SetLimit(15)
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0))
	r := pool.NewConsumer("sort").Register(p)
	r.Grow(10)
	r.Grow(10)                      // short: 5 of 10
	require.Error(t, r.TryGrow(10)) // short: 0 of 15
	s := p.Stats()
	assert.Equal(t, int64(2), s.ShortGrants)
	assert.Equal(t, int64(5), s.Overcommit)
}

func TestUnifiedNameLimitAndString(t *testing.T) {
	up := fakeupstream.New()
	g := unified(t, "greedy", up, 0, pool.WithChunkSize(1024))
	assert.Equal(t, "greedy_unified", g.Name())
	assert.Equal(t, pool.Limit{Kind: pool.Unknown}, g.Limit())
	r := pool.NewConsumer("sort").Register(g)
	r.Grow(3000)
	assert.Equal(t, "greedy_unified(used: 2.9 KB, held: 3.0 KB, overcommit: 0.0 B)", g.String())

	up.SetLimit(up.Held())
	r.Grow(5000)
	assert.Equal(t, "greedy_unified(used: 7.8 KB, held: 3.0 KB, overcommit: 4.8 KB)", g.String())

	named := unified(t, "greedy", fakeupstream.New(), 0, pool.WithName("task 42"))
	assert.Equal(t, "greedy_unified[task 42](used: 0.0 B, held: 0.0 B, overcommit: 0.0 B)", named.String())
}

func TestUnifiedCloseReturnsEverythingAndNamesTheLeakingConsumers(t *testing.T) {
	up := fakeupstream.New()
	logs := &uniLogs{}
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(1024), pool.WithName("task 42"), pool.WithLogger(logs.logger()))
	sort := pool.NewConsumer("sort")
	agg := pool.NewConsumer("agg")
	rs := sort.Register(p)
	ra := agg.Register(p)
	rs.Grow(1000)
	rs.NewEmpty().Grow(24) // sort holds 1024 across two reservations
	ra.Grow(512)
	clean := pool.NewConsumer("clean").Register(p)
	clean.Grow(10)
	clean.Close()

	err := p.Close()

	require.ErrorIs(t, err, pool.ErrLeaked)
	var leak *pool.LeakError
	require.ErrorAs(t, err, &leak)
	assert.Equal(t, "task 42", leak.Pool[len("greedy_unified["):len(leak.Pool)-1])
	assert.Equal(t, int64(1536), leak.Bytes)
	assert.Equal(t, []pool.LeakedConsumer{
		{Name: "sort", ID: sort.ID(), Bytes: 1024},
		{Name: "agg", ID: agg.ID(), Bytes: 512},
	}, leak.Consumers)
	want := fmt.Sprintf("pool greedy_unified[task 42] closed with 1536 bytes still reserved: sort#%d holds 1024 bytes, agg#%d holds 512 bytes",
		sort.ID(), agg.ID())
	assert.Equal(t, want, err.Error())
	assert.Contains(t, logs.String(), "closed with bytes still reserved")
	assert.Zero(t, up.Held(), "everything held went back")
	s := p.Stats()
	assert.Zero(t, s.Reserved+s.Held+s.Slack+s.Overcommit)
	assert.Zero(t, p.Reserved())

	require.NoError(t, p.Close(), "a second Close is a no-op")
}

func TestLeakErrorWithoutConsumersNamesOnlyThePool(t *testing.T) {
	assert.Equal(t, "pool fair_unified closed with 0 bytes still reserved", (&pool.LeakError{Pool: "fair_unified"}).Error())
}

// docs/SEMANTICS.md, difference 6, Comet #2453: a straggler's release after
// Close is counted and logged, never forwarded.
func TestUnifiedReleaseAfterCloseIsCountedAndNeverForwarded(t *testing.T) {
	up := fakeupstream.New()
	logs := &uniLogs{}
	p := unified(t, "fair", up, 1<<20, pool.WithChunkSize(0), pool.WithLogger(logs.logger()))
	r := pool.NewConsumer("straggler").Register(p)
	r.Grow(300)
	require.ErrorIs(t, p.Close(), pool.ErrLeaked)
	rels := up.Rels()
	require.Equal(t, []int64{300}, rels)

	r.Shrink(100)
	r.Close() // frees the other 200

	assert.Equal(t, rels, up.Rels(), "nothing forwarded after Close")
	s := p.Stats()
	assert.Equal(t, int64(2), s.LateReleases)
	assert.Equal(t, int64(300), s.LateReleaseBytes)
	assert.Contains(t, logs.String(), "release after Close; not forwarded upstream")
	assert.Zero(t, up.Held())
}

func TestUnifiedTryGrowAfterCloseWrapsErrClosed(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "greedy", up, 0)
	c := pool.NewConsumer("late")
	r := c.Register(p)
	require.NoError(t, p.Close())

	err := r.TryGrow(10)

	require.ErrorIs(t, err, pool.ErrClosed)
	assert.NotErrorIs(t, err, pool.ErrResourcesExhausted)
	assert.Equal(t, fmt.Sprintf("pool: greedy_unified: TryGrow(10) for late#%d after Close: closed", c.ID()), err.Error())
	acq, _ := up.Calls()
	assert.Zero(t, acq)
}

// Grow is infallible, so after Close it cannot refuse: it borrows nothing,
// records nothing in the pool, logs and counts. The reservation's own size
// still grows (the Reservation contract), and its later shrink is a late
// release.
func TestUnifiedGrowAfterCloseRecordsNothingUpstream(t *testing.T) {
	up := fakeupstream.New()
	logs := &uniLogs{}
	p := unified(t, "greedy", up, 0, pool.WithLogger(logs.logger()))
	r := pool.NewConsumer("late").Register(p)
	require.NoError(t, p.Close())

	r.Grow(10)

	acq, _ := up.Calls()
	assert.Zero(t, acq)
	assert.Zero(t, p.Reserved())
	assert.Equal(t, int64(1), p.Stats().LateGrows)
	assert.Contains(t, logs.String(), "Grow after Close")
	r.Close()
	assert.Equal(t, int64(1), p.Stats().LateReleases)
}

func TestUnifiedPeakAndThresholdsFollowReserved(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(64))
	var got []pool.Crossing
	stop := p.OnThreshold(pool.Threshold{Level: 100, Hysteresis: 20}, func(c pool.Crossing) { got = append(got, c) })
	defer stop()
	r := pool.NewConsumer("sort").Register(p)
	r.Grow(60)
	require.NoError(t, r.TryGrow(50))
	r.Shrink(30) // 80: within hysteresis
	r.Shrink(5)  // 75 < 80: down
	up.SetLimit(up.Held())
	require.Error(t, r.TryGrow(1000), "a refused TryGrow moves neither peak nor thresholds")
	assert.Equal(t, []pool.Crossing{
		{Pool: "greedy_unified", Level: 100, Reserved: 110, Up: true},
		{Pool: "greedy_unified", Level: 100, Reserved: 75, Up: false},
	}, got)
	assert.Equal(t, int64(110), p.Peak())
	assert.Equal(t, int64(110), p.Stats().Peak)
}

// A spiller that frees every byte of its consumer's reservations.
type freeingSpiller struct {
	rs    []*pool.Reservation
	calls atomic.Int64
	asked atomic.Int64
}

func (s *freeingSpiller) Spill(target int64) (int64, error) {
	s.calls.Add(1)
	s.asked.Store(target)
	var freed int64
	for _, r := range s.rs {
		freed += r.Free()
	}
	return freed, nil
}

func TestUnifiedReclaimReturnsSlackFirst(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(1024))
	sp := &freeingSpiller{}
	c := pool.NewConsumer("sort").WithSpiller(sp)
	r := c.Register(p)
	sp.rs = []*pool.Reservation{r}
	r.Grow(100) // 924 slack

	freed, err := p.Reclaim(500)

	require.NoError(t, err)
	assert.Equal(t, int64(924), freed, "all slack goes, not just the target")
	assert.Zero(t, sp.calls.Load(), "slack was enough: nobody spilled")
	assert.Equal(t, int64(100), r.Size())
	s := p.Stats()
	assert.Equal(t, int64(1), s.ReclaimRequests)
	assert.Equal(t, int64(924), s.ReclaimedBytes)
	requireUnifiedInvariants(t, p, up.Held(), 1024, r)
}

func TestUnifiedReclaimSpillsTheLargestConsumerFirstAcrossItsReservations(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "fair", up, 1<<20, pool.WithChunkSize(0))
	var order []string
	mk := func(name string, sizes ...int64) *pool.Reservation {
		var rs []*pool.Reservation
		sp := pool.SpillerFunc(func(int64) (int64, error) {
			order = append(order, name)
			var f int64
			for _, r := range rs {
				f += r.Free()
			}
			return f, nil
		})
		r := pool.NewConsumer(name).WithSpiller(sp).Register(p)
		rs = append(rs, r)
		for i, n := range sizes {
			if i > 0 {
				r = r.NewEmpty()
				rs = append(rs, r)
			}
			r.Grow(n)
		}
		return rs[0]
	}
	mk("small", 300)
	mk("split", 200, 200) // 400 across two reservations: the largest
	mk("mid", 350)
	unspillable := pool.NewConsumer("join").Register(p)
	unspillable.Grow(1000)
	noSpiller := pool.NewConsumer("canspill-but-no-spiller").WithCanSpill(true).Register(p)
	noSpiller.Grow(5000)

	freed, err := p.Reclaim(600)

	require.NoError(t, err)
	assert.Equal(t, []string{"split", "mid"}, order)
	assert.Equal(t, int64(750), freed)
	assert.Equal(t, []int64{300, 200, 200, 350, 1000, 5000}, up.Asks())
	assert.Equal(t, []int64{400, 350}, up.Rels(), "each spill's bytes go upstream in one call")
}

func TestUnifiedReclaimSkipsAndCountsSpillersThatFailOrFreeNothing(t *testing.T) {
	up := fakeupstream.New()
	logs := &uniLogs{}
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0), pool.WithLogger(logs.logger()))
	broken := pool.NewConsumer("broken").WithSpiller(pool.SpillerFunc(func(int64) (int64, error) {
		return 0, errors.New("disk full")
	})).Register(p)
	broken.Grow(500)
	lazy := pool.NewConsumer("lazy").WithSpiller(pool.SpillerFunc(func(int64) (int64, error) { return 0, nil })).Register(p)
	lazy.Grow(400)
	good := &freeingSpiller{}
	g := pool.NewConsumer("good").WithSpiller(good).Register(p)
	good.rs = []*pool.Reservation{g}
	g.Grow(100)

	freed, err := p.Reclaim(100)

	require.NoError(t, err, "a failing spiller is skipped, not fatal")
	assert.Equal(t, int64(100), freed)
	assert.Equal(t, int64(2), p.Stats().SpillerFailures)
	assert.Contains(t, logs.String(), "disk full")
	assert.Equal(t, int64(100), good.asked.Load())
}

// Spark's spill contract: return exactly the bytes released to Spark during
// the call. Bytes a spiller frees that only repay overcommit never reached
// Spark, so they are not counted.
func TestUnifiedReclaimReturnsExactlyTheBytesReleasedUpstream(t *testing.T) {
	up := fakeupstream.New()
	up.SetLimit(300)
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0))
	sp := &freeingSpiller{}
	r := pool.NewConsumer("sort").WithSpiller(sp).Register(p)
	sp.rs = []*pool.Reservation{r}
	r.Grow(500) // 300 granted, 200 overcommitted

	freed, err := p.Reclaim(1000)

	require.NoError(t, err)
	assert.Equal(t, int64(300), freed)
	assert.Equal(t, []int64{300}, up.Rels())
	assert.Zero(t, up.Held())
	requireUnifiedInvariants(t, p, up.Held(), 0, r)
}

func TestUnifiedReclaimOnAClosedPoolFreesNothing(t *testing.T) {
	p := unified(t, "greedy", fakeupstream.New(), 0)
	require.NoError(t, p.Close())
	freed, err := p.Reclaim(100)
	require.NoError(t, err)
	assert.Zero(t, freed)
	_, err = p.Reclaim(-1)
	require.ErrorIs(t, err, pool.ErrInvalidSize)
}

// Spark runs spill() on the thread that called acquireExecutionMemory: the
// fake calls Reclaim from inside Acquire, and the requesting consumer is
// itself spilled. Returning (within the timeout) means no lock was held
// across the upstream call.
func TestUnifiedReclaimReentrantFromInsideAcquireDoesNotDeadlock(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New()
			up.SetLimit(4096)
			p := unified(t, kind, up, 1<<20, pool.WithChunkSize(1024))
			sp := &freeingSpiller{}
			other := pool.NewConsumer("other").WithSpiller(sp).Register(p)
			sp.rs = []*pool.Reservation{other}
			other.Grow(3000)
			req := pool.NewConsumer("requester").Register(p)
			var reclaimed int64
			up.OnAcquire(func(ask int64) {
				if reclaimed == 0 {
					var err error
					reclaimed, err = p.Reclaim(ask)
					if err != nil {
						panic(err)
					}
				}
			})
			var err error
			within(t, 5*time.Second, "TryGrow with a re-entrant Reclaim", func() { err = req.TryGrow(2000) })
			require.NoError(t, err)
			// The 72 bytes of slack already count towards the pending
			// request, so only the spilled 3000 go back.
			assert.Equal(t, int64(3000), reclaimed)
			assert.Equal(t, int64(1), sp.calls.Load())
			requireUnifiedInvariants(t, p, up.Held(), 1024, other, req)
		})
	}
}

// Reclaim from another goroutine while consumers grow, shrink and are
// spilled: every call returns (no deadlock, checked with a timeout) and the
// books add up afterwards.
func TestUnifiedReclaimConcurrentWithGrowsAndShrinks(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New()
			up.SetLimit(1 << 20)
			p := unified(t, kind, up, 1<<20, pool.WithChunkSize(4096))
			rs := make([]*pool.Reservation, 4)
			for i := range rs {
				var mine *pool.Reservation
				// The spiller frees its consumer's reservation while the
				// owner goroutine keeps growing and shrinking it.
				sp := pool.SpillerFunc(func(int64) (int64, error) { return mine.Free(), nil })
				mine = pool.NewConsumer(fmt.Sprintf("op%d", i)).WithSpiller(sp).Register(p)
				rs[i] = mine
			}
			var reclaimed atomic.Int64
			within(t, 20*time.Second, "grows and shrinks racing Reclaim", func() {
				var workers, reclaimer errgroup.Group
				var stop atomic.Bool
				reclaimer.Go(func() error {
					for !stop.Load() {
						n, err := p.Reclaim(50_000)
						if err != nil {
							return err
						}
						reclaimed.Add(n)
					}
					return nil
				})
				for i, r := range rs {
					workers.Go(func() error {
						rng := rand.New(rand.NewPCG(uint64(i), 1))
						for range 2000 {
							n := rng.Int64N(10_000)
							if rng.IntN(2) == 0 {
								_ = r.TryGrow(n)
							} else if s := r.Size(); s > 0 {
								_, _ = r.TryShrink(min(n, s))
							}
						}
						return nil
					})
				}
				_ = workers.Wait()
				stop.Store(true)
				if err := reclaimer.Wait(); err != nil {
					panic(err)
				}
			})
			requireUnifiedInvariants(t, p, up.Held(), 4096, rs...)
			s := p.Stats()
			assert.Positive(t, s.ReclaimRequests)
			assert.Equal(t, reclaimed.Load(), s.ReclaimedBytes)
			for _, r := range rs {
				r.Close()
			}
			require.NoError(t, p.Close())
			assert.Zero(t, up.Held())
		})
	}
}

// Comet's concurrent_consumers_hand_spark_back_exactly_what_it_granted: 8
// goroutines × 10k random grow / try_grow / shrink / upstream-limit changes.
// The fake panics on any over-return; at the end reserved, overcommit and
// upstream-held are all 0.
func TestUnifiedConcurrentConsumersHandUpstreamBackExactlyWhatItGranted(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		chunk int64
	}{{"greedy", 0}, {"greedy", 64 << 10}, {"fair", 0}, {"fair", 64 << 10}} {
		t.Run(fmt.Sprintf("%s/chunk=%d", tc.kind, tc.chunk), func(t *testing.T) {
			up := fakeupstream.New()
			up.SetLimit(4 << 20)
			p := unified(t, tc.kind, up, 8<<20, pool.WithChunkSize(tc.chunk))
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			within(t, 30*time.Second, "8 goroutines × 10k ops", func() {
				var g errgroup.Group
				for w := range 8 {
					g.Go(func() error {
						rng := rand.New(rand.NewPCG(seed, uint64(w)))
						r := pool.NewConsumer(fmt.Sprintf("w%d", w)).WithCanSpill(w%2 == 0).Register(p)
						defer r.Close()
						for range 10_000 {
							n := rng.Int64N(100 << 10)
							switch rng.IntN(10) {
							case 0, 1, 2:
								r.Grow(n)
							case 3, 4, 5:
								_ = r.TryGrow(n)
							case 6, 7, 8:
								if s := r.Size(); s > 0 {
									r.Shrink(rng.Int64N(s) + 1)
								}
							case 9:
								up.SetLimit(rng.Int64N(8 << 20))
							}
						}
						return nil
					})
				}
				_ = g.Wait()
			})
			s := p.Stats()
			assert.Zero(t, s.Reserved)
			assert.Zero(t, s.Overcommit)
			assert.Equal(t, up.Held(), s.Held)
			assert.LessOrEqual(t, s.Slack, 2*tc.chunk)
			require.NoError(t, p.Close())
			assert.Zero(t, up.Held())
			assert.Equal(t, pool.UnifiedStats{}, zeroedBooks(p.Stats()))
		})
	}
}

// zeroedBooks keeps only the figures of the books in s (not counters or peak).
func zeroedBooks(s pool.UnifiedStats) pool.UnifiedStats {
	return pool.UnifiedStats{Reserved: s.Reserved, Held: s.Held, Slack: s.Slack, Overcommit: s.Overcommit}
}

// Close while a grow waits inside upstream Acquire (a task ending while an
// operator thread still asks Spark for memory): the late grant goes
// straight back, and Spark ends holding nothing.
func TestUnifiedCloseDuringAnUpstreamCallHandsTheLateGrantBack(t *testing.T) {
	for _, op := range []string{"Grow", "TryGrow"} {
		t.Run(op, func(t *testing.T) {
			up := fakeupstream.New()
			p := unified(t, "greedy", up, 0, pool.WithChunkSize(1024))
			r := pool.NewConsumer("sort").Register(p)
			r.Grow(100)
			var closeErr error
			up.OnAcquire(func(int64) { closeErr = p.Close() })

			if op == "Grow" {
				r.Grow(5000)
				assert.Equal(t, int64(1), p.Stats().LateGrows)
			} else {
				require.ErrorIs(t, r.TryGrow(5000), pool.ErrClosed)
			}

			require.ErrorIs(t, closeErr, pool.ErrLeaked)
			assert.Zero(t, up.Held(), "the grant that arrived after Close went back")
			s := p.Stats()
			assert.Zero(t, s.Held+s.Reserved+s.Overcommit+s.Slack)
		})
	}
}

// A Spiller that panics propagates its panic (no lock is held, so the pool
// stays usable) and does not leave the pool in "reclaiming" mode, where
// shrinks would keep their slack local for ever.
func TestUnifiedPanickingSpillerLeavesThePoolUsable(t *testing.T) {
	const chunk = 1024
	up := fakeupstream.New()
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(chunk))
	boom := pool.NewConsumer("boom").WithSpiller(pool.SpillerFunc(func(int64) (int64, error) { panic("spiller bug") })).Register(p)
	boom.Grow(chunk)
	assert.PanicsWithValue(t, "spiller bug", func() { _, _ = p.Reclaim(10) })

	r := pool.NewConsumer("sort").Register(p)
	r.Grow(10 * chunk)
	r.Shrink(10 * chunk)
	assert.Equal(t, int64(chunk), p.Stats().Slack, "shrinks trim again")
	requireUnifiedInvariants(t, p, up.Held(), chunk, boom, r)
}

// Comet's mod tests: overcommit is readable through every decorator, and a
// pool that borrows nothing has none to report.
func TestUnifiedOvercommitIsReadThroughTheWrappersOfEachPoolType(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New()
			up.SetLimit(60)
			inner := unified(t, kind, up, 1000, pool.WithChunkSize(0))
			wrapped := pool.NewLogging(pool.NewTrackConsumers(inner, 5), quietLogger())
			r := pool.NewConsumer("sort").Register(wrapped)
			r.Grow(100)

			u, ok := pool.As[pool.Unified](wrapped)
			require.True(t, ok)
			assert.Equal(t, int64(40), u.Stats().Overcommit)
			assert.Equal(t, int64(100), wrapped.Reserved())
		})
	}
}

func TestUnifiedAPoolThatTakesNothingFromSparkHasNoOvercommit(t *testing.T) {
	_, ok := pool.As[pool.Unified](pool.NewTrackConsumers(pool.NewGreedy(100), 5))
	assert.False(t, ok)
}

// Comet's a_final_aggregate_is_tracked_across_its_reservations_until_it_unregisters:
// the pool counts a consumer's bytes across all its reservations and drops
// the consumer only when its last reservation closes.
func TestUnifiedAConsumerIsTrackedAcrossItsReservationsUntilItUnregisters(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "fair", up, 1000, pool.WithChunkSize(0))
	c := spillable("FinalHashAggregateStream[0]")
	r1 := c.Register(p)
	r2 := r1.NewEmpty()
	spillable("other").Register(p) // the share is 500
	r1.Grow(300)
	r2.Grow(200)
	assert.Contains(t, p.String(), "consumers: 2")
	require.ErrorIs(t, r2.TryGrow(1), pool.ErrResourcesExhausted, "300 + 200 across both reservations")
	r1.Close()
	assert.Contains(t, p.String(), "consumers: 2", "still registered through r2")
	require.ErrorIs(t, r2.TryGrow(301), pool.ErrResourcesExhausted, "r2's 200 still count")
	require.NoError(t, r2.TryGrow(300))
	r2.Close()
	assert.Contains(t, p.String(), "consumers: 1")
	require.NoError(t, p.Close(), "nothing leaked")
	assert.Zero(t, up.Held())
}
