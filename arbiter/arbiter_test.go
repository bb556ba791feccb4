package arbiter_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nativepool/nativepool/internal/proptest"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/nativepool/nativepool/arbiter"
	"github.com/nativepool/nativepool/pool"
)

// arbTimeout bounds every wait in these tests, so a broken wake-up fails the
// test instead of hanging it.
const arbTimeout = 10 * time.Second

// arbQuiet is a logger that drops everything.
var arbQuiet = arbiter.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

// arbLogRecorder is a slog.Handler that keeps every record's message.
type arbLogRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (h *arbLogRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *arbLogRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Level.String()+" "+r.Message)
	return nil
}
func (h *arbLogRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *arbLogRecorder) WithGroup(string) slog.Handler      { return h }
func (h *arbLogRecorder) messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.msgs)
}

// acquireResult is what an Acquire started in the background returned.
type acquireResult struct {
	granted int64
	err     error
}

// acquireAsync starts c.Acquire(n) on its own goroutine.
func acquireAsync(c *arbiter.Consumer, n int64) <-chan acquireResult {
	ch := make(chan acquireResult, 1)
	go func() {
		g, err := c.Acquire(n)
		ch <- acquireResult{g, err}
	}()
	return ch
}

// awaitResult waits for a background Acquire, failing the test on timeout.
func awaitResult(t *testing.T, ch <-chan acquireResult) acquireResult {
	t.Helper()
	return awaitResultWithin(t, arbTimeout, ch)
}

// awaitResultWithin is awaitResult with its own bound d.
func awaitResultWithin(t *testing.T, d time.Duration, ch <-chan acquireResult) acquireResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		t.Fatalf("Acquire did not return within %v", d)
		return acquireResult{}
	}
}

// requireBlocked asserts that a background Acquire is still waiting once the
// arbiter has counted wantWaits waits.
func requireBlocked(t *testing.T, a *arbiter.Arbiter, ch <-chan acquireResult, wantWaits int64) {
	t.Helper()
	require.Eventually(t, func() bool { return a.Stats().Waits == wantWaits }, arbTimeout, time.Millisecond)
	select {
	case r := <-ch:
		t.Fatalf("Acquire returned (%d, %v) but should be waiting for 1/2N", r.granted, r.err)
	case <-time.After(20 * time.Millisecond):
	}
}

func mustAcquire(t *testing.T, c *arbiter.Consumer, n, want int64) {
	t.Helper()
	got, err := c.Acquire(n)
	require.NoError(t, err)
	require.Equal(t, want, got, "Acquire(%d) of %s", n, c.Name())
}

func TestArbiterCapsEachTaskAtOneNthOfThePool(t *testing.T) {
	a := arbiter.New(1000, arbQuiet)
	ca := a.NewTask(context.Background(), "A").NewConsumer("a", nil)
	cb := a.NewTask(context.Background(), "B").NewConsumer("b", nil)

	mustAcquire(t, ca, 400, 400) // alone: N=1, cap 1000
	mustAcquire(t, cb, 400, 400) // N=2, cap 500
	// A holds 400 of its 500 cap: 100 granted although 200 are free, and no
	// wait because A already holds more than 1/2N (250).
	mustAcquire(t, ca, 300, 100)
	assert.Equal(t, int64(900), a.Used())
	assert.Equal(t, int64(0), a.Stats().Waits)
	// A lone task can take the whole pool.
	require.NoError(t, ca.Release(500))
	require.NoError(t, cb.Release(400))
	mustAcquire(t, ca, 1000, 1000)
}

func TestArbiterOfSizeZeroGrantsNothingWithoutBlocking(t *testing.T) {
	a := arbiter.New(0, arbQuiet)
	c := a.NewTask(context.Background(), "T").NewConsumer("c", nil)
	r := awaitResult(t, acquireAsync(c, 10))
	require.NoError(t, r.err)
	assert.Equal(t, int64(0), r.granted)
	assert.Equal(t, 0, a.Stats().ActiveTasks)
}

func TestNewPanicsOnNegativeSize(t *testing.T) {
	assert.PanicsWithValue(t, "arbiter: New(-1): negative size", func() { arbiter.New(-1) })
}

// fullPoolWithWaiter fills a 1000-byte pool with task A and starts task B
// asking for 300 bytes, which must wait (B holds 0 < 1/2N = 250).
func fullPoolWithWaiter(t *testing.T, ctx context.Context) (a *arbiter.Arbiter, ca *arbiter.Consumer, tb *arbiter.Task, cb *arbiter.Consumer, ch <-chan acquireResult) {
	a = arbiter.New(1000, arbQuiet)
	ca = a.NewTask(context.Background(), "A").NewConsumer("a", nil)
	mustAcquire(t, ca, 1000, 1000)
	tb = a.NewTask(ctx, "B")
	cb = tb.NewConsumer("b", nil)
	ch = acquireAsync(cb, 300)
	requireBlocked(t, a, ch, 1)
	return a, ca, tb, cb, ch
}

// TestArbiterWaitsForHalfShareUntilAnotherTaskReleases: returning at all
// means the release woke the waiter.
func TestArbiterWaitsForHalfShareUntilAnotherTaskReleases(t *testing.T) {
	a, ca, _, cb, ch := fullPoolWithWaiter(t, context.Background())
	assert.Equal(t, 2, a.Stats().ActiveTasks, "a waiting task counts in N")

	// 100 free is still short of the request and leaves B below 250: wait on.
	require.NoError(t, ca.Release(100))
	requireBlocked(t, a, ch, 1)

	require.NoError(t, ca.Release(200))
	r := awaitResult(t, ch)
	require.NoError(t, r.err)
	assert.Equal(t, int64(300), r.granted)
	assert.Equal(t, int64(300), cb.Used())
	assert.Equal(t, int64(1000), a.Used())
}

// TestArbiterWaiterRecomputesItsShareWhenAnotherTaskEnters: a task
// entering the pool lowers 1/2N, which lets a waiter take a partial grant;
// returning at all means the entry woke it (nothing was released).
func TestArbiterWaiterRecomputesItsShareWhenAnotherTaskEnters(t *testing.T) {
	a := arbiter.New(1000, arbQuiet)
	mustAcquire(t, a.NewTask(context.Background(), "A").NewConsumer("a", nil), 800, 800)
	cb := a.NewTask(context.Background(), "B").NewConsumer("b", nil)
	ch := acquireAsync(cb, 300) // N=2: 200 free < 250 = 1/2N, so B waits
	requireBlocked(t, a, ch, 1)

	mustAcquire(t, a.NewTask(context.Background(), "C").NewConsumer("c", nil), 10, 10)
	r := awaitResult(t, ch) // N=3: 1/2N = 166 ≤ the 190 still free
	require.NoError(t, r.err)
	assert.Equal(t, int64(190), r.granted)
	assert.Equal(t, int64(1000), a.Used())
}

func TestArbiterWaitEndsWithContextErrorWhenTaskIsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	a, _, tb, cb, ch := fullPoolWithWaiter(t, ctx)
	queued := acquireAsync(cb, 10) // a second goroutine of B, queued on B's monitor

	cancel()
	for _, r := range []acquireResult{awaitResult(t, ch), awaitResult(t, queued)} {
		require.ErrorIs(t, r.err, context.Canceled)
		assert.Equal(t, int64(0), r.granted)
	}
	assert.Equal(t, `arbiter: task "B": acquire cancelled: context canceled`, awaitErr(t, cb, 1).Error())
	assert.Equal(t, int64(0), tb.Used())
	assert.Equal(t, int64(1000), a.Used())
	assert.Equal(t, 1, a.Stats().ActiveTasks, "a cancelled waiter leaves N")
}

func awaitErr(t *testing.T, c *arbiter.Consumer, n int64) error {
	t.Helper()
	r := awaitResult(t, acquireAsync(c, n))
	require.Error(t, r.err)
	assert.Equal(t, int64(0), r.granted)
	return r.err
}

func TestArbiterWaitEndsWithErrClosedWhenTaskIsClosed(t *testing.T) {
	a, _, tb, cb, ch := fullPoolWithWaiter(t, context.Background())
	queued := acquireAsync(cb, 10)

	assert.Equal(t, int64(0), tb.Close())
	for _, r := range []acquireResult{awaitResult(t, ch), awaitResult(t, queued)} {
		require.ErrorIs(t, r.err, pool.ErrClosed)
		assert.Equal(t, int64(0), r.granted)
	}
	assert.Equal(t, `arbiter: task "B": acquire after task Close: closed`, awaitErr(t, cb, 1).Error())
	assert.Equal(t, int64(1000), a.Used())
	assert.Equal(t, arbiter.Stats{Size: 1000, Used: 1000, Peak: 1000, OpenTasks: 1, ActiveTasks: 1, Waits: 1}, a.Stats())
}

func TestArbiterWaitEndsWithErrClosedWhenArbiterIsClosed(t *testing.T) {
	a, ca, _, cb, ch := fullPoolWithWaiter(t, context.Background())
	a.Close()
	r := awaitResult(t, ch)
	require.ErrorIs(t, r.err, pool.ErrClosed)
	assert.Equal(t, `arbiter: task "B": acquire after arbiter Close: closed`, r.err.Error())
	assert.Equal(t, int64(0), cb.Used())
	// Releases keep working after Close.
	require.NoError(t, ca.Release(1000))
	assert.Equal(t, int64(0), a.Used())
}

func TestTaskCloseReleasesEverythingAndRefusesLaterCalls(t *testing.T) {
	rec := &arbLogRecorder{}
	a := arbiter.New(1000, arbiter.WithLogger(slog.New(rec)))
	task := a.NewTask(context.Background(), "T")
	c1, c2 := task.NewConsumer("c1", nil), task.NewConsumer("c2", nil)
	mustAcquire(t, c1, 100, 100)
	mustAcquire(t, c2, 200, 200)

	assert.Equal(t, int64(300), task.Close())
	assert.Equal(t, int64(0), task.Close(), "Close is idempotent")
	assert.Equal(t, int64(0), a.Used())
	assert.Equal(t, int64(0), c1.Used())
	err := c1.Release(100)
	require.ErrorIs(t, err, pool.ErrClosed)
	assert.Equal(t, `arbiter: task "T": Release(100) after task Close: closed`, err.Error())
	assert.Equal(t, int64(0), a.Used())
	assert.Equal(t, []string{
		"WARN arbiter: task closed while holding memory",
		"DEBUG arbiter: release after task Close ignored",
	}, rec.messages())
}

func TestArbiterReleaseOfMoreThanHeldIsClampedLoggedAndReported(t *testing.T) {
	rec := &arbLogRecorder{}
	a := arbiter.New(1000, arbiter.WithLogger(slog.New(rec)))
	task := a.NewTask(context.Background(), "T")
	c1, c2 := task.NewConsumer("c1", nil), task.NewConsumer("c2", nil)
	mustAcquire(t, c1, 100, 100)
	mustAcquire(t, c2, 200, 200)

	err := c1.Release(150)
	require.ErrorIs(t, err, pool.ErrInvalidSize)
	assert.Equal(t, `arbiter: consumer "c1" of task "T": Release(150) but it holds 100: invalid size`, err.Error())
	assert.Equal(t, int64(0), c1.Used())
	assert.Equal(t, int64(200), c2.Used(), "another consumer's bytes are not taken")
	assert.Equal(t, int64(200), a.Used())
	assert.Equal(t, int64(1), a.Stats().OverReleases)
	assert.Equal(t, []string{"ERROR arbiter: release exceeds what the consumer holds; clamped"}, rec.messages())

	err = c1.Release(-1)
	assert.Equal(t, "arbiter: Release(-1): negative size: invalid size", err.Error())
	_, err = c1.Acquire(-1)
	assert.Equal(t, "arbiter: Acquire(-1): negative size: invalid size", err.Error())
}

// spillLog records spill callbacks in the order they ran.
type spillLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *spillLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, s)
}

func (l *spillLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// recordingSpiller records "name(target)" and then releases, re-entrantly
// through the consumer's own Release, what free(held, target) says.
type recordingSpiller struct {
	log  *spillLog
	c    *arbiter.Consumer
	free func(held, target int64) int64
}

func (s *recordingSpiller) Reclaim(target int64) (int64, error) {
	s.log.add(fmt.Sprintf("%s(%d)", s.c.Name(), target))
	n := s.free(s.c.Used(), target)
	if n > 0 {
		if err := s.c.Release(n); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func freeAll(held, _ int64) int64 { return held }
func freeNone(_, _ int64) int64   { return 0 }

// spillTask builds one task in a pool of size with consumers holding the
// given bytes and spilling per free (nil free: no reclaimer at all).
func spillTask(t *testing.T, size int64, names []string, held []int64, free []func(int64, int64) int64) (*arbiter.Arbiter, []*arbiter.Consumer, *spillLog) {
	a := arbiter.New(size, arbQuiet)
	task := a.NewTask(context.Background(), "T")
	log := &spillLog{}
	cs := make([]*arbiter.Consumer, len(names))
	for i, name := range names {
		cs[i] = task.NewConsumer(name, nil)
		if free[i] != nil {
			cs[i].SetReclaimer(&recordingSpiller{log: log, c: cs[i], free: free[i]})
		}
		if held[i] > 0 {
			mustAcquire(t, cs[i], held[i], held[i])
		}
	}
	return a, cs, log
}

func TestArbiterSpillsTheSmallestConsumerThatCoversTheNeed(t *testing.T) {
	a, cs, log := spillTask(t, 1000,
		[]string{"req", "c100", "c300", "c500"}, []int64{100, 100, 300, 500},
		[]func(int64, int64) int64{freeAll, freeAll, freeAll, freeAll})
	mustAcquire(t, cs[0], 250, 250)
	assert.Equal(t, []string{"c300(250)"}, log.get())
	assert.Equal(t, int64(950), a.Used())
	assert.Equal(t, int64(350), cs[0].Used())
	assert.Equal(t, int64(1), a.Stats().Spills)
	assert.Equal(t, int64(300), a.Stats().SpilledBytes)
}

func TestArbiterSpillsTheLargestConsumerWhenNoneCoversTheNeed(t *testing.T) {
	_, cs, log := spillTask(t, 1000,
		[]string{"req", "c100", "c300", "c500"}, []int64{100, 100, 300, 500},
		[]func(int64, int64) int64{freeAll, freeAll, freeAll, freeAll})
	// 500 freed by c500 leaves 200 to find: c300 is then the smallest cover.
	mustAcquire(t, cs[0], 700, 700)
	assert.Equal(t, []string{"c500(700)", "c300(200)"}, log.get())
}

func TestArbiterSpillsTheRequesterLastAndOnlyWhenItHoldsMemory(t *testing.T) {
	t.Run("holds", func(t *testing.T) {
		_, cs, log := spillTask(t, 1000,
			[]string{"req", "stuck", "none"}, []int64{400, 500, 100},
			[]func(int64, int64) int64{freeAll, freeNone, nil})
		mustAcquire(t, cs[0], 200, 200)
		// "none" has no reclaimer: skipped without a callback.
		assert.Equal(t, []string{"stuck(200)", "req(200)"}, log.get())
		assert.Equal(t, int64(200), cs[0].Used(), "the requester spilled its 400 and got 200")
	})
	t.Run("holds nothing", func(t *testing.T) {
		a, cs, log := spillTask(t, 1000,
			[]string{"req", "stuck"}, []int64{0, 1000},
			[]func(int64, int64) int64{freeAll, freeNone})
		mustAcquire(t, cs[0], 100, 0)
		assert.Equal(t, []string{"stuck(100)"}, log.get())
		assert.Equal(t, int64(1000), a.Used())
	})
}

func TestArbiterAsksAConsumerAgainAfterAPositiveSpill(t *testing.T) {
	// c600 gives back 100 per call; it stays a candidate until it frees 0.
	_, cs, log := spillTask(t, 1000,
		[]string{"req", "c600"}, []int64{400, 600},
		[]func(int64, int64) int64{freeNone, func(held, _ int64) int64 { return min(held, 100) }})
	mustAcquire(t, cs[0], 250, 250)
	assert.Equal(t, []string{"c600(250)", "c600(150)", "c600(50)"}, log.get())
	assert.Equal(t, int64(300), cs[1].Used())
}

// TestArbiterSpillCallbackMayReleaseReentrantly: returning at all means
// Release did not need the monitor the acquire holds.
func TestArbiterSpillCallbackMayReleaseReentrantly(t *testing.T) {
	a := arbiter.New(100, arbQuiet)
	task := a.NewTask(context.Background(), "T")
	req := task.NewConsumer("req", nil)
	other := task.NewConsumer("other", nil)
	other.SetReclaimer(reclaimFunc(func(target int64) (int64, error) {
		// Release from this goroutine and from another one, both while
		// the acquire holds the task's monitor.
		done := make(chan error)
		go func() { done <- other.Release(target / 2) }()
		if err := <-done; err != nil {
			return 0, err
		}
		return target, other.Release(target - target/2)
	}))
	mustAcquire(t, other, 100, 100)
	r := awaitResult(t, acquireAsync(req, 60))
	require.NoError(t, r.err)
	assert.Equal(t, int64(60), r.granted)
	assert.Equal(t, int64(40), other.Used())
}

type reclaimFunc func(int64) (int64, error)

func (f reclaimFunc) Reclaim(n int64) (int64, error) { return f(n) }

// TestArbiterSpillThatClaimsBytesItDidNotReleaseIsNotAskedAgain: returning
// means the claim did not spin the spill loop (as it can in Spark).
func TestArbiterSpillThatClaimsBytesItDidNotReleaseIsNotAskedAgain(t *testing.T) {
	a := arbiter.New(100, arbQuiet)
	task := a.NewTask(context.Background(), "T")
	req := task.NewConsumer("req", nil)
	liar := task.NewConsumer("liar", nil)
	calls := 0
	liar.SetReclaimer(reclaimFunc(func(target int64) (int64, error) { calls++; return target, nil }))
	mustAcquire(t, liar, 100, 100)
	r := awaitResult(t, acquireAsync(req, 10))
	require.NoError(t, r.err)
	assert.Equal(t, int64(0), r.granted)
	assert.Equal(t, 1, calls)
}

func TestArbiterSpillErrorFailsTheAcquireAndKeepsNothing(t *testing.T) {
	a := arbiter.New(100, arbQuiet)
	task := a.NewTask(context.Background(), "T")
	req := task.NewConsumer("req", nil)
	other := task.NewConsumer("other", nil)
	mustAcquire(t, other, 80, 80)
	boom := errors.New("disk full")
	other.SetReclaimer(reclaimFunc(func(int64) (int64, error) { return 0, boom }))

	got, err := req.Acquire(50) // 20 granted, then the spill fails
	require.ErrorIs(t, err, boom)
	assert.Equal(t, `arbiter: task "T": spill of consumer "other": disk full`, err.Error())
	assert.Equal(t, int64(0), got)
	assert.Equal(t, int64(0), req.Used())
	assert.Equal(t, int64(80), a.Used(), "the 20 bytes gathered before the error went back")
}

func TestArbiterSpillPanicKeepsNothingAndFreesTheMonitor(t *testing.T) {
	a := arbiter.New(100, arbQuiet)
	task := a.NewTask(context.Background(), "T")
	req := task.NewConsumer("req", nil)
	other := task.NewConsumer("other", nil)
	mustAcquire(t, other, 80, 80)
	other.SetReclaimer(reclaimFunc(func(int64) (int64, error) { panic("spill bug") }))

	assert.PanicsWithValue(t, "spill bug", func() { _, _ = req.Acquire(50) })
	assert.Equal(t, int64(80), a.Used(), "the 20 bytes gathered before the panic went back")
	other.SetReclaimer(nil)
	r := awaitResult(t, acquireAsync(req, 10)) // the monitor was released
	require.NoError(t, r.err)
	assert.Equal(t, int64(10), r.granted)
}

// TestArbiterConcurrentTasksEndWithNothingUsed runs 8 tasks of 2 consumers
// that acquire and release at random, some spilling each other. Returning
// means no wait was lost; at the end every byte is back. After every step
// the arbiter never hands out more than its size.
func TestArbiterConcurrentTasksEndWithNothingUsed(t *testing.T) {
	const size, tasks, steps = 1 << 20, 8, 2000
	a := arbiter.New(size, arbQuiet)
	ctx, cancel := context.WithTimeout(context.Background(), arbTimeout)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	for i := range tasks {
		g.Go(func() error {
			task := a.NewTask(gctx, "task-"+strconv.Itoa(i))
			defer task.Close()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			cs := []*arbiter.Consumer{task.NewConsumer("x", nil), task.NewConsumer("y", nil)}
			for _, c := range cs {
				c.SetReclaimer(reclaimFunc(func(target int64) (int64, error) {
					n := min(c.Used(), target)
					return n, c.Release(n)
				}))
			}
			for range steps {
				c := cs[rng.IntN(2)]
				if rng.IntN(3) > 0 {
					if _, err := c.Acquire(rng.Int64N(size / 2)); err != nil {
						return err
					}
				} else if err := c.Release(rng.Int64N(c.Used() + 1)); err != nil {
					return err
				}
				if u := a.Used(); u > size {
					return fmt.Errorf("arbiter used %d > size %d", u, size)
				}
				runtime.Gosched() // interleave the tasks, so some wait for 1/2N
			}
			for _, c := range cs {
				if err := c.Release(c.Used()); err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	s := a.Stats()
	assert.Equal(t, int64(0), s.Used)
	assert.Equal(t, 0, s.ActiveTasks)
	assert.Equal(t, 0, s.OpenTasks)
	assert.LessOrEqual(t, s.Peak, int64(size))
	t.Logf("stats: %+v", s)
}

// arbModel is an independent model of one task alone in an arbiter of size
// bytes (N = 1, so it never waits): used per consumer, and how each
// consumer's spiller behaves.
type arbModel struct {
	size int64
	used []int64
	// spill: 0 frees all it holds, 1 frees half (rounded up), 2 has none.
	spill []int
}

func (m *arbModel) total() int64 {
	var s int64
	for _, u := range m.used {
		s += u
	}
	return s
}

// acquire returns the grant Spark's rules give consumer i asking for n.
func (m *arbModel) acquire(i int, n int64) int64 {
	got := min(n, m.size-m.total())
	if got == n {
		m.used[i] += got
		return got
	}
	type cand struct {
		j   int
		key int64
	}
	var cands []cand
	for j, u := range m.used {
		if u > 0 {
			key := u
			if j == i {
				key = 0
			}
			cands = append(cands, cand{j, key})
		}
	}
	for got < n && len(cands) > 0 {
		need := n - got
		// smallest key ≥ need, last among equals; else largest key, last among equals
		pick := -1
		for k, c := range cands {
			if c.key >= need && (pick < 0 || c.key <= cands[pick].key) {
				pick = k
			}
		}
		if pick < 0 {
			for k, c := range cands {
				if pick < 0 || c.key >= cands[pick].key {
					pick = k
				}
			}
		}
		j := cands[pick].j
		var freed int64
		switch m.spill[j] {
		case 0:
			freed = m.used[j]
		case 1:
			freed = m.used[j] - m.used[j]/2
		}
		if freed <= 0 {
			cands = append(cands[:pick], cands[pick+1:]...)
			continue
		}
		m.used[j] -= freed
		got += min(need, m.size-m.total()-got)
	}
	m.used[i] += got
	return got
}

// release returns the bytes actually released and whether the request was
// over what consumer i holds.
func (m *arbModel) release(i int, n int64) (int64, bool) {
	over := n > m.used[i]
	n = min(n, m.used[i])
	m.used[i] -= n
	return n, over
}

type arbOp struct {
	consumer int
	acquire  bool
	n        int64
}

// TestArbiterSingleTaskMatchesModel checks, for random acquire/release
// sequences of one task's four consumers with different spill behaviours,
// that every grant and every consumer's, task's and arbiter's used bytes
// equal an independent model of Spark's rules, and that after every step:
// each consumer holds ≥ 0, the consumers sum to the task's used bytes, the
// task's to the arbiter's, and that is ≤ size. The seed is logged
// (proptest.Seed).
func TestArbiterSingleTaskMatchesModel(t *testing.T) {
	const size = 1000
	seed := proptest.Seed(t)
	params := gopter.DefaultTestParametersWithSeed(seed)
	params.MinSuccessfulTests = 300
	spillKinds := []int{0, 0, 1, 2}

	opGen := gopter.CombineGens(gen.IntRange(0, 3), gen.Bool(), gen.Int64Range(0, size+200)).
		Map(func(v []any) arbOp { return arbOp{v[0].(int), v[1].(bool), v[2].(int64)} })

	var spills, clamps int64 // across all runs: the model must reach both paths
	props := gopter.NewProperties(params)
	props.Property("grants and balances follow Spark's rules", prop.ForAll(func(ops []arbOp) string {
		a := arbiter.New(size, arbQuiet)
		task := a.NewTask(context.Background(), "T")
		m := &arbModel{size: size, used: make([]int64, 4), spill: spillKinds}
		cs := make([]*arbiter.Consumer, 4)
		for i := range cs {
			cs[i] = task.NewConsumer("c"+strconv.Itoa(i), nil)
			c := cs[i]
			switch spillKinds[i] {
			case 0:
				c.SetReclaimer(reclaimFunc(func(int64) (int64, error) { n := c.Used(); return n, c.Release(n) }))
			case 1:
				c.SetReclaimer(reclaimFunc(func(int64) (int64, error) { n := c.Used() - c.Used()/2; return n, c.Release(n) }))
			}
		}
		for step, op := range ops {
			c := cs[op.consumer]
			if op.acquire {
				got, err := c.Acquire(op.n)
				if err != nil {
					return fmt.Sprintf("step %d %+v: %v", step, op, err)
				}
				if want := m.acquire(op.consumer, op.n); got != want {
					return fmt.Sprintf("step %d %+v: granted %d, model %d", step, op, got, want)
				}
			} else {
				// Ask for up to 1.5× what is held, to reach the clamp.
				n := op.n % (c.Used()*3/2 + 1)
				err := c.Release(n)
				if _, over := m.release(op.consumer, n); over != errors.Is(err, pool.ErrInvalidSize) || (!over && err != nil) {
					return fmt.Sprintf("step %d %+v: release(%d) err %v, model over=%v", step, op, n, err, over)
				}
			}
			if msg := arbCheckInvariants(a, task, cs, m); msg != "" {
				return fmt.Sprintf("step %d %+v: %s", step, op, msg)
			}
		}
		spills += a.Stats().Spills
		clamps += a.Stats().OverReleases
		return ""
	}, gen.SliceOf(opGen)))
	props.TestingRun(t)
	assert.Positive(t, spills, "no sequence reached the spill path")
	assert.Positive(t, clamps, "no sequence reached the over-release clamp")
	t.Logf("spill callbacks %d, clamped releases %d", spills, clamps)
}

// arbCheckInvariants checks: every consumer's used equals the model's and
// is ≥ 0; the consumers sum to the task's used; the task's used equals the
// arbiter's (it is alone); the arbiter's used is ≤ its size.
func arbCheckInvariants(a *arbiter.Arbiter, task *arbiter.Task, cs []*arbiter.Consumer, m *arbModel) string {
	var sum int64
	for i, c := range cs {
		u := c.Used()
		if u < 0 || u != m.used[i] {
			return fmt.Sprintf("consumer %d used %d, model %d", i, u, m.used[i])
		}
		sum += u
	}
	if tu := task.Used(); tu != sum {
		return fmt.Sprintf("task used %d, consumers sum %d", tu, sum)
	}
	if au := a.Used(); au != sum || au > a.Size() {
		return fmt.Sprintf("arbiter used %d, consumers sum %d, size %d", au, sum, a.Size())
	}
	return ""
}

// selfGrowingTask builds one task in a 1000-byte arbiter whose only Spark
// consumer "native" is the upstream of a unified pool of the given kind
// (exact chunks) and has that pool as its reclaimer. The pool has two
// spillable consumers: op1 (600 bytes) frees 300 when asked; op2 (200
// bytes) first grows a spill buffer of 100 bytes on a reservation of the
// same pool (which needs the arbiter: a nested Acquire on the task, on the
// goroutine that holds its monitor inside the spill callback), then frees
// its 200. The arbiter is then full.
func selfGrowingTask(t *testing.T, kind string) (a *arbiter.Arbiter, task *arbiter.Task, native *arbiter.Consumer, p pool.Unified, rs map[string]*pool.Reservation, bufErr *error) {
	t.Helper()
	a = arbiter.New(1000, arbQuiet)
	task = a.NewTask(context.Background(), "T")
	native = task.NewConsumer("native", nil)
	opts := []pool.UnifiedOption{pool.WithChunkSize(0), pool.WithLogger(slog.New(slog.DiscardHandler))}
	var pp pool.Pool
	switch kind {
	case "greedy":
		pp = pool.NewGreedyUnified(native, opts...)
	case "fair":
		pp = pool.NewFairUnified(native, 1<<20, opts...)
	}
	p, ok := pool.As[pool.Unified](pp)
	require.True(t, ok)
	native.SetReclaimer(p)

	rs = map[string]*pool.Reservation{}
	bufErr = new(error)
	rs["op1"] = pool.NewConsumer("op1").WithSpiller(pool.SpillerFunc(func(int64) (int64, error) {
		n := min(300, rs["op1"].Size())
		rs["op1"].Shrink(n)
		return n, nil
	})).Register(pp)
	rs["buf"] = pool.NewConsumer("buf").Register(pp)
	rs["op2"] = pool.NewConsumer("op2").WithSpiller(pool.SpillerFunc(func(int64) (int64, error) {
		if rs["buf"].Size() == 0 {
			*bufErr = rs["buf"].TryGrow(100) // re-enters the arbiter on this goroutine
		}
		n := rs["op2"].Size()
		rs["op2"].Shrink(n)
		return n, nil
	})).Register(pp)
	rs["other"] = pool.NewConsumer("other").Register(pp)
	require.NoError(t, rs["op1"].TryGrow(600))
	require.NoError(t, rs["op2"].TryGrow(200))
	require.Equal(t, int64(800), a.Used())
	return a, task, native, p, rs, bufErr
}

// TestArbiterSpillerMayGrowItsOwnTasksPoolDuringAnAcquire: Spark's
// TaskMemoryManager monitor is re-entrant on the calling thread, so a spill
// callback that grows its own task's pool gets its nested acquire served.
// "other" asks for 600 with 200 free: the arbiter spills the pool, whose
// op2 grows a buffer through the arbiter while the outer acquire holds the
// task's monitor. With context.Background() a non-re-entrant monitor hangs
// forever; returning within the timeout is the claim. The books balance:
// the arbiter's Used equals the pool's Held, and all is 0 after the closes.
func TestArbiterSpillerMayGrowItsOwnTasksPoolDuringAnAcquire(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			a, task, native, p, rs, bufErr := selfGrowingTask(t, kind)
			done := make(chan error, 1)
			go func() { done <- rs["other"].TryGrow(600) }()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(arbTimeout):
				t.Fatal("TryGrow did not return: the spill callback's nested Acquire is stuck on the task's monitor")
			}
			require.NoError(t, *bufErr, "the spill callback's TryGrow was served")
			assert.Equal(t, int64(100), rs["buf"].Size())
			assert.Equal(t, int64(600), rs["other"].Size())
			assert.Equal(t, int64(300), rs["op1"].Size())
			assert.Equal(t, int64(0), rs["op2"].Size())
			s := p.Stats()
			assert.Equal(t, int64(1000), s.Reserved)
			assert.Equal(t, s.Held, a.Used(), "the arbiter's view equals the pool's")
			assert.Equal(t, s.Held, native.Used())
			assert.Equal(t, s.Held, task.Used())

			for _, r := range rs {
				r.Close()
			}
			require.NoError(t, p.Close())
			assert.Equal(t, int64(0), p.Stats().Held)
			assert.Equal(t, int64(0), a.Used())
			assert.Equal(t, int64(0), task.Close(), "nothing left for task Close to force-release")
			assert.Equal(t, int64(0), a.Stats().OverReleases)
		})
	}
}

// TestArbiterSpillCallbackReentryIsOnlyForTheMonitorHoldersGoroutine: a
// goroutine that a spill callback starts is not the monitor's holder, so
// its Acquire on the task waits for the monitor (as another Java thread
// blocks on the TaskMemoryManager) while the callback's own goroutine
// re-enters. It runs once the outer acquire returned.
func TestArbiterSpillCallbackReentryIsOnlyForTheMonitorHoldersGoroutine(t *testing.T) {
	a := arbiter.New(100, arbQuiet)
	task := a.NewTask(context.Background(), "T")
	req, victim, third := task.NewConsumer("req", nil), task.NewConsumer("victim", nil), task.NewConsumer("third", nil)
	mustAcquire(t, victim, 100, 100)
	var fromOther <-chan acquireResult
	var nested acquireResult
	otherWaitedDuringCallback := false
	victim.SetReclaimer(reclaimFunc(func(target int64) (int64, error) {
		fromOther = acquireAsync(third, 10)
		select {
		case r := <-fromOther:
			return 0, fmt.Errorf("another goroutine's Acquire returned (%d, %v) inside the callback", r.granted, r.err)
		case <-time.After(30 * time.Millisecond):
			otherWaitedDuringCallback = true
		}
		if err := victim.Release(100); err != nil {
			return 0, err
		}
		nested.granted, nested.err = victim.Acquire(20) // this goroutine: re-enters
		return 100, nil
	}))
	r := awaitResult(t, acquireAsync(req, 60))
	require.NoError(t, r.err)
	assert.Equal(t, int64(60), r.granted)
	require.NoError(t, nested.err)
	assert.Equal(t, int64(20), nested.granted)
	assert.True(t, otherWaitedDuringCallback)
	o := awaitResult(t, fromOther)
	require.NoError(t, o.err)
	assert.Equal(t, int64(10), o.granted)
	assert.Equal(t, int64(90), a.Used())
	assert.Equal(t, int64(20), victim.Used())
	assert.Equal(t, int64(60), req.Used())
}

// TestArbiterSpillThatGrowsBackWhatItFreedIsNotAskedAgain: a callback that
// releases its bytes and, re-entrantly, acquires them again freed nothing
// net. It counts as a spill of 0, so the consumer is not asked again
// (Spark, trusting the claim, would spin: each re-acquire after the spill
// finds nothing free). Returning is the claim.
func TestArbiterSpillThatGrowsBackWhatItFreedIsNotAskedAgain(t *testing.T) {
	a := arbiter.New(100, arbQuiet)
	task := a.NewTask(context.Background(), "T")
	req, churn := task.NewConsumer("req", nil), task.NewConsumer("churn", nil)
	mustAcquire(t, churn, 100, 100)
	calls := 0
	churn.SetReclaimer(reclaimFunc(func(int64) (int64, error) {
		calls++
		if err := churn.Release(100); err != nil {
			return 0, err
		}
		got, err := churn.Acquire(100)
		return got, err
	}))
	r := awaitResult(t, acquireAsync(req, 10))
	require.NoError(t, r.err)
	assert.Equal(t, int64(0), r.granted)
	assert.Equal(t, 1, calls)
	assert.Equal(t, int64(100), churn.Used())
	assert.Equal(t, int64(100), a.Used())
}

// TestArbiterNestedAcquireRunsItsOwnSpillLoopAndTheOuterLoopGoesOn follows
// Spark's TaskMemoryManager through a re-entrant acquire. req asks for 50
// in a full pool of 100: victim (60) covers it and is spilled; its callback
// frees its 60 and then asks for 80 itself. That nested acquire is a full
// one: granted 60, it spills third (40) for the rest. Back in the outer
// loop the victim is credited 20 net (100 released, 80 re-acquired), so
// req gets the 20 free; the outer loop then goes on with its old candidate
// list (third, now empty, then victim, which frees nothing) and returns 20.
func TestArbiterNestedAcquireRunsItsOwnSpillLoopAndTheOuterLoopGoesOn(t *testing.T) {
	a := arbiter.New(100, arbQuiet)
	task := a.NewTask(context.Background(), "T")
	log := &spillLog{}
	req, victim, third := task.NewConsumer("req", nil), task.NewConsumer("victim", nil), task.NewConsumer("third", nil)
	third.SetReclaimer(&recordingSpiller{log: log, c: third, free: freeAll})
	mustAcquire(t, victim, 60, 60)
	mustAcquire(t, third, 40, 40)
	var nested acquireResult
	spilled := false
	victim.SetReclaimer(reclaimFunc(func(target int64) (int64, error) {
		log.add(fmt.Sprintf("victim(%d)", target))
		if spilled {
			return 0, nil
		}
		spilled = true
		if err := victim.Release(60); err != nil {
			return 0, err
		}
		nested.granted, nested.err = victim.Acquire(80)
		return 60, nil
	}))
	r := awaitResult(t, acquireAsync(req, 50))
	require.NoError(t, r.err)
	assert.Equal(t, int64(20), r.granted)
	require.NoError(t, nested.err)
	assert.Equal(t, int64(80), nested.granted)
	assert.Equal(t, []string{"victim(50)", "third(20)", "third(30)", "victim(30)"}, log.get())
	assert.Equal(t, int64(80), victim.Used())
	assert.Equal(t, int64(0), third.Used())
	assert.Equal(t, int64(20), req.Used())
	assert.Equal(t, int64(100), a.Used())
	assert.Equal(t, int64(100), task.Used())
}

// TestArbiterSpillPanicLeavesNoReentryBehind: after a spill callback
// panicked on this goroutine, this goroutine is not the monitor's holder
// any more, so its next Acquire queues on the monitor while another
// goroutine holds it (waiting for 1/2N) instead of slipping past it. Seen
// through the wait count: only the holder waited; the queued Acquire ends
// with the task's context.
func TestArbiterSpillPanicLeavesNoReentryBehind(t *testing.T) {
	a := arbiter.New(1000, arbQuiet)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	task := a.NewTask(ctx, "T")
	req, other := task.NewConsumer("req", nil), task.NewConsumer("other", nil)
	x := a.NewTask(context.Background(), "X").NewConsumer("x", nil)
	mustAcquire(t, x, 600, 600) // alone: the whole pool is its cap
	mustAcquire(t, other, 400, 400)
	other.SetReclaimer(reclaimFunc(func(int64) (int64, error) { panic("spill bug") }))
	assert.PanicsWithValue(t, "spill bug", func() { _, _ = req.Acquire(100) }) // N=2: 0 granted, then the spill
	other.SetReclaimer(nil)
	require.NoError(t, other.Release(400))
	mustAcquire(t, x, 300, 300) // alone: 100 left free

	holder := acquireAsync(req, 200) // 100 < 1/2N = 250: waits, holding T's monitor
	requireBlocked(t, a, holder, 1)
	stop := time.AfterFunc(100*time.Millisecond, cancel)
	defer stop.Stop()
	_, err := req.Acquire(10) // this goroutine, which panicked in a spill callback
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int64(1), a.Stats().Waits, "the second Acquire queued on the monitor, it did not wait for 1/2N itself")
	r := awaitResult(t, holder)
	require.ErrorIs(t, r.err, context.Canceled)
	assert.Equal(t, int64(0), task.Used())
	assert.Equal(t, int64(900), a.Used())
}

// TestArbiterSpillerGrowingItsOwnPoolIsNotSpilledAgainOnItsGoroutine is
// the crash a Spiller that grows its own pool used to cause. A pool under
// a 16 MiB arbiter, 1 MiB chunks: "grower" holds 12 MiB and its Spiller
// first asks TryGrow(4 MiB) on its own reservation. Another consumer of the
// task acquires 12 MiB: the arbiter spills the pool, the Spiller's TryGrow
// finds the task at its cap and the arbiter spills the pool again on the
// same goroutine. That nested Reclaim must answer 0 at once (before, it ran
// the same Spiller again, without end, until the goroutine's stack
// overflowed and took the process down): the nested TryGrow is refused,
// the Spiller frees what it holds, and the outer acquire gets its 12 MiB.
// Returning within a second, with the books balanced, is the claim.
func TestArbiterSpillerGrowingItsOwnPoolIsNotSpilledAgainOnItsGoroutine(t *testing.T) {
	const mib = 1 << 20
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			logs := &arbLogRecorder{}
			logger := slog.New(logs)
			a := arbiter.New(16*mib, arbQuiet)
			task := a.NewTask(context.Background(), "T")
			native := task.NewConsumer("native", nil)
			opts := []pool.UnifiedOption{pool.WithChunkSize(1 * mib), pool.WithLogger(logger)}
			var pp pool.Pool
			if kind == "greedy" {
				pp = pool.NewGreedyUnified(native, opts...)
			} else {
				pp = pool.NewFairUnified(native, 16*mib, opts...)
			}
			p, ok := pool.As[pool.Unified](pp)
			require.True(t, ok)
			native.SetReclaimer(p)

			var self *pool.Reservation
			var nestedErr error
			spills := 0
			self = pool.NewConsumer("grower").WithSpiller(pool.SpillerFunc(func(int64) (int64, error) {
				spills++
				nestedErr = self.TryGrow(4 * mib) // grows its own pool from inside its spill
				n := self.Size()
				self.Shrink(n)
				return n, nil
			})).Register(pp)
			require.NoError(t, self.TryGrow(12*mib))
			jvm := task.NewConsumer("jvm", nil)

			r := awaitResultWithin(t, time.Second, acquireAsync(jvm, 12*mib))
			require.NoError(t, r.err)
			assert.Equal(t, int64(12*mib), r.granted)
			require.ErrorIs(t, nestedErr, pool.ErrResourcesExhausted, "the nested grow gets a refusal it can handle")
			assert.Equal(t, 1, spills, "the Spiller ran once")
			s := p.Stats()
			assert.Equal(t, int64(1), s.ReclaimReentries)
			assert.Equal(t, s.Held, native.Used(), "the arbiter's view of the pool equals the pool's")
			assert.Equal(t, int64(0), s.Reserved)
			assert.Equal(t, a.Used(), jvm.Used()+native.Used())

			reentries := 0
			for _, m := range logs.messages() {
				if strings.Contains(m, "Reclaim asked again") {
					reentries++
				}
			}
			assert.Equal(t, 1, reentries, "logged once")

			self.Close()
			require.NoError(t, p.Close())
			require.NoError(t, jvm.Release(12*mib))
			assert.Equal(t, int64(0), a.Used())
			assert.Equal(t, int64(0), task.Close(), "nothing left for task Close to force-release")
			assert.Equal(t, int64(0), a.Stats().OverReleases)
		})
	}
}
