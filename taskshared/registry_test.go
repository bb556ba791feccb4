package taskshared

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/nativepool/nativepool/pool"
)

// testTimeout bounds every wait, so a lost wake-up fails instead of hanging.
const testTimeout = 10 * time.Second

// closablePool is a pool with a Close() error method that counts its
// closes, like a unified pool returning its bytes to Spark.
type closablePool struct {
	pool.Pool
	serial   int64
	closes   atomic.Int32
	closeErr error
	onClose  func() // runs inside Close, if set
}

func (p *closablePool) Close() error {
	if p.onClose != nil {
		p.onClose()
	}
	p.closes.Add(1)
	return p.closeErr
}

// wrapper is a decorator without Close, reachable through pool.As.
type wrapper struct{ pool.Pool }

func (w wrapper) Unwrap() pool.Pool { return w.Pool }

// factory builds closablePools and remembers them.
type factory struct {
	mu    sync.Mutex
	pools []*closablePool
}

func (f *factory) create() (pool.Pool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &closablePool{Pool: pool.NewGreedy(1 << 20), serial: int64(len(f.pools))}
	f.pools = append(f.pools, p)
	return p, nil
}

func (f *factory) created() []*closablePool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pools)
}

// logRecorder is a slog.Handler that sends "LEVEL message task=N" lines to a
// channel and keeps them.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
	ch    chan string
}

func newLogRecorder() *logRecorder { return &logRecorder{ch: make(chan string, 1024)} }

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	line := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "task" || a.Key == "pool" {
			line += " " + a.String()
		}
		return true
	})
	h.mu.Lock()
	h.lines = append(h.lines, line)
	h.mu.Unlock()
	select {
	case h.ch <- line:
	default:
	}
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }
func (h *logRecorder) get() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.lines)
}

var quiet = WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

func mustAcquire(t *testing.T, r *Registry, id int64, create func() (pool.Pool, error)) *Handle {
	t.Helper()
	h, err := r.Acquire(id, create)
	require.NoError(t, err)
	return h
}

func TestPlansInTheSameTaskShareOnePool(t *testing.T) {
	r, f := NewRegistry(quiet), &factory{}
	h1 := mustAcquire(t, r, 7, f.create)
	h2 := mustAcquire(t, r, 7, f.create)
	defer h1.Close()
	defer h2.Close()
	assert.Same(t, h1.Pool(), h2.Pool())
	assert.Len(t, f.created(), 1, "create ran once")
	assert.Equal(t, 1, r.Len())
	assert.Equal(t, int64(7), h2.TaskAttemptID())
}

func TestPlansInDifferentTasksGetDifferentPools(t *testing.T) {
	r, f := NewRegistry(quiet), &factory{}
	h1 := mustAcquire(t, r, 1, f.create)
	h2 := mustAcquire(t, r, 2, f.create)
	assert.NotSame(t, h1.Pool(), h2.Pool())
	assert.Equal(t, 2, r.Len())
	h1.Close()
	assert.Equal(t, 1, r.Len())
	assert.Equal(t, int32(0), f.created()[1].closes.Load(), "closing task 1 leaves task 2's pool open")
	h2.Close()
	assert.Equal(t, 0, r.Len())
}

func TestPoolIsRemovedOnlyAfterTheLastHandleCloses(t *testing.T) {
	r, f := NewRegistry(quiet), &factory{}
	h1 := mustAcquire(t, r, 3, f.create)
	h2 := mustAcquire(t, r, 3, f.create)
	p := f.created()[0]

	h1.Close()
	assert.Equal(t, 1, r.Len())
	assert.Equal(t, int32(0), p.closes.Load())
	h3 := mustAcquire(t, r, 3, f.create)
	assert.Same(t, pool.Pool(p), h3.Pool(), "a live entry is shared, not recreated")

	h2.Close()
	h3.Close()
	assert.Equal(t, 0, r.Len())
	assert.Equal(t, int32(1), p.closes.Load(), "the last Close closes the pool once")
	h4 := mustAcquire(t, r, 3, f.create)
	defer h4.Close()
	assert.NotSame(t, pool.Pool(p), h4.Pool(), "a new plan after the end gets a fresh pool")
}

// TestClosingTheOnlyHandleReleasesThePool simulates a plan whose
// construction fails after it joined the task's pool (Comet's createPlan
// unwinding, #5212 item (a)): its Close alone removes the entry and closes
// the pool, found through a decorator, logging the pool's leak report.
func TestClosingTheOnlyHandleReleasesThePool(t *testing.T) {
	rec := newLogRecorder()
	r := NewRegistry(WithLogger(slog.New(rec)))
	leak := &pool.LeakError{Pool: "greedy", Bytes: 10, Consumers: []pool.LeakedConsumer{{Name: "sort", ID: 1, Bytes: 10}}}
	inner := &closablePool{Pool: pool.NewGreedy(100), closeErr: leak}
	h, err := r.Acquire(9, func() (pool.Pool, error) { return wrapper{inner}, nil })
	require.NoError(t, err)

	h.Close()
	assert.Equal(t, 0, r.Len())
	assert.Equal(t, int32(1), inner.closes.Load())
	assert.Equal(t, []string{"ERROR taskshared: task pool closed with memory still reserved task=9 pool=greedy"}, rec.get())
}

// CloseReporting hands the pool's Close error to the call that closed the
// pool, and only to it: the JNI bridge rethrows a failed final release from
// that closePool0.
func TestCloseReportingReturnsThePoolsCloseErrorToTheLastCloserOnly(t *testing.T) {
	rec := newLogRecorder()
	r := NewRegistry(WithLogger(slog.New(rec)))
	failed := errors.New("releaseMemory threw")
	inner := &closablePool{Pool: pool.NewGreedy(100), closeErr: failed}
	create := func() (pool.Pool, error) { return inner, nil }
	h1, err := r.Acquire(4, create)
	require.NoError(t, err)
	h2, err := r.Acquire(4, create)
	require.NoError(t, err)

	require.NoError(t, h1.CloseReporting(), "not the last handle: the pool stays open")
	require.ErrorIs(t, h2.CloseReporting(), failed)
	require.NoError(t, h2.CloseReporting(), "a second close does nothing")
	assert.Equal(t, []string{"ERROR taskshared: closing the task pool failed task=4 pool=greedy",
		"DEBUG taskshared: handle closed twice; ignored task=4"}, rec.get())
}

// TestAnAcquireInTheDropWindowWaitsForTheOldPoolAndGetsANewOne opens the
// drop race: the last handle of the old pool has dropped its reference but
// its Close has not started when a new plan of the same task acquires. The
// new plan waits until the old pool is closed and its entry removed, then
// gets a new pool, which the old Close does not remove (compare-and-delete;
// Comet's an_old_pool_does_not_remove_its_replacement).
func TestAnAcquireInTheDropWindowWaitsForTheOldPoolAndGetsANewOne(t *testing.T) {
	r, f := NewRegistry(quiet), &factory{}
	inWindow, resume := make(chan struct{}), make(chan struct{})
	var resumeOnce sync.Once
	t.Cleanup(func() { resumeOnce.Do(func() { close(resume) }) })
	r.testHookRemoving = func(int64) {
		close(inWindow)
		<-resume
	}
	old := mustAcquire(t, r, 5, f.create)
	closed := make(chan struct{})
	go func() { old.Close(); close(closed) }()
	waitFor(t, inWindow)
	r.testHookRemoving = nil // only the old pool's Close waits

	repl := acquireAsync(r, 5, f.create)
	requireStillWaiting(t, repl, "a replacement was handed out before the old pool was closed")
	resumeOnce.Do(func() { close(resume) })
	waitFor(t, closed)
	h := awaitHandle(t, repl)
	require.NotSame(t, old.Pool(), h.Pool())

	assert.Equal(t, 1, r.Len(), "the replacement is still registered")
	again := mustAcquire(t, r, 5, f.create)
	assert.Same(t, h.Pool(), again.Pool())
	pools := f.created()
	assert.Equal(t, int32(1), pools[0].closes.Load())
	assert.Equal(t, int32(0), pools[1].closes.Load())
	h.Close()
	again.Close()
	assert.Equal(t, 0, r.Len())
}

// TestAReplacementWaitsForThePreviousPoolToFinishClosing: while the last
// handle's Close is inside the old pool's Close (returning its bytes to
// Spark), an acquire for the same task does not return, and its create runs
// only after that Close returned (Comet's
// a_replacement_waits_for_the_previous_pool_to_finish_dropping). Returning
// at all means the end of the teardown woke the waiter.
func TestAReplacementWaitsForThePreviousPoolToFinishClosing(t *testing.T) {
	r, f := NewRegistry(quiet), &factory{}
	old := mustAcquire(t, r, 5, f.create)
	oldPool := old.Pool().(*closablePool)
	inClose, finishClose := make(chan struct{}), make(chan struct{})
	var finishOnce sync.Once
	t.Cleanup(func() { finishOnce.Do(func() { close(finishClose) }) })
	oldPool.onClose = func() {
		close(inClose)
		<-finishClose
	}
	closed := make(chan struct{})
	go func() { old.Close(); close(closed) }()
	waitFor(t, inClose)

	var oldClosesSeenByCreate atomic.Int32
	oldClosesSeenByCreate.Store(-1)
	repl := acquireAsync(r, 5, func() (pool.Pool, error) {
		oldClosesSeenByCreate.Store(oldPool.closes.Load())
		return f.create()
	})
	requireStillWaiting(t, repl, "a replacement was handed out while the old pool was closing")
	assert.Equal(t, 1, r.Len(), "the old entry stays until its pool's Close returned")

	finishOnce.Do(func() { close(finishClose) })
	waitFor(t, closed)
	h := awaitHandle(t, repl)
	assert.NotSame(t, pool.Pool(oldPool), h.Pool())
	assert.Equal(t, int32(1), oldClosesSeenByCreate.Load(), "the replacement was created after the old Close returned")
	assert.Equal(t, 1, r.Len())
	h.Close()
	assert.Equal(t, 0, r.Len())
}

// TestAPanicInThePoolsCloseStillRemovesTheEntryAndWakesWaiters: the panic
// reaches the caller of the last Handle.Close unchanged; the entry is gone
// and an acquire that waited for the teardown creates a new pool.
func TestAPanicInThePoolsCloseStillRemovesTheEntryAndWakesWaiters(t *testing.T) {
	r, f := NewRegistry(quiet), &factory{}
	old := mustAcquire(t, r, 6, f.create)
	oldPool := old.Pool().(*closablePool)
	inClose, finishClose := make(chan struct{}), make(chan struct{})
	var finishOnce sync.Once
	t.Cleanup(func() { finishOnce.Do(func() { close(finishClose) }) })
	oldPool.onClose = func() {
		close(inClose)
		<-finishClose
		panic("close bug")
	}
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		old.Close()
	}()
	waitFor(t, inClose)
	repl := acquireAsync(r, 6, f.create)
	requireStillWaiting(t, repl, "a replacement was handed out while the old pool was closing")

	finishOnce.Do(func() { close(finishClose) })
	select {
	case v := <-panicked:
		assert.Equal(t, "close bug", v)
	case <-time.After(testTimeout):
		t.Fatal("timed out")
	}
	h := awaitHandle(t, repl)
	assert.NotSame(t, pool.Pool(oldPool), h.Pool())
	assert.Equal(t, 1, r.Len())
	h.Close()
	assert.Equal(t, 0, r.Len())
}

// handleResult is what an Acquire started in the background returned.
type handleResult struct {
	h   *Handle
	err error
}

// acquireAsync starts r.Acquire(id, create) on its own goroutine.
func acquireAsync(r *Registry, id int64, create func() (pool.Pool, error)) <-chan handleResult {
	ch := make(chan handleResult, 1)
	go func() {
		h, err := r.Acquire(id, create)
		ch <- handleResult{h, err}
	}()
	return ch
}

// requireStillWaiting fails the test if the background Acquire returns
// within 50 ms.
func requireStillWaiting(t *testing.T, ch <-chan handleResult, msg string) {
	t.Helper()
	select {
	case res := <-ch:
		if res.h != nil {
			res.h.Close()
		}
		t.Fatalf("%s (err %v)", msg, res.err)
	case <-time.After(50 * time.Millisecond):
	}
}

// awaitHandle waits for a background Acquire, failing on error or timeout.
func awaitHandle(t *testing.T, ch <-chan handleResult) *Handle {
	t.Helper()
	select {
	case res := <-ch:
		require.NoError(t, res.err)
		return res.h
	case <-time.After(testTimeout):
		t.Fatal("Acquire did not return: a wake-up was lost")
		return nil
	}
}

func waitFor(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testTimeout):
		t.Fatal("timed out")
	}
}

// TestConcurrentAcquireAndCloseLeavesAConsistentRegistry churns 8 goroutines
// × 1000 acquire/close cycles over 3 task ids. After every acquire the
// handle's pool is open (no plan ever joins a closed pool); at the end the
// registry is empty and every pool created was closed exactly once.
func TestConcurrentAcquireAndCloseLeavesAConsistentRegistry(t *testing.T) {
	r, f := NewRegistry(quiet), &factory{}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	g, ctx := errgroup.WithContext(ctx)
	for w := range 8 {
		g.Go(func() error {
			for i := range 1000 {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				h, err := r.Acquire(int64((w+i)%3), f.create)
				if err != nil {
					return err
				}
				if n := h.Pool().(*closablePool).closes.Load(); n != 0 {
					return fmt.Errorf("worker %d cycle %d joined a pool closed %d times", w, i, n)
				}
				if i%2 == 0 {
					runtime.Gosched()
				}
				h.Close()
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	assert.Equal(t, 0, r.Len())
	pools := f.created()
	for _, p := range pools {
		require.Equal(t, int32(1), p.closes.Load(), "pool %d", p.serial)
	}
	t.Logf("%d pools created for 8000 plans", len(pools))
}

func TestCreateRunsWithoutTheRegistryLockHeld(t *testing.T) {
	r, f := NewRegistry(quiet), &factory{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h := mustAcquire(t, r, 1, func() (pool.Pool, error) {
			other := mustAcquire(t, r, 2, f.create) // would deadlock under the lock
			defer other.Close()
			assert.Equal(t, 2, r.Len())
			return f.create()
		})
		h.Close()
	}()
	waitFor(t, done)
	assert.Equal(t, 0, r.Len())
}

func TestFailedCreateRegistersNothing(t *testing.T) {
	r, f := NewRegistry(quiet), &factory{}
	boom := errors.New("no upstream")
	h, err := r.Acquire(4, func() (pool.Pool, error) { return nil, boom })
	assert.Nil(t, h)
	assert.Same(t, boom, err)
	assert.Equal(t, 0, r.Len())

	_, err = r.Acquire(4, func() (pool.Pool, error) { return nil, nil })
	assert.EqualError(t, err, "taskshared: Acquire(4): create returned a nil pool")
	assert.Equal(t, 0, r.Len())

	assert.PanicsWithValue(t, "create panicked", func() {
		_, _ = r.Acquire(4, func() (pool.Pool, error) { panic("create panicked") })
	})
	assert.Equal(t, 0, r.Len())

	h = mustAcquire(t, r, 4, f.create)
	assert.Equal(t, 1, r.Len(), "a later create succeeds")
	h.Close()
}

// TestConcurrentCreatesForOneTaskShareASinglePool holds the first create
// while 8 more plans of the task arrive: all of them end up on its pool and
// create runs once.
func TestConcurrentCreatesForOneTaskShareASinglePool(t *testing.T) {
	r, f := NewRegistry(quiet), &factory{}
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	create := func() (pool.Pool, error) {
		if calls.Add(1) == 1 {
			close(entered)
			<-release
		}
		return f.create()
	}
	handles := make([]*Handle, 9)
	var g errgroup.Group
	g.Go(func() (err error) { handles[0], err = r.Acquire(6, create); return err })
	waitFor(t, entered)
	for i := 1; i < 9; i++ {
		g.Go(func() (err error) { handles[i], err = r.Acquire(6, create); return err })
	}
	time.Sleep(10 * time.Millisecond) // let them reach the wait
	close(release)
	require.NoError(t, g.Wait())
	for _, h := range handles {
		assert.Same(t, handles[0].Pool(), h.Pool())
	}
	assert.Equal(t, int32(1), calls.Load())
	assert.Equal(t, 1, r.Len())
	for _, h := range handles {
		h.Close()
	}
	assert.Equal(t, 0, r.Len())
	assert.Equal(t, int32(1), f.created()[0].closes.Load())
}

// TestWaitingPlansCreateTheirOwnPoolWhenTheFirstCreateFails: the plan whose
// create failed gets its error; a plan that was waiting for it is not
// handed that error but creates the pool itself.
func TestWaitingPlansCreateTheirOwnPoolWhenTheFirstCreateFails(t *testing.T) {
	r, f := NewRegistry(quiet), &factory{}
	entered, release := make(chan struct{}), make(chan struct{})
	boom := errors.New("first create failed")
	firstErr := make(chan error, 1)
	go func() {
		_, err := r.Acquire(8, func() (pool.Pool, error) {
			close(entered)
			<-release
			return nil, boom
		})
		firstErr <- err
	}()
	waitFor(t, entered)
	second := make(chan *Handle, 1)
	go func() {
		h, err := r.Acquire(8, f.create)
		assert.NoError(t, err)
		second <- h
	}()
	time.Sleep(10 * time.Millisecond)
	close(release)
	select {
	case err := <-firstErr:
		assert.Same(t, boom, err)
	case <-time.After(testTimeout):
		t.Fatal("timed out")
	}
	select {
	case h := <-second:
		require.NotNil(t, h)
		assert.Equal(t, 1, r.Len())
		h.Close()
	case <-time.After(testTimeout):
		t.Fatal("timed out")
	}
	assert.Equal(t, 0, r.Len())
}

func TestReleasingAnUnregisteredOrClosedHandleDoesNotPanic(t *testing.T) {
	rec := newLogRecorder()
	r, f := NewRegistry(WithLogger(slog.New(rec))), &factory{}
	var nilHandle *Handle
	assert.NotPanics(t, nilHandle.Close)
	assert.NotPanics(t, (&Handle{}).Close)
	assert.Nil(t, (&Handle{}).Pool())

	h1 := mustAcquire(t, r, 2, f.create)
	h2 := mustAcquire(t, r, 2, f.create)
	h1.Close()
	assert.NotPanics(t, h1.Close)
	assert.Equal(t, 1, r.Len(), "a second Close does not drop another plan's reference")
	assert.Equal(t, int32(0), f.created()[0].closes.Load())
	assert.Equal(t, []string{"DEBUG taskshared: handle closed twice; ignored task=2"}, rec.get())
	h2.Close()
	assert.Equal(t, 0, r.Len())
}

func TestSpecMismatchIsAnError(t *testing.T) {
	r, f := NewRegistry(quiet), &factory{}
	fair := Spec{Kind: "fair_unified", Size: 1 << 30, Chunk: 8 << 20}
	h1, err := r.AcquireSpec(11, fair, f.create)
	require.NoError(t, err)

	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: "greedy_unified", Chunk: 8 << 20},
			"taskshared: task 11: plan asks for pool greedy_unified(size: 0 B, chunk: 8388608 B) but the task's pool is fair_unified(size: 1073741824 B, chunk: 8388608 B): pool spec mismatch"},
		{Spec{Kind: "fair_unified", Size: 1 << 29, Chunk: 8 << 20},
			"taskshared: task 11: plan asks for pool fair_unified(size: 536870912 B, chunk: 8388608 B) but the task's pool is fair_unified(size: 1073741824 B, chunk: 8388608 B): pool spec mismatch"},
		{Spec{Kind: "fair_unified", Size: 1 << 30},
			"taskshared: task 11: plan asks for pool fair_unified(size: 1073741824 B, chunk: 0 B) but the task's pool is fair_unified(size: 1073741824 B, chunk: 8388608 B): pool spec mismatch"},
	} {
		h, err := r.AcquireSpec(11, tc.spec, f.create)
		assert.Nil(t, h)
		require.ErrorIs(t, err, ErrSpecMismatch)
		assert.Equal(t, tc.want, err.Error())
	}

	same, err := r.AcquireSpec(11, fair, f.create)
	require.NoError(t, err)
	plain := mustAcquire(t, r, 11, f.create) // unspecified: no check
	assert.Same(t, h1.Pool(), same.Pool())
	assert.Same(t, h1.Pool(), plain.Pool())
	assert.Len(t, f.created(), 1)

	h1.Close()
	same.Close()
	plain.Close()
	assert.Equal(t, 0, r.Len(), "refused plans took no reference")
	h, err := r.AcquireSpec(11, Spec{Kind: "greedy_unified"}, f.create)
	require.NoError(t, err, "after the task's pool is gone, another spec may start a new one")
	h.Close()
}

// TestMillionTaskLifecyclesLeaveTheRegistryEmptyAndTheHeapFlat runs one
// million task lifecycles (two plans each) through the registry: no entry
// survives, and the live heap after a GC is within 1 MiB of where it began.
// It takes about 1.3 s, 8 s under -race; -short skips it.
func TestMillionTaskLifecyclesLeaveTheRegistryEmptyAndTheHeapFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	r := NewRegistry(quiet)
	create := func() (pool.Pool, error) { return &closablePool{Pool: pool.NewUnbounded()}, nil }
	before := liveHeap()
	for id := range int64(1_000_000) {
		h1, err := r.Acquire(id, create)
		if err != nil {
			t.Fatal(err)
		}
		h2, err := r.Acquire(id, create)
		if err != nil {
			t.Fatal(err)
		}
		h1.Close()
		h2.Close()
	}
	require.Equal(t, 0, r.Len())
	after := liveHeap()
	t.Logf("heap before %d B, after %d B", before, after)
	assert.Less(t, int64(after)-int64(before), int64(1<<20))
	runtime.KeepAlive(r)
}

func liveHeap() uint64 {
	var m runtime.MemStats
	for range 3 { // cleanups queued by the first GC may free more
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestADroppedHandleIsReportedAndItsReferenceReleased drops a handle
// without Close and forces GCs until the detector reports it (or the test
// times out): the report names the task and the pool, and the entry goes
// away with the pool closed.
func TestADroppedHandleIsReportedAndItsReferenceReleased(t *testing.T) {
	rec := newLogRecorder()
	r, f := NewRegistry(WithLogger(slog.New(rec))), &factory{}
	func() {
		h := mustAcquire(t, r, 77, f.create)
		_ = h.Pool()
	}()
	deadline := time.After(testTimeout)
	for r.Len() != 0 {
		runtime.GC()
		select {
		case <-deadline:
			t.Fatal("the dropped handle was never reported")
		case <-time.After(time.Millisecond):
		}
	}
	assert.Equal(t, []string{"ERROR taskshared: handle dropped without Close; releasing its reference task=77 pool=greedy"}, rec.get())
	assert.Equal(t, int32(1), f.created()[0].closes.Load())
}

// TestAClosedHandleIsNotReportedAsDropped: Close stops the detector.
func TestAClosedHandleIsNotReportedAsDropped(t *testing.T) {
	rec := newLogRecorder()
	r, f := NewRegistry(WithLogger(slog.New(rec))), &factory{}
	keep := mustAcquire(t, r, 1, f.create)
	func() { mustAcquire(t, r, 1, f.create).Close() }()
	for range 5 {
		runtime.GC()
	}
	assert.Empty(t, rec.get())
	assert.Equal(t, 1, r.Len())
	keep.Close()
}

func TestAcquirePanicsOnNilCreate(t *testing.T) {
	assert.PanicsWithValue(t, "taskshared: Acquire(3): nil create", func() { _, _ = NewRegistry().Acquire(3, nil) })
}
