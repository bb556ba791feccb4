package pool_test

import (
	"errors"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/nativepool/nativepool/internal/fakeupstream"
	"github.com/nativepool/nativepool/pool"
)

// countingPool counts the calls that reach the pool it wraps, so tests can
// tell a local grow from a crossing one.
type countingPool struct {
	pool.Pool
	grows, shrinks int
}

func (c *countingPool) TryGrow(r *pool.Reservation, n int64) error {
	c.grows++
	return c.Pool.TryGrow(r, n)
}

func (c *countingPool) Grow(r *pool.Reservation, n int64) {
	c.grows++
	c.Pool.Grow(r, n)
}

func (c *countingPool) Shrink(r *pool.Reservation, n int64) {
	c.shrinks++
	c.Pool.Shrink(r, n)
}

func (c *countingPool) Unwrap() pool.Pool { return c.Pool }

func TestAccountBorrowsInQuantaAndKeepsAtMostTwoQuantaOfSlack(t *testing.T) {
	const q = 1000
	p := &countingPool{Pool: pool.NewGreedy(1 << 20)}
	a := pool.NewAccount(pool.NewConsumer("op").Register(p), q)
	defer a.Close()

	require.NoError(t, a.TryGrow(10))
	assert.Equal(t, 1, p.grows, "the first grow crosses")
	assert.Equal(t, int64(10), a.Used())
	assert.Equal(t, int64(990), a.Slack())
	assert.Equal(t, int64(q), p.Reserved(), "the pool sees one quantum")

	for range 99 {
		require.NoError(t, a.TryGrow(10))
	}
	assert.Equal(t, 1, p.grows, "grows the slack covers stay local")
	assert.Zero(t, a.Slack())

	a.Grow(1500) // crosses: asks 1500 rounded up to 2000
	assert.Equal(t, 2, p.grows)
	assert.Equal(t, int64(2500), a.Used())
	assert.Equal(t, int64(500), a.Slack())
	assert.Equal(t, a.Used()+a.Slack(), a.Reservation().Size())

	a.Shrink(1500) // slack 2000: not above 2Q, stays local
	assert.Zero(t, p.shrinks)
	a.Shrink(1) // slack 2001 > 2Q: all but Q goes back
	assert.Equal(t, 1, p.shrinks)
	assert.Equal(t, int64(q), a.Slack())
	assert.Equal(t, int64(999+q), p.Reserved())

	assert.Equal(t, int64(999+q), a.Clear())
	assert.Zero(t, p.Reserved())
	assert.Zero(t, a.Used()+a.Slack())
}

// A refused rounded ask is retried for the exact rest, so an account never
// refuses what a plain reservation would grant; the refusal it returns is
// the pool's own, for the exact rest.
func TestAccountRetriesARefusedRoundedAskExactly(t *testing.T) {
	p := pool.NewGreedy(1500)
	a := pool.NewAccount(pool.NewConsumer("op").Register(p), 1000)
	defer a.Close()
	require.NoError(t, a.TryGrow(1200), "2000 is refused, 1200 fits")
	assert.Equal(t, int64(1200), p.Reserved())
	assert.Zero(t, a.Slack())

	err := a.TryGrow(400)
	require.ErrorIs(t, err, pool.ErrResourcesExhausted)
	r := pool.NewConsumer("op").Register(pool.NewGreedy(1500))
	require.NoError(t, r.TryGrow(1200))
	want := r.TryGrow(400)
	r.Close()
	assert.Equal(t, want.Error(), err.Error(), "the reservation's refusal, unchanged")
	assert.Equal(t, int64(1200), a.Used(), "a refusal changes nothing")
	assert.Equal(t, int64(1200), p.Reserved())
}

func TestAccountRejectsInvalidCallsWithTheReservationsTexts(t *testing.T) {
	p := pool.NewGreedy(1 << 30)
	a := pool.NewAccount(pool.NewConsumer("op").Register(p), 0)
	assert.Equal(t, pool.DefaultAccountQuantum, a.Quantum())
	r := pool.NewConsumer("op").Register(p)

	errA, errR := a.TryGrow(-1), r.TryGrow(-1)
	require.ErrorIs(t, errA, pool.ErrInvalidSize)
	assert.Equal(t, errR.Error(), errA.Error())
	require.NoError(t, a.TryGrow(5))
	require.NoError(t, r.TryGrow(5))
	assert.PanicsWithValue(t, "Cannot free the capacity 6 out of allocated size 5", func() { a.Shrink(6) })
	assert.PanicsWithValue(t, "Cannot free the capacity 6 out of allocated size 5", func() { r.Shrink(6) })
	assert.Panics(t, func() { a.Grow(-1) })
	assert.Panics(t, func() { a.Resize(-1) })
	require.ErrorIs(t, a.TryResize(-1), pool.ErrInvalidSize)
	assert.Equal(t, int64(5), a.Used(), "nothing changed")

	a.Close()
	r.Close()
	a.Close() // a second Close is a no-op
	assert.Zero(t, p.Reserved())
	require.ErrorIs(t, a.TryGrow(1), pool.ErrClosed)
	require.ErrorIs(t, a.TryResize(1), pool.ErrClosed)
	assert.Panics(t, func() { a.Grow(1) })
	assert.Panics(t, func() { a.Shrink(0) })
	assert.Panics(t, func() { a.Resize(0) })
	assert.Zero(t, a.Clear())
	assert.Zero(t, a.ReleaseSlack())
	assert.True(t, a.Closed())
	assert.Contains(t, a.String(), "op")
}

func TestAccountResizeAndTryResize(t *testing.T) {
	p := pool.NewGreedy(5000)
	a := pool.NewAccount(pool.NewConsumer("op").Register(p), 1000)
	defer a.Close()
	a.Resize(2500)
	assert.Equal(t, int64(2500), a.Used())
	require.NoError(t, a.TryResize(100))
	assert.Equal(t, int64(100), a.Used())
	require.ErrorIs(t, a.TryResize(6000), pool.ErrResourcesExhausted)
	assert.Equal(t, int64(100), a.Used(), "a refused TryResize keeps what the account had")
	assert.Equal(t, a.Used()+a.Slack(), a.Reservation().Size())
}

// A reservation's bytes at NewAccount become the account's slack.
func TestAccountTakesTheReservationsBytesAsSlack(t *testing.T) {
	p := pool.NewGreedy(1 << 20)
	r := pool.NewConsumer("op").Register(p)
	require.NoError(t, r.TryGrow(300))
	a := pool.NewAccount(r, 1000)
	assert.Equal(t, int64(300), a.Slack())
	require.NoError(t, a.TryGrow(300))
	assert.Equal(t, int64(300), p.Reserved())
	a.Close()
	assert.Zero(t, p.Reserved())
	assert.True(t, r.Closed(), "Close closes the reservation")
}

// Spill gives the slack back first and calls the operator's spill only for
// what the slack does not cover; what that spill shrank does not stay local.
func TestAccountSpillGivesTheSlackBackFirst(t *testing.T) {
	p := pool.NewGreedy(1 << 20)
	a := pool.NewAccount(pool.NewConsumer("op").Register(p), 1000)
	defer a.Close()
	require.NoError(t, a.TryGrow(200)) // slack 800
	calls := 0
	data := func(int64) error { calls++; a.Shrink(a.Used()); return nil }

	freed, err := a.Spill(500, data)
	require.NoError(t, err)
	assert.Equal(t, int64(800), freed, "the slack covered the target")
	assert.Zero(t, calls)
	assert.Equal(t, int64(200), p.Reserved())

	freed, err = a.Spill(100, data)
	require.NoError(t, err)
	assert.Equal(t, int64(200), freed, "the operator's data, and none of it stays as slack")
	assert.Equal(t, 1, calls)
	assert.Zero(t, p.Reserved())
	assert.Zero(t, a.Slack())

	boom := errors.New("disk full")
	require.NoError(t, a.TryGrow(10))
	a.ReleaseSlack()
	freed, err = a.Spill(10, func(int64) error { a.Shrink(4); return boom })
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, int64(4), freed, "what the failing spill freed is still reported")
	assert.Equal(t, a.Used()+a.Slack(), a.Reservation().Size())
}

// spillingUpstream is Spark in miniature: a limit, and an Acquire past it
// that first asks the pool to reclaim (which spills the pool's consumers,
// the requester's too, on the requesting goroutine).
type spillingUpstream struct {
	mu      sync.Mutex
	limit   int64
	held    int64
	reclaim func(int64) (int64, error)
}

func (u *spillingUpstream) Acquire(n int64) (int64, error) {
	u.mu.Lock()
	over := u.held + n - u.limit
	u.mu.Unlock()
	if over > 0 && u.reclaim != nil {
		if _, err := u.reclaim(over); err != nil {
			return 0, err
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	g := max(min(n, u.limit-u.held), 0)
	u.held += g
	return g, nil
}

func (u *spillingUpstream) Release(n int64) error {
	u.mu.Lock()
	u.held -= n
	u.mu.Unlock()
	return nil
}

// lockedOperator is an operator whose state is under one mutex, which its
// spiller takes too; the account releases it while a grow crosses.
type lockedOperator struct {
	mu      sync.Mutex
	acct    *pool.Account
	buffers []int64
	spilled int // spills that freed buffers
	// pushing is set while push's grow is in flight; reentered counts
	// spills that came then (on the pushing goroutine, through the pool).
	pushing   bool
	reentered int
}

func (o *lockedOperator) Spill(target int64) (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.acct.Spill(target, func(int64) error {
		if len(o.buffers) > 0 {
			o.spilled++
			if o.pushing {
				o.reentered++
			}
		}
		for _, b := range o.buffers {
			o.acct.Shrink(b)
		}
		o.buffers = nil
		return nil
	})
}

// push charges a buffer of n bytes; refused, it spills itself and tries
// once more, as an operator does.
func (o *lockedOperator) push(n int64) error {
	err := o.grow(n)
	if errors.Is(err, pool.ErrResourcesExhausted) {
		if _, err = o.Spill(n); err == nil {
			err = o.grow(n)
		}
	}
	return err
}

func (o *lockedOperator) grow(n int64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pushing = true
	err := o.acct.TryGrow(n)
	o.pushing = false
	if err == nil {
		o.buffers = append(o.buffers, n)
	}
	return err
}

// An operator's own spill runs while its grow crosses (the pool reclaims
// from the requester on the requesting goroutine): the crossing released
// the operator's lock, the spill frees the operator's buffers through the
// account, and the grow is booked after it with nothing given back twice.
func TestAccountGrowCrossingSpillsItsOwnOperatorOnTheSameGoroutine(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := &spillingUpstream{limit: 64 << 10}
			u := unified(t, kind, up, 64<<10)
			up.reclaim = u.Reclaim
			op := &lockedOperator{}
			c := pool.NewConsumer("op").WithSpiller(op)
			op.acct = pool.NewAccount(c.Register(u.(pool.Pool)), 4<<10).WithLock(&op.mu)
			for i := range 200 {
				require.NoError(t, op.push(int64(1000+i*37)), "push %d", i)
				op.mu.Lock()
				var inBuffers int64
				for _, b := range op.buffers {
					inBuffers += b
				}
				assert.Equal(t, inBuffers, op.acct.Used())
				assert.Equal(t, op.acct.Used()+op.acct.Slack(), op.acct.Reservation().Size())
				assert.LessOrEqual(t, op.acct.Slack(), 2*op.acct.Quantum())
				op.mu.Unlock()
			}
			op.mu.Lock()
			assert.Positive(t, op.spilled)
			if kind == "greedy" {
				// The greedy pool asks upstream, which reclaims: the spill
				// comes inside the crossing grow. (The fair pool refuses at
				// its share first, and the operator spills itself.)
				assert.Positive(t, op.reentered, "the operator was spilled while its grow crossed")
			}
			op.acct.Close()
			op.mu.Unlock()
			requireUnifiedInvariants(t, u, up.held, 0)
			assert.Zero(t, u.(pool.Pool).Reserved())
		})
	}
}

// An operator pushed on one goroutine and spilled from another, under the
// operator's lock: the account stays exact (run with -race).
func TestAccountUnderTheOperatorsLockIsSpilledFromAnotherGoroutine(t *testing.T) {
	p := pool.NewGreedy(1 << 30)
	op := &lockedOperator{}
	op.acct = pool.NewAccount(pool.NewConsumer("op").Register(p), 1000).WithLock(&op.mu)
	var g errgroup.Group
	stop := make(chan struct{})
	g.Go(func() error {
		defer close(stop)
		for i := range 20000 {
			if err := op.push(int64(1 + i%3000)); err != nil {
				return err
			}
		}
		return nil
	})
	g.Go(func() error {
		for {
			select {
			case <-stop:
				return nil
			default:
			}
			if _, err := op.Spill(1 << 20); err != nil {
				return err
			}
		}
	})
	require.NoError(t, g.Wait())
	op.mu.Lock()
	defer op.mu.Unlock()
	assert.Equal(t, op.acct.Used()+op.acct.Slack(), p.Reserved())
	op.acct.Close()
	assert.Zero(t, p.Reserved())
}

// The account's hot path touches no shared word: a grow and shrink pair
// within the slack allocates nothing and calls the pool not at all.
func TestAccountPairAllocatesNothingAndStaysLocal(t *testing.T) {
	p := &countingPool{Pool: pool.NewFair(1 << 40)}
	a := pool.NewAccount(pool.NewConsumer("op").WithCanSpill(true).Register(p), 0)
	defer a.Close()
	require.NoError(t, a.TryGrow(8))
	a.Shrink(8)
	calls := p.grows + p.shrinks
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		if err := a.TryGrow(8); err != nil {
			panic(err)
		}
		a.Shrink(8)
	}))
	assert.Equal(t, calls, p.grows+p.shrinks)
	// The account stays small enough to embed in an operator.
	assert.LessOrEqual(t, unsafe.Sizeof(pool.Account{}), uintptr(64))
}

// An upstream failure during a crossing grow (a Java exception for a pool
// bridged to Spark) reaches the caller as it was raised, and the account,
// its reservation and the pool are as before: the slack taken aside for
// the grow is put back. Then an upstream that panics does the same.
func TestAccountUpstreamFailureDuringACrossingChangesNothing(t *testing.T) {
	up := fakeupstream.New()
	u := unified(t, "greedy", up, 0, pool.WithChunkSize(0)) // every grow asks upstream
	a := pool.NewAccount(pool.NewConsumer("op").Register(u.(pool.Pool)), 1000)
	defer a.Close()
	require.NoError(t, a.TryGrow(600)) // slack 400
	used, slack, size := a.Used(), a.Slack(), a.Reservation().Size()

	javaErr := errors.New("SparkOutOfMemoryError")
	up.Reply(fakeupstream.Fail(javaErr), fakeupstream.Fail(javaErr))
	err := a.TryGrow(5000)
	require.ErrorIs(t, err, javaErr)
	assert.Equal(t, [3]int64{used, slack, size}, [3]int64{a.Used(), a.Slack(), a.Reservation().Size()})

	up.Reply(func(int64) (int64, error) { panic("upcall threw") })
	assert.Panics(t, func() { _ = a.TryGrow(5000) })
	assert.Equal(t, [3]int64{used, slack, size}, [3]int64{a.Used(), a.Slack(), a.Reservation().Size()})
	require.NoError(t, a.TryGrow(400), "the slack is still there")
}
