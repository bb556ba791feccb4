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
