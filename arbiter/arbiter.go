package arbiter

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/nativepool/nativepool/pool"
)

// Arbiter is one executor-wide memory budget shared by concurrently
// running tasks, with the rules of Spark's TaskMemoryManager and
// ExecutionMemoryPool. It is the embedded default Upstream for Go engines
// that run without a JVM, and the in-process stand-in for Spark in tests.
//
// # Rules (Spark's ExecutionMemoryPool and TaskMemoryManager)
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
// Each Task has a monitor, like the TaskMemoryManager's: one Acquire
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
// included. A unified pool whose Reclaim is the running callback answers
// that nested spill with 0 at once (its Reclaim is never entered again on
// the goroutine running it), so a Spiller that grows its own pool gets a
// short grant or a refusal instead of being spilled again without end. The
// outer loop then goes on with its candidate list as it was. Any other goroutine, one the callback
// started or handed work to included, still queues on the monitor until
// the outer acquire returns: a callback that waits for such a goroutine's
// Acquire deadlocks, as it does in Spark (here the task's context or Close
// ends it). Spark's MemoryConsumer.spill doc advises against acquiring from
// spill; this only makes it behave as Spark does when it happens.
//
// # Where it differs from Spark
//
//   - Waiting is cancellable: the task's context, Task.Close and
//     Arbiter.Close wake a waiter (and a goroutine queued on the
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
// An Arbiter is safe for concurrent use by multiple goroutines. Build
// one with New; the zero value is not usable.
type Arbiter struct {
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
		used   int64 // bytes granted to all tasks and not released
		peak   int64 // high-water mark of used
		active int   // active tasks: N (each one's balance is Task.balance)
		open   int   // tasks made by NewTask and not yet closed
		closed bool  // set once by Close
		// wake is closed (and replaced) to wake every waiter: Spark's
		// notifyAll. waiters counts goroutines holding the current wake, so
		// releases without waiters allocate nothing.
		wake    chan struct{}
		waiters int
		// shares caches sharesLocked's figures for the N they were
		// computed for (0: none yet).
		shares struct {
			n        int
			max, min int64
		}
	}
}

// Option configures New.
type Option func(*Arbiter)

// WithLogger sets where the arbiter logs waits, clamped releases and
// leaks at task Close. The default is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(a *Arbiter) {
		if l != nil {
			a.logger = l
		}
	}
}

// New returns an arbiter over a budget of size bytes. It
// panics on a negative size. A size of 0 grants nothing and never blocks,
// like Spark with spark.memory.offHeap.size=0.
func New(size int64, opts ...Option) *Arbiter {
	if size < 0 {
		panic(fmt.Sprintf("arbiter: New(%d): negative size", size))
	}
	a := &Arbiter{size: size, logger: slog.Default(), done: make(chan struct{})}
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
func (a *Arbiter) NewTask(ctx context.Context, name string) *Task {
	if ctx == nil {
		ctx = context.Background()
	}
	t := &Task{arb: a, ctx: ctx, name: name, done: make(chan struct{})}
	a.mu.Lock()
	a.mu.open++
	a.mu.Unlock()
	return t
}

// Size is the arbiter's budget in bytes.
func (a *Arbiter) Size() int64 { return a.size }

// Used is the number of bytes granted to tasks and not yet released.
func (a *Arbiter) Used() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.used
}

// Stats is a snapshot of an arbiter's accounting.
type Stats struct {
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
func (a *Arbiter) Stats() Stats {
	a.mu.Lock()
	s := Stats{Size: a.size, Used: a.mu.used, Peak: a.mu.peak, OpenTasks: a.mu.open, ActiveTasks: a.mu.active}
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
func (a *Arbiter) Close() {
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
func (a *Arbiter) String() string {
	s := a.Stats()
	return fmt.Sprintf("executor_arbiter(used: %s, pool_size: %s, active_tasks: %d)",
		pool.HumanReadableSize(s.Used), pool.HumanReadableSize(s.Size), s.ActiveTasks)
}

// notifyAllLocked wakes every waiter. a.mu must be held.
func (a *Arbiter) notifyAllLocked() {
	if a.mu.waiters > 0 {
		close(a.mu.wake)
		a.mu.wake = make(chan struct{})
	}
}

// grantLocked adds n bytes to t's balance. a.mu must be held.
func (a *Arbiter) grantLocked(t *Task, n int64) {
	t.balance += n
	a.mu.used += n
	a.mu.peak = max(a.mu.peak, a.mu.used)
	t.peak = max(t.peak, t.balance)
}

// takeLocked removes n ≤ balance bytes from t's balance, drops t from the
// active set when it reaches 0 and wakes waiters. a.mu must be held.
func (a *Arbiter) takeLocked(t *Task, n int64) {
	t.balance -= n
	a.mu.used -= n
	if t.balance <= 0 {
		t.balance = 0
		a.leaveLocked(t)
	}
	a.notifyAllLocked()
}

// sharesLocked returns Spark's 1/N cap and 1/2N floor for the current N,
// from a cache keyed by N: a run of acquires pays a compare instead of two
// 64-bit divisions. a.mu must be held and N must be positive.
func (a *Arbiter) sharesLocked() (maxPerTask, minPerTask int64) {
	c := &a.mu.shares
	if c.n != a.mu.active {
		n := int64(a.mu.active)
		c.n, c.max, c.min = a.mu.active, a.size/n, a.size/(2*n)
	}
	return c.max, c.min
}

// enterLocked counts t among the active tasks (N), if it is not yet.
// a.mu must be held. It reports whether t was not active.
func (a *Arbiter) enterLocked(t *Task) bool {
	if t.active {
		return false
	}
	t.active = true
	a.mu.active++
	return true
}

// leaveLocked removes t from the active tasks, if it is one. a.mu must be
// held.
func (a *Arbiter) leaveLocked(t *Task) {
	if t.active {
		t.active = false
		a.mu.active--
	}
}

// openErrLocked returns why t may not acquire, or nil. a.mu must be held.
func (a *Arbiter) openErrLocked(t *Task) error {
	switch {
	case t.closed:
		return fmt.Errorf("arbiter: task %q: acquire after task Close: %w", t.name, pool.ErrClosed)
	case a.mu.closed:
		return fmt.Errorf("arbiter: task %q: acquire after arbiter Close: %w", t.name, pool.ErrClosed)
	}
	if err := t.ctx.Err(); err != nil {
		return fmt.Errorf("arbiter: task %q: acquire cancelled: %w", t.name, err)
	}
	return nil
}

// acquireMemory is ExecutionMemoryPool.acquireMemory: it grants t at most
// n > 0 bytes within its 1/N cap, blocking while t would stay below 1/2N
// and the request cannot be met. On error t gained nothing. When the grant
// is all of n and c is not nil, it also books the bytes to c under the same
// lock (the common case of an acquire, which then needs no second lock) and
// reports done.
func (a *Arbiter) acquireMemory(t *Task, c *Consumer, n int64) (got int64, done bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	waited := false
	for {
		if err := a.openErrLocked(t); err != nil {
			if t.active && t.balance == 0 {
				a.takeLocked(t, 0)
			}
			return 0, false, err
		}
		cur := t.balance
		if a.enterLocked(t) {
			// A task entering the pool changes N: wake waiters so they
			// recompute their share (Spark's notifyAll on registration).
			a.notifyAllLocked()
		}
		maxPerTask, minPerTask := a.sharesLocked()
		maxToGrant := min(n, max(0, maxPerTask-cur))
		toGrant := max(0, min(maxToGrant, a.size-a.mu.used))
		if toGrant < n && cur+toGrant < minPerTask {
			if !waited {
				waited = true
				a.waits.Add(1)
				t.waits.Add(1)
				a.logger.Debug("arbiter: task waiting for at least 1/2N of the executor arbiter",
					"task", t.name, "request", n, "held", cur, "active_tasks", a.mu.active)
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
		if t.balance == 0 {
			a.takeLocked(t, 0)
		}
		if c != nil && toGrant == n {
			c.used += n
			t.acquired.Add(n)
			return n, true, nil
		}
		return toGrant, false, nil
	}
}
