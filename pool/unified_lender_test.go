package pool_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/fakeupstream"
	"github.com/nativepool/nativepool/pool"
)

// holdingLender holds bytes back from a fake Spark (its limit is what is
// left) and lends them back when asked: the pod guard holding Spark's free
// off-heap memory, as a pool's Admission sees it.
type holdingLender struct {
	mu           sync.Mutex
	up           *fakeupstream.Spark
	limit, held  int64
	loans, dones int
}

func (l *holdingLender) Admit(int64) error    { return nil }
func (l *holdingLender) AdmitNow(int64) error { return nil }

func (l *holdingLender) Lend(n int64) (int64, func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := min(n, l.held)
	l.held -= k
	l.limit += k
	l.up.SetLimit(l.limit)
	l.loans++
	return k, func() { l.mu.Lock(); l.dones++; l.mu.Unlock() }
}

// A pool's own borrow that Spark grants short while the guard holds Spark's
// memory back is asked again for what the guard lent it: native memory
// grows where admission lets it, and the hold is for Spark's other
// consumers. TryGrow and Grow borrow; growth the consumer can do without
// (WithoutWaiting) does not, and is refused.
func TestABorrowSparkGrantedShortIsAskedAgainForWhatTheLenderLent(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New()
			l := &holdingLender{up: up, limit: 0, held: 64 << 20}
			up.SetLimit(0) // everything is held back
			p := unified(t, kind, up, 64<<20, pool.WithChunkSize(0), pool.WithAdmission(l))
			r := pool.NewConsumer("sort").WithCanSpill(true).Register(p)

			require.NoError(t, r.TryGrow(4<<20), "lent what Spark lacked")
			assert.Equal(t, int64(4<<20), up.Held())
			assert.Equal(t, int64(60<<20), l.held)
			assert.Equal(t, 1, l.dones, "the loan was ended")

			err := r.WithoutWaiting(func() error { return r.TryGrow(1 << 20) })
			require.ErrorIs(t, err, pool.ErrResourcesExhausted, "optional growth is never lent to")
			assert.Equal(t, int64(60<<20), l.held)

			r.Grow(2 << 20)
			assert.Equal(t, int64(6<<20), up.Held(), "Grow was lent to: no overcommit")
			assert.Zero(t, p.Stats().Overcommit)
			assert.Equal(t, int64(2), p.Stats().Loans)
			requireUnifiedInvariants(t, p, up.Held(), 0, r)

			l.mu.Lock()
			l.held = 0
			l.mu.Unlock()
			require.ErrorIs(t, r.TryGrow(1<<20), pool.ErrResourcesExhausted, "nothing left to lend: refused")
			r.Close()
			assert.Zero(t, up.Held())
		})
	}
}
