package arbiter

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/timandy/routine"

	"github.com/nativepool/nativepool/pool"
)

// Task is one task's memory manager inside an Arbiter
// (Spark's TaskMemoryManager): it owns the task's consumers and its monitor.
// It is safe for concurrent use by multiple goroutines; build it with
// Arbiter.NewTask, the zero value is not usable.
type Task struct {
	arb  *Arbiter
	ctx  context.Context
	name string
	// monitor is the TMM monitor, a lock whose queue is cancellable
	// (taskMonitor). Held by Acquire across spills and waits.
	monitor taskMonitor
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
	closed bool
	peak   int64
	// balance is what the task holds in the arbiter (its consumers' total,
	// plus what an acquire in progress gathered), and active whether it
	// counts among the N active tasks; both guarded by arb.mu.
	balance   int64
	active    bool
	consumers []*Consumer
}

// Name is the name given to NewTask.
func (t *Task) Name() string { return t.name }

// Used is the number of bytes the task holds (its consumers' total, plus
// bytes an acquire in progress has gathered).
func (t *Task) Used() int64 {
	t.arb.mu.Lock()
	defer t.arb.mu.Unlock()
	return t.balance
}

// TaskStats is a snapshot of one task's accounting.
type TaskStats struct {
	Used   int64 // bytes held
	Peak   int64 // high-water mark of Used
	Waits  int64 // acquires that blocked for 1/2N
	Spills int64 // spill callbacks invoked on this task's consumers
}

// Stats returns a snapshot of the task's accounting.
func (t *Task) Stats() TaskStats {
	t.arb.mu.Lock()
	s := TaskStats{Used: t.balance, Peak: t.peak}
	t.arb.mu.Unlock()
	s.Waits = t.waits.Load()
	s.Spills = t.spills.Load()
	return s
}

// NewConsumer registers a consumer of the task (Spark's MemoryConsumer). Its
// Acquire and Release make it an Upstream. spill is called when another
// acquire of the task runs short; it may be nil and may be set later with
// SetReclaimer. A consumer of a closed task refuses every acquire.
func (t *Task) NewConsumer(name string, spill pool.Reclaimer) *Consumer {
	c := &Consumer{task: t, name: name}
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
func (t *Task) Close() int64 {
	a := t.arb
	a.mu.Lock()
	if t.closed {
		a.mu.Unlock()
		return 0
	}
	t.closed = true
	close(t.done)
	held := t.balance
	var leaks []any
	for _, c := range t.consumers {
		if c.used > 0 {
			leaks = append(leaks, slog.Int64(c.name, c.used))
		}
		c.used = 0
	}
	a.mu.open--
	if t.active {
		a.takeLocked(t, held)
	} else {
		a.notifyAllLocked()
	}
	a.mu.Unlock()
	if held > 0 {
		a.logger.Warn("arbiter: task closed while holding memory",
			"task", t.name, "bytes", held, slog.Group("consumers", leaks...))
	}
	return held
}

// lockMonitor enters the task's monitor, or returns why it may not.
func (t *Task) lockMonitor() error {
	if t.monitor.tryLock() {
		return nil
	}
	return t.monitor.lockSlow(t)
}

func (t *Task) unlockMonitor() { t.monitor.unlock() }

// taskMonitor is a task's monitor (TaskMemoryManager's synchronized): an
// uncontended lock and unlock are one atomic each; a goroutine that finds
// it held waits on a wake channel, and gives up when the task's context is
// cancelled or the task or the arbiter closes. Not reentrant (a spill
// callback re-enters through holdsMonitorInSpill instead). The zero value
// is unlocked.
type taskMonitor struct {
	held    atomic.Bool
	waiters atomic.Int32
	mu      sync.Mutex    // guards wake
	wake    chan struct{} // closed (and replaced) by an unlock that finds waiters; nil until first needed
}

func (m *taskMonitor) tryLock() bool { return m.held.CompareAndSwap(false, true) }

// unlock releases the monitor and wakes the goroutines waiting for it (one
// of them wins; the others wait again).
func (m *taskMonitor) unlock() {
	m.held.Store(false)
	if m.waiters.Load() > 0 {
		m.mu.Lock()
		if m.wake != nil {
			close(m.wake)
			m.wake = nil
		}
		m.mu.Unlock()
	}
}

// lockSlow waits for the monitor. The waiter count is raised before the
// wake channel is taken and the lock tried again, so an unlock between the
// failed fast path and the wait either is seen by the retry or closes the
// channel this goroutine waits on: no wake-up is lost.
func (m *taskMonitor) lockSlow(t *Task) error {
	m.waiters.Add(1)
	defer m.waiters.Add(-1)
	for {
		m.mu.Lock()
		if m.wake == nil {
			m.wake = make(chan struct{})
		}
		wake := m.wake
		m.mu.Unlock()
		if m.tryLock() {
			return nil
		}
		select {
		case <-wake:
		case <-t.ctx.Done():
			return fmt.Errorf("arbiter: task %q: acquire cancelled: %w", t.name, t.ctx.Err())
		case <-t.done:
			return fmt.Errorf("arbiter: task %q: acquire after task Close: %w", t.name, pool.ErrClosed)
		case <-t.arb.done:
			return fmt.Errorf("arbiter: task %q: acquire after arbiter Close: %w", t.name, pool.ErrClosed)
		}
	}
}

// holdsMonitorInSpill reports whether the calling goroutine holds t's
// monitor and is running a spill callback of it: then an acquire on t is
// re-entrant and must not take the monitor again.
func (t *Task) holdsMonitorInSpill() bool {
	owner := t.spillOwner.Load()
	return owner != 0 && owner == routine.Goid()
}

// acquire is TaskMemoryManager.acquireExecutionMemory for requester c. On
// the goroutine that holds the monitor (in a spill callback) it re-enters
// without taking the monitor, like Java's synchronized.
func (t *Task) acquire(c *Consumer, n int64) (int64, error) {
	if !t.holdsMonitorInSpill() {
		if err := t.lockMonitor(); err != nil {
			return 0, err
		}
		defer t.unlockMonitor()
	}
	a := t.arb
	got, done, err := a.acquireMemory(t, c, n)
	if err != nil {
		return 0, err
	}
	if done {
		return got, nil
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
		return 0, fmt.Errorf("arbiter: task %q: closed during acquire: %w", t.name, pool.ErrClosed)
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
	c   *Consumer
}

// spillAndAcquire runs Spark's spill loop after a short grant of got < n.
// On error (or a panic in a spill callback) everything gathered is released
// and 0 is returned.
func (t *Task) spillAndAcquire(requester *Consumer, n, got int64) (_ int64, err error) {
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
		more, _, err := a.acquireMemory(t, nil, need)
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
func (t *Task) spill(victim *Consumer, need int64) (int64, error) {
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
		return 0, fmt.Errorf("arbiter: task %q: spill of consumer %q: %w", t.name, victim.name, err)
	}
	if claimed > net {
		a.logger.Warn("arbiter: spill callback reported more bytes than it released",
			"task", t.name, "consumer", victim.name, "claimed", claimed, "released", released,
			"reacquired", reacquired)
	}
	return min(max(claimed, 0), net), nil
}

// rollback gives back bytes an acquire gathered before failing.
func (t *Task) rollback(got int64) {
	if got == 0 {
		return
	}
	a := t.arb
	a.mu.Lock()
	defer a.mu.Unlock()
	if !t.closed { // Close already released them otherwise
		a.takeLocked(t, min(got, t.balance))
	}
}
