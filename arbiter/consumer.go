package arbiter

import (
	"fmt"
	"sync/atomic"

	"github.com/nativepool/nativepool/pool"
)

// Consumer is one memory consumer of a Task (Spark's
// MemoryConsumer) and the Upstream a unified pool borrows from. Its Acquire
// follows Spark's rules (see Arbiter) and may block and run spill
// callbacks of the task's consumers, this one last, on the calling
// goroutine; such a callback may Acquire again on that goroutine. It is
// safe for concurrent use by multiple goroutines; build it with
// Task.NewConsumer, the zero value is not usable.
type Consumer struct {
	task  *Task
	name  string
	spill atomic.Pointer[reclaimerBox]
	used  int64 // guarded by task.arb.mu
}

type reclaimerBox struct{ r pool.Reclaimer }

// Name is the name given to NewConsumer.
func (c *Consumer) Name() string { return c.name }

// SetReclaimer sets (or, with nil, clears) the spill callback. A unified
// pool needs its Upstream before it exists, so build the consumer first and
// set the pool as its reclaimer afterwards. Safe to call at any time.
func (c *Consumer) SetReclaimer(r pool.Reclaimer) {
	if r == nil {
		c.spill.Store(nil)
		return
	}
	c.spill.Store(&reclaimerBox{r: r})
}

func (c *Consumer) reclaimer() pool.Reclaimer {
	if b := c.spill.Load(); b != nil {
		return b.r
	}
	return nil
}

// Used is the number of bytes this consumer holds.
func (c *Consumer) Used() int64 {
	c.task.arb.mu.Lock()
	defer c.task.arb.mu.Unlock()
	return c.used
}

// Acquire asks the executor for n bytes on behalf of this consumer and
// returns how many were granted (0 ≤ granted ≤ n). It may block until the
// task holds 1/2N of the pool, and may call the spill callbacks of the
// task's consumers on this goroutine first; see Arbiter. Called
// from such a callback on the same goroutine, it re-enters the task's
// monitor instead of waiting for it. It fails, granting nothing, with an
// error wrapping the context's error when the task's context ends,
// ErrClosed when the task or the arbiter is closed (also while waiting),
// ErrInvalidSize when n < 0, or the error of a spill callback. n == 0
// grants 0 without error.
func (c *Consumer) Acquire(n int64) (int64, error) {
	if n < 0 {
		return 0, fmt.Errorf("arbiter: Acquire(%d): negative size: %w", n, pool.ErrInvalidSize)
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
func (c *Consumer) Release(n int64) error {
	if n < 0 {
		return fmt.Errorf("arbiter: Release(%d): negative size: %w", n, pool.ErrInvalidSize)
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
		a.logger.Debug("arbiter: release after task Close ignored",
			"task", t.name, "consumer", c.name, "bytes", n)
		return fmt.Errorf("arbiter: task %q: Release(%d) after task Close: %w", t.name, n, pool.ErrClosed)
	}
	var err error
	if n > c.used {
		err = fmt.Errorf("arbiter: consumer %q of task %q: Release(%d) but it holds %d: %w",
			c.name, t.name, n, c.used, pool.ErrInvalidSize)
		n = c.used
	}
	c.used -= n
	a.takeLocked(t, n)
	t.released.Add(n)
	a.mu.Unlock()
	if err != nil {
		a.overReleases.Add(1)
		a.logger.Error("arbiter: release exceeds what the consumer holds; clamped",
			"task", t.name, "consumer", c.name, "err", err)
	}
	return err
}

var _ pool.Upstream = (*Consumer)(nil)
