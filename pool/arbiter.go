package pool

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/timandy/routine"
)

// ExecutorArbiter is one executor-wide memory budget shared by concurrently
// running tasks, with the rules of Spark's TaskMemoryManager and
// ExecutionMemoryPool. It is the embedded default Upstream for Go engines
// that run without a JVM, and the in-process stand-in for Spark in tests.
//
// # Rules (reference/spark-side.md §1 and §3)
//
// Let N be the number of tasks that hold more than 0 bytes or are inside an
// acquire. A task never holds more than size/N. An acquire that cannot be
// met in full blocks while the task would still hold less than size/(2N),
// and wakes on any release, on a task entering the pool, on task Close and
// on arbiter Close. When the pool grants less than asked, the task's other
// consumers are asked to spill: the one with the smallest usage that covers
// the remaining need, else the largest; the requester itself last, and only
// if it holds bytes. A consumer whose spill frees nothing is not asked again
// during that acquire; after a positive spill the acquire is retried.
//
// # Threads and locks
//
// Each ArbiterTask has a monitor, like the TaskMemoryManager's: one Acquire
// per task at a time, held across the spill callbacks and the wait. Release
// never takes the monitor (Spark's releaseExecutionMemory is not synchronized
// on the TMM), so a spill callback may release re-entrantly and other
// goroutines of the task may release while one of them waits.
//
// The monitor is re-entrant for the goroutine that holds it, as Java's
// synchronized is for the thread: a spill callback runs on the goroutine of
// the acquire that called it, and an Acquire of the same task on that
// goroutine (a Spiller growing its own task's pool, through the pool's
// Upstream) proceeds without taking the monitor again. The nested acquire
// is a full one, as in Spark: it may wait for 1/2N (still holding the
// monitor) and may run its own spill loop over the task's consumers as they
// are then, the outer requester and the consumer whose callback is running
// included (a Spiller that grows during its spill must tolerate being asked
// to spill again, or free before it grows). The outer loop then goes on
// with its candidate list as it was. Any other goroutine, one the callback
// started or handed work to included, still queues on the monitor until
// the outer acquire returns: a callback that waits for such a goroutine's
// Acquire deadlocks, as it does in Spark (here the task's context or Close
// ends it). Spark's MemoryConsumer.spill doc advises against acquiring from
// spill; this only makes it behave as Spark does when it happens.
//
// # Where it differs from Spark
//
//   - Waiting is cancellable: the task's context, ArbiterTask.Close and
//     ExecutorArbiter.Close wake a waiter (and a goroutine queued on the
//     monitor) with an error, and nothing stays granted. Spark's wait can
//     only be interrupted.
//   - A spill counts as positive only by the bytes the task really released
//     during the callback, net of what acquires nested in the callback took,
//     so a callback that claims bytes without releasing them, or that
//     releases them and acquires them again, cannot spin the spill loop (in
//     Spark it can, see TaskMemoryManager.trySpillAndAcquire).
//   - A task that leaves acquire holding 0 bytes leaves N at once (Spark
//     keeps a zero entry until the task releases or ends).
//   - An error from a spill callback releases what the acquire had gathered
//     so far and is returned, since the Upstream contract says an error
//     grants nothing; a panic releases it too, and propagates.
//
// An ExecutorArbiter is safe for concurrent use by multiple goroutines. Build
// one with NewExecutorArbiter; the zero value is not usable.
type ExecutorArbiter struct {
	size   int64
	logger *slog.Logger
	// done is closed by Close; waiters and monitor queues select on it.
	done chan struct{}

	waits        atomic.Int64 // acquires that blocked for 1/2N at least once
	spills       atomic.Int64 // spill callbacks invoked
	spilledBytes atomic.Int64 // bytes those callbacks released
	overReleases atomic.Int64 // releases larger than held (clamped) or after Close

	// mu is the arbiter's lock (Spark's MemoryManager monitor). It guards
	// every task's balance, every consumer's used count and the consumer
	// lists. It is never held across a spill callback or a wait. Lock order:
	// a task's monitor, then mu; never take a monitor while holding mu.
	mu struct {
		sync.Mutex
		used   int64                  // bytes granted to all tasks and not released
		peak   int64                  // high-water mark of used
		tasks  map[*ArbiterTask]int64 // active tasks (N = len) and their balances
		open   int                    // tasks made by NewTask and not yet closed
		closed bool                   // set once by Close
		// wake is closed (and replaced) to wake every waiter: Spark's
		// notifyAll. waiters counts goroutines holding the current wake, so
		// releases without waiters allocate nothing.
		wake    chan struct{}
		waiters int
	}
}

// ArbiterOption configures NewExecutorArbiter.
type ArbiterOption func(*ExecutorArbiter)

// WithArbiterLogger sets where the arbiter logs waits, clamped releases and
// leaks at task Close. The default is slog.Default().
func WithArbiterLogger(l *slog.Logger) ArbiterOption {
	return func(a *ExecutorArbiter) {
		if l != nil {
			a.logger = l
		}
	}
}

// NewExecutorArbiter returns an arbiter over a budget of size bytes. It
// panics on a negative size. A size of 0 grants nothing and never blocks,
// like Spark with spark.memory.offHeap.size=0.
func NewExecutorArbiter(size int64, opts ...ArbiterOption) *ExecutorArbiter {
	if size < 0 {
		panic(fmt.Sprintf("pool: NewExecutorArbiter(%d): negative size", size))
	}
	a := &ExecutorArbiter{size: size, logger: slog.Default(), done: make(chan struct{})}
	a.mu.tasks = make(map[*ArbiterTask]int64)
	a.mu.wake = make(chan struct{})
	for _, o := range opts {
		o(a)
	}
	return a
}

// NewTask registers a task (Spark's TaskMemoryManager for one task attempt).
// ctx bounds every wait of the task: when it is done, a blocked Acquire
// returns an error wrapping ctx.Err(), and later acquires fail the same way.
// A nil ctx means context.Background(). name appears in logs and errors.
// Close the task when it ends.
func (a *ExecutorArbiter) NewTask(ctx context.Context, name string) *ArbiterTask {
	if ctx == nil {
		ctx = context.Background()
	}
	t := &ArbiterTask{arb: a, ctx: ctx, name: name, monitor: make(chan struct{}, 1), done: make(chan struct{})}
	a.mu.Lock()
	a.mu.open++
	a.mu.Unlock()
	return t
}

// Size is the arbiter's budget in bytes.
func (a *ExecutorArbiter) Size() int64 { return a.size }

// Used is the number of bytes granted to tasks and not yet released.
func (a *ExecutorArbiter) Used() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.used
}

// ArbiterStats is a snapshot of an arbiter's accounting.
type ArbiterStats struct {
	Size         int64 // the budget
	Used         int64 // bytes granted and not released
	Peak         int64 // high-water mark of Used
	OpenTasks    int   // tasks made by NewTask and not closed
	ActiveTasks  int   // N: tasks holding bytes or inside an acquire
	Waits        int64 // acquires that blocked waiting for 1/2N of the pool
	Spills       int64 // spill callbacks invoked
	SpilledBytes int64 // bytes those callbacks released
	OverReleases int64 // releases of more than held (clamped) or after task Close
}

// Stats returns a snapshot of the arbiter's accounting.
func (a *ExecutorArbiter) Stats() ArbiterStats {
	a.mu.Lock()
	s := ArbiterStats{Size: a.size, Used: a.mu.used, Peak: a.mu.peak, OpenTasks: a.mu.open, ActiveTasks: len(a.mu.tasks)}
	a.mu.Unlock()
	s.Waits = a.waits.Load()
	s.Spills = a.spills.Load()
	s.SpilledBytes = a.spilledBytes.Load()
	s.OverReleases = a.overReleases.Load()
	return s
}

// Close shuts the arbiter: blocked acquires wake with an error wrapping
// ErrClosed, later acquires fail the same way, and releases keep working so
// tasks can still return what they hold. Close is idempotent.
func (a *ExecutorArbiter) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.closed {
		return
	}
	a.mu.closed = true
	close(a.done)
	a.notifyAllLocked()
}

// String describes the arbiter, e.g. "executor_arbiter(used: 1.0 KiB, pool_size: 1.0 MiB, active_tasks: 2)".
func (a *ExecutorArbiter) String() string {
	s := a.Stats()
	return fmt.Sprintf("executor_arbiter(used: %s, pool_size: %s, active_tasks: %d)",
		HumanReadableSize(s.Used), HumanReadableSize(s.Size), s.ActiveTasks)
}

// notifyAllLocked wakes every waiter. a.mu must be held.
func (a *ExecutorArbiter) notifyAllLocked() {
	if a.mu.waiters > 0 {
		close(a.mu.wake)
		a.mu.wake = make(chan struct{})
	}
}

// grantLocked adds n bytes to t's balance. a.mu must be held.
func (a *ExecutorArbiter) grantLocked(t *ArbiterTask, n int64) {
	a.mu.tasks[t] += n
	a.mu.used += n
	a.mu.peak = max(a.mu.peak, a.mu.used)
	t.peak = max(t.peak, a.mu.tasks[t])
}

// takeLocked removes n ≤ balance bytes from t's balance, drops t from the
// active set when it reaches 0 and wakes waiters. a.mu must be held.
func (a *ExecutorArbiter) takeLocked(t *ArbiterTask, n int64) {
	bal := a.mu.tasks[t] - n
	a.mu.used -= n
	if bal <= 0 {
		delete(a.mu.tasks, t)
	} else {
		a.mu.tasks[t] = bal
	}
	a.notifyAllLocked()
}

// openErrLocked returns why t may not acquire, or nil. a.mu must be held.
func (a *ExecutorArbiter) openErrLocked(t *ArbiterTask) error {
	switch {
	case t.closed:
		return fmt.Errorf("pool: arbiter task %q: acquire after task Close: %w", t.name, ErrClosed)
	case a.mu.closed:
		return fmt.Errorf("pool: arbiter task %q: acquire after arbiter Close: %w", t.name, ErrClosed)
	}
	if err := t.ctx.Err(); err != nil {
		return fmt.Errorf("pool: arbiter task %q: acquire cancelled: %w", t.name, err)
	}
	return nil
}

// acquireMemory is ExecutionMemoryPool.acquireMemory: it grants t at most
// n > 0 bytes within its 1/N cap, blocking while t would stay below 1/2N
// and the request cannot be met. On error t gained nothing.
func (a *ExecutorArbiter) acquireMemory(t *ArbiterTask, n int64) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	waited := false
	for {
		if err := a.openErrLocked(t); err != nil {
			if bal, ok := a.mu.tasks[t]; ok && bal == 0 {
				a.takeLocked(t, 0)
			}
			return 0, err
		}
		cur, ok := a.mu.tasks[t]
		if !ok {
			// A task entering the pool changes N: wake waiters so they
			// recompute their share (Spark's notifyAll on registration).
			a.mu.tasks[t] = 0
			a.notifyAllLocked()
		}
		numActive := int64(len(a.mu.tasks))
		maxPerTask := a.size / numActive
		minPerTask := a.size / (2 * numActive)
		maxToGrant := min(n, max(0, maxPerTask-cur))
		toGrant := max(0, min(maxToGrant, a.size-a.mu.used))
		if toGrant < n && cur+toGrant < minPerTask {
			if !waited {
				waited = true
				a.waits.Add(1)
				t.waits.Add(1)
				a.logger.Debug("pool: task waiting for at least 1/2N of the executor arbiter",
					"task", t.name, "request", n, "held", cur, "active_tasks", numActive)
			}
			wake := a.mu.wake
			a.mu.waiters++
			a.mu.Unlock()
			select {
			case <-wake:
			case <-t.ctx.Done():
			case <-t.done:
			case <-a.done:
			}
			a.mu.Lock()
			a.mu.waiters--
			continue
		}
		a.grantLocked(t, toGrant)
		if a.mu.tasks[t] == 0 {
			a.takeLocked(t, 0)
		}
		return toGrant, nil
	}
}

// ArbiterTask is one task's memory manager inside an ExecutorArbiter
// (Spark's TaskMemoryManager): it owns the task's consumers and its monitor.
// It is safe for concurrent use by multiple goroutines; build it with
// ExecutorArbiter.NewTask, the zero value is not usable.
type ArbiterTask struct {
	arb  *ExecutorArbiter
	ctx  context.Context
	name string
	// monitor is the TMM monitor as a one-slot semaphore, so that queuing
	// on it is cancellable. Held by Acquire across spills and waits.
	monitor chan struct{}
	// spillOwner makes the monitor re-entrant: it is the id
	// (routine.Goid, read from the runtime, never parsed from a stack) of
	// the goroutine that holds the monitor while that goroutine runs a spill
	// callback, and 0 otherwise. Only that goroutine writes it: it sets it
	// around each callback and restores the previous value after (a nested
	// acquire's callbacks set the same id again). Another goroutine only
	// compares it with its own id, which never matches, so it queues on the
	// monitor.
	spillOwner atomic.Uint64
	// done is closed by Close (under arb.mu).
	done chan struct{}
	// released counts every byte the task's consumers released, acquired
	// every byte its acquires handed out; a spill callback is credited with
	// the increase of released minus that of acquired (what nested acquires
	// took back during it).
	released atomic.Int64
	acquired atomic.Int64
	waits    atomic.Int64
	spills   atomic.Int64

	// Guarded by arb.mu.
	closed    bool
	peak      int64
	consumers []*ArbiterConsumer
}

// Name is the name given to NewTask.
func (t *ArbiterTask) Name() string { return t.name }

// Used is the number of bytes the task holds (its consumers' total, plus
// bytes an acquire in progress has gathered).
func (t *ArbiterTask) Used() int64 {
	t.arb.mu.Lock()
	defer t.arb.mu.Unlock()
	return t.arb.mu.tasks[t]
}

// ArbiterTaskStats is a snapshot of one task's accounting.
type ArbiterTaskStats struct {
	Used   int64 // bytes held
	Peak   int64 // high-water mark of Used
	Waits  int64 // acquires that blocked for 1/2N
	Spills int64 // spill callbacks invoked on this task's consumers
}

// Stats returns a snapshot of the task's accounting.
func (t *ArbiterTask) Stats() ArbiterTaskStats {
	t.arb.mu.Lock()
	s := ArbiterTaskStats{Used: t.arb.mu.tasks[t], Peak: t.peak}
	t.arb.mu.Unlock()
	s.Waits = t.waits.Load()
	s.Spills = t.spills.Load()
	return s
}

// NewConsumer registers a consumer of the task (Spark's MemoryConsumer). Its
// Acquire and Release make it an Upstream. spill is called when another
// acquire of the task runs short; it may be nil and may be set later with
// SetReclaimer. A consumer of a closed task refuses every acquire.
func (t *ArbiterTask) NewConsumer(name string, spill Reclaimer) *ArbiterConsumer {
	c := &ArbiterConsumer{task: t, name: name}
	c.SetReclaimer(spill)
	t.arb.mu.Lock()
	t.consumers = append(t.consumers, c)
	t.arb.mu.Unlock()
	return c
}

// Close ends the task (Spark's cleanUpAllAllocatedMemory): it force-releases
// everything the task's consumers hold, wakes every waiter (a blocked
// Acquire of this task returns an error wrapping ErrClosed and keeps
// nothing) and makes later acquires fail. It returns the bytes it released
// and logs a warning naming the consumers when that is not 0. Releases after
// Close return an error and change nothing. Close is idempotent.
func (t *ArbiterTask) Close() int64 {
	a := t.arb
	a.mu.Lock()
	if t.closed {
		a.mu.Unlock()
		return 0
	}
	t.closed = true
	close(t.done)
	held := a.mu.tasks[t]
	var leaks []any
	for _, c := range t.consumers {
		if c.used > 0 {
			leaks = append(leaks, slog.Int64(c.name, c.used))
		}
		c.used = 0
	}
	a.mu.open--
	if _, ok := a.mu.tasks[t]; ok {
		a.takeLocked(t, held)
	} else {
		a.notifyAllLocked()
	}
	a.mu.Unlock()
	if held > 0 {
		a.logger.Warn("pool: arbiter task closed while holding memory",
			"task", t.name, "bytes", held, slog.Group("consumers", leaks...))
	}
	return held
}

// lockMonitor enters the task's monitor, or returns why it may not.
func (t *ArbiterTask) lockMonitor() error {
	select {
	case t.monitor <- struct{}{}:
		return nil
	default:
	}
	select {
	case t.monitor <- struct{}{}:
		return nil
	case <-t.ctx.Done():
		return fmt.Errorf("pool: arbiter task %q: acquire cancelled: %w", t.name, t.ctx.Err())
	case <-t.done:
		return fmt.Errorf("pool: arbiter task %q: acquire after task Close: %w", t.name, ErrClosed)
	case <-t.arb.done:
		return fmt.Errorf("pool: arbiter task %q: acquire after arbiter Close: %w", t.name, ErrClosed)
	}
}

func (t *ArbiterTask) unlockMonitor() { <-t.monitor }

// holdsMonitorInSpill reports whether the calling goroutine holds t's
// monitor and is running a spill callback of it: then an acquire on t is
// re-entrant and must not take the monitor again.
func (t *ArbiterTask) holdsMonitorInSpill() bool {
	owner := t.spillOwner.Load()
	return owner != 0 && owner == routine.Goid()
}

// acquire is TaskMemoryManager.acquireExecutionMemory for requester c. On
// the goroutine that holds the monitor (in a spill callback) it re-enters
// without taking the monitor, like Java's synchronized.
func (t *ArbiterTask) acquire(c *ArbiterConsumer, n int64) (int64, error) {
	if !t.holdsMonitorInSpill() {
		if err := t.lockMonitor(); err != nil {
			return 0, err
		}
		defer t.unlockMonitor()
	}
	a := t.arb
	got, err := a.acquireMemory(t, n)
	if err != nil {
		return 0, err
	}
	if got < n {
		if got, err = t.spillAndAcquire(c, n, got); err != nil {
			return 0, err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.closed {
		// Close already force-released the bytes gathered here.
		return 0, fmt.Errorf("pool: arbiter task %q: closed during acquire: %w", t.name, ErrClosed)
	}
	c.used += got
	t.acquired.Add(got)
	return got, nil
}

// candidate is a consumer that may be asked to spill, with its sort key:
// its usage when the shortfall was seen, 0 for the requester (Spark's
// TreeMap keys; stale after a spill, as in Spark).
type candidate struct {
	key int64
	c   *ArbiterConsumer
}

// spillAndAcquire runs Spark's spill loop after a short grant of got < n.
// On error (or a panic in a spill callback) everything gathered is released
// and 0 is returned.
func (t *ArbiterTask) spillAndAcquire(requester *ArbiterConsumer, n, got int64) (_ int64, err error) {
	a := t.arb
	ok := false
	defer func() {
		if !ok {
			t.rollback(got)
		}
	}()
	a.mu.Lock()
	cands := make([]candidate, 0, len(t.consumers))
	for _, c := range t.consumers {
		if c.used <= 0 {
			continue
		}
		key := c.used
		if c == requester {
			key = 0 // "so that it is always last in priority order"
		}
		cands = append(cands, candidate{key: key, c: c})
	}
	a.mu.Unlock()
	slices.SortStableFunc(cands, func(x, y candidate) int { return cmpInt64(x.key, y.key) })

	for got < n && len(cands) > 0 {
		need := n - got
		i := pickSpillCandidate(cands, need)
		freed, err := t.spill(cands[i].c, need)
		if err != nil {
			return 0, err
		}
		if freed <= 0 {
			cands = slices.Delete(cands, i, i+1)
			continue
		}
		more, err := a.acquireMemory(t, need)
		if err != nil {
			return 0, err
		}
		got += more
	}
	ok = true
	return got, nil
}

// pickSpillCandidate returns the index of the candidate with the smallest
// key ≥ need (Spark's ceilingEntry), else of the largest key (lastEntry);
// among equal keys the last one. cands is sorted by key.
func pickSpillCandidate(cands []candidate, need int64) int {
	i, _ := slices.BinarySearchFunc(cands, need, func(c candidate, need int64) int { return cmpInt64(c.key, need) })
	if i == len(cands) {
		return len(cands) - 1
	}
	k := cands[i].key
	for i+1 < len(cands) && cands[i+1].key == k {
		i++
	}
	return i
}

func cmpInt64(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// spill asks victim to release need bytes and returns what the task really
// released during the callback, net of what acquires nested in it took,
// capped at what the callback claimed. The caller holds the monitor; the
// callback runs with re-entry allowed for this goroutine.
func (t *ArbiterTask) spill(victim *ArbiterConsumer, need int64) (int64, error) {
	r := victim.reclaimer()
	if r == nil {
		return 0, nil
	}
	a := t.arb
	prevOwner := t.spillOwner.Load()
	t.spillOwner.Store(routine.Goid())
	defer t.spillOwner.Store(prevOwner) // also when the callback panics
	releasedBefore, acquiredBefore := t.released.Load(), t.acquired.Load()
	claimed, err := r.Reclaim(need)
	released := t.released.Load() - releasedBefore
	reacquired := t.acquired.Load() - acquiredBefore
	net := max(released-reacquired, 0)
	a.spills.Add(1)
	t.spills.Add(1)
	a.spilledBytes.Add(released)
	if err != nil {
		return 0, fmt.Errorf("pool: arbiter task %q: spill of consumer %q: %w", t.name, victim.name, err)
	}
	if claimed > net {
		a.logger.Warn("pool: spill callback reported more bytes than it released",
			"task", t.name, "consumer", victim.name, "claimed", claimed, "released", released,
			"reacquired", reacquired)
	}
	return min(max(claimed, 0), net), nil
}

// rollback gives back bytes an acquire gathered before failing.
func (t *ArbiterTask) rollback(got int64) {
	if got == 0 {
		return
	}
	a := t.arb
	a.mu.Lock()
	defer a.mu.Unlock()
	if !t.closed { // Close already released them otherwise
		a.takeLocked(t, min(got, a.mu.tasks[t]))
	}
}

// ArbiterConsumer is one memory consumer of an ArbiterTask (Spark's
// MemoryConsumer) and the Upstream a unified pool borrows from. Its Acquire
// follows Spark's rules (see ExecutorArbiter) and may block and run spill
// callbacks of the task's consumers, this one last, on the calling
// goroutine; such a callback may Acquire again on that goroutine. It is
// safe for concurrent use by multiple goroutines; build it with
// ArbiterTask.NewConsumer, the zero value is not usable.
type ArbiterConsumer struct {
	task  *ArbiterTask
	name  string
	spill atomic.Pointer[reclaimerBox]
	used  int64 // guarded by task.arb.mu
}

type reclaimerBox struct{ r Reclaimer }

// Name is the name given to NewConsumer.
func (c *ArbiterConsumer) Name() string { return c.name }

// SetReclaimer sets (or, with nil, clears) the spill callback. A unified
// pool needs its Upstream before it exists, so build the consumer first and
// set the pool as its reclaimer afterwards. Safe to call at any time.
func (c *ArbiterConsumer) SetReclaimer(r Reclaimer) {
	if r == nil {
		c.spill.Store(nil)
		return
	}
	c.spill.Store(&reclaimerBox{r: r})
}

func (c *ArbiterConsumer) reclaimer() Reclaimer {
	if b := c.spill.Load(); b != nil {
		return b.r
	}
	return nil
}

// Used is the number of bytes this consumer holds.
func (c *ArbiterConsumer) Used() int64 {
	c.task.arb.mu.Lock()
	defer c.task.arb.mu.Unlock()
	return c.used
}

// Acquire asks the executor for n bytes on behalf of this consumer and
// returns how many were granted (0 ≤ granted ≤ n). It may block until the
// task holds 1/2N of the pool, and may call the spill callbacks of the
// task's consumers on this goroutine first; see ExecutorArbiter. Called
// from such a callback on the same goroutine, it re-enters the task's
// monitor instead of waiting for it. It fails, granting nothing, with an
// error wrapping the context's error when the task's context ends,
// ErrClosed when the task or the arbiter is closed (also while waiting),
// ErrInvalidSize when n < 0, or the error of a spill callback. n == 0
// grants 0 without error.
func (c *ArbiterConsumer) Acquire(n int64) (int64, error) {
	if n < 0 {
		return 0, fmt.Errorf("pool: Acquire(%d): negative size: %w", n, ErrInvalidSize)
	}
	if n == 0 {
		return 0, nil
	}
	return c.task.acquire(c, n)
}

// Release gives back n bytes this consumer holds and wakes waiting tasks. It
// never takes the task's monitor, so a spill callback may call it. Asking to
// release more than held is a caller bug: it is logged, clamped to what the
// consumer holds and reported with an error wrapping ErrInvalidSize. After
// the task's Close, Release changes nothing and returns an error wrapping
// ErrClosed (Close already released everything).
func (c *ArbiterConsumer) Release(n int64) error {
	if n < 0 {
		return fmt.Errorf("pool: Release(%d): negative size: %w", n, ErrInvalidSize)
	}
	if n == 0 {
		return nil
	}
	t := c.task
	a := t.arb
	a.mu.Lock()
	if t.closed {
		a.mu.Unlock()
		a.overReleases.Add(1)
		a.logger.Debug("pool: release after arbiter task Close ignored",
			"task", t.name, "consumer", c.name, "bytes", n)
		return fmt.Errorf("pool: arbiter task %q: Release(%d) after task Close: %w", t.name, n, ErrClosed)
	}
	var err error
	if n > c.used {
		err = fmt.Errorf("pool: consumer %q of task %q: Release(%d) but it holds %d: %w",
			c.name, t.name, n, c.used, ErrInvalidSize)
		n = c.used
	}
	c.used -= n
	a.takeLocked(t, n)
	t.released.Add(n)
	a.mu.Unlock()
	if err != nil {
		a.overReleases.Add(1)
		a.logger.Error("pool: executor arbiter release exceeds what the consumer holds; clamped",
			"task", t.name, "consumer", c.name, "err", err)
	}
	return err
}

var _ Upstream = (*ArbiterConsumer)(nil)
