package pool_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/fakeupstream"
	"github.com/nativepool/nativepool/pool"
)

// holdingLender holds bytes back from upstream and lends them: the pod
// guard holding Spark's free off-heap memory, as a pool's Admission sees it.
type holdingLender struct {
	mu                  sync.Mutex
	held, lent          int64
	lends, repaid, asks int64
}

func (l *holdingLender) Admit(int64) error    { return nil }
func (l *holdingLender) AdmitNow(int64) error { return nil }

func (l *holdingLender) Lend(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asks++
	k := min(n, l.held-l.lent)
	l.lent += k
	l.lends += k
	return k
}

func (l *holdingLender) Repay(n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lent -= n
	l.repaid += n
}

func (l *holdingLender) outstanding() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lent
}

// Where Spark grants a pool's borrow short while the guard holds Spark's
// memory back, a loan of what the guard holds makes up the rest, as
// overcommit Spark never hears of: native memory grows where admission
// lets it, whatever Spark's per-task limits do meanwhile. TryGrow and Grow
// are lent to; growth a consumer can do without (WithoutWaiting) is not.
// Loans go back as the overcommit is repaid, plain debt first, and at
// Close. Invariant checked after each step: loaned ≤ overcommit, and the
// lender's outstanding loans equal the pool's.
func TestABorrowSparkGrantedShortIsMadeUpByALoanOfWhatTheLenderHolds(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New()
			up.SetLimit(0) // Spark has nothing free: the guard holds it
			l := &holdingLender{held: 64 << 20}
			p := unified(t, kind, up, 64<<20, pool.WithChunkSize(0), pool.WithAdmission(l))
			r := pool.NewConsumer("sort").WithCanSpill(true).Register(p)
			books := func() {
				t.Helper()
				s := p.Stats()
				assert.LessOrEqual(t, s.Loaned, s.Overcommit)
				assert.Equal(t, l.outstanding(), s.Loaned)
				requireUnifiedInvariants(t, p, up.Held(), 0, r)
			}

			require.NoError(t, r.TryGrow(4<<20), "a loan made up what Spark lacked")
			assert.Zero(t, up.Held(), "Spark never heard of the loan")
			assert.Equal(t, int64(4<<20), p.Stats().Overcommit)
			assert.Equal(t, int64(4<<20), p.Stats().Loaned)
			books()

			err := r.WithoutWaiting(func() error { return r.TryGrow(1 << 20) })
			require.ErrorIs(t, err, pool.ErrResourcesExhausted, "optional growth is never lent to")
			assert.Equal(t, int64(4<<20), l.outstanding())

			r.Grow(2 << 20)
			assert.Equal(t, int64(6<<20), p.Stats().Loaned, "Grow's overcommit is backed by a loan")
			books()

			r.Shrink(3 << 20)
			assert.Equal(t, int64(3<<20), p.Stats().Loaned, "repaid overcommit goes back to the lender")
			books()

			l.mu.Lock()
			l.held = l.lent // nothing left to lend
			l.mu.Unlock()
			require.ErrorIs(t, r.TryGrow(1<<20), pool.ErrResourcesExhausted, "nothing left to lend: refused")
			books()
			assert.Equal(t, int64(2), p.Stats().Loans)

			r.Close()
			assert.Zero(t, l.outstanding(), "an idle pool repays everything")
			require.NoError(t, p.Close())
			assert.Zero(t, up.Held())
		})
	}
}

// A partial loan is no loan: the borrow is refused as before and the
// lender gets back what it set aside.
func TestAPartialLoanIsGivenBackAndTheBorrowRefused(t *testing.T) {
	up := fakeupstream.New()
	up.SetLimit(1 << 20)
	l := &holdingLender{held: 1 << 20}
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(0), pool.WithAdmission(l))
	r := pool.NewConsumer("sort").Register(p)
	require.ErrorIs(t, r.TryGrow(4<<20), pool.ErrResourcesExhausted)
	assert.Zero(t, l.outstanding())
	assert.Zero(t, p.Stats().Overcommit)
	assert.Zero(t, up.Held())
	r.Close()
	require.NoError(t, p.Close())
}

// gatheringLender is the pod guard beside several task pools: it lends what
// it holds of Spark's memory, and Gather moves the pools' ballast into that
// hold (each pool hands ballast back to Spark, the guard takes the same
// bytes at once), the borrowing pool's own included.
type gatheringLender struct {
	holdingLender
	up       *fakeupstream.Spark
	pools    []pool.Unified
	gathered int64
}

func (l *gatheringLender) Gather(n int64) int64 {
	lent := l.Lend(n)
	n -= lent
	var moved int64
	for _, p := range l.pools {
		if moved >= n {
			break
		}
		// Takes p's lock: a pool that called Gather with its own lock
		// held would deadlock here.
		got, err := p.ReleaseBallast(n - moved)
		if err != nil {
			panic(err)
		}
		moved += got
	}
	if moved == 0 {
		return lent
	}
	kept, err := l.up.Acquire(moved)
	if err != nil {
		panic(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held += kept
	l.gathered += kept
	l.lent += kept
	l.lends += kept
	return lent + kept
}

// A task whose share Spark has given out (its other consumers hold it)
// needs a page its consumer cannot spill for, while another task's pool
// keeps its spilled bytes from Spark as ballast: the guard gathers that
// ballast into its own hold and lends it, and the borrow succeeds instead
// of failing the task. Without a Gatherer (the guard's hold alone) the same
// borrow is refused. Invariant checked at the end of each case: Spark
// counts exactly what the pools and the guard hold between them, and the
// guard's loans are the borrowing pool's.
func TestABorrowSparkGrantedShortIsMadeUpFromAnotherPoolsBallast(t *testing.T) {
	const mib = 1 << 20
	for _, gather := range []bool{true, false} {
		t.Run(map[bool]string{true: "gathering", false: "own-hold-only"}[gather], func(t *testing.T) {
			up := fakeupstream.New()
			up.SetLimit(64 * mib)
			l := &gatheringLender{up: up}
			var admission pool.Admission = &l.holdingLender
			if gather {
				admission = l
			}
			spilled := unified(t, "fair", up, 64*mib, pool.WithChunkSize(0), pool.WithAdmission(admission))
			merging := unified(t, "fair", up, 64*mib, pool.WithChunkSize(0), pool.WithAdmission(admission))
			l.pools = []pool.Unified{merging, spilled}

			var sorter *pool.Reservation
			sorter = pool.NewConsumer("sorter").WithSpiller(spillAll(&sorter)).Register(spilled)
			require.NoError(t, sorter.TryGrow(48*mib))
			moved, _, err := spilled.ReclaimToBallast(48 * mib)
			require.NoError(t, err)
			require.Equal(t, int64(48*mib), moved, "the sorter's bytes are ballast")
			other, err := up.Acquire(16 * mib) // the merging task's other consumers
			require.NoError(t, err)
			require.Equal(t, int64(16*mib), other)

			merge := pool.NewConsumer("merge").Register(merging)
			err = merge.TryGrow(mib)
			books := func() {
				t.Helper()
				assert.Equal(t, up.Held(),
					other+spilled.Stats().Held+merging.Stats().Held+l.held,
					"Spark counts what the pools and the guard hold")
				assert.Equal(t, l.outstanding(), merging.Stats().Loaned)
			}
			books()
			if !gather {
				require.ErrorIs(t, err, pool.ErrResourcesExhausted, "nothing held to lend: refused")
				assert.Equal(t, int64(48*mib), spilled.Stats().Ballast)
				return
			}
			require.NoError(t, err, "the other pool's ballast made up the page")
			assert.Equal(t, int64(mib), merge.Size())
			assert.Equal(t, int64(mib), l.gathered, "only what Spark lacked was gathered")
			assert.Equal(t, int64(47*mib), spilled.Stats().Ballast)
			assert.Equal(t, int64(mib), merging.Stats().Loaned)

			merge.Grow(2 * mib)
			assert.Equal(t, int64(3*mib), merging.Stats().Loaned, "a Grow's overcommit is backed by gathered ballast too")
			assert.Equal(t, int64(45*mib), spilled.Stats().Ballast)
			books()

			merge.Close()
			assert.Zero(t, l.outstanding(), "the loan is repaid when the merge is done")
			sorter.Close()
			require.NoError(t, merging.Close())
			require.NoError(t, spilled.Close())
			assert.Equal(t, other+l.held, up.Held(), "nothing left charged to the pools")
		})
	}
}
