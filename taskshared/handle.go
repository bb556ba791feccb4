package taskshared

import (
	"log/slog"
	"runtime"
	"sync/atomic"

	"github.com/nativepool/nativepool/pool"
)

// Handle is one plan's reference to its task's shared pool. Close it exactly
// when the plan ends (also when building the plan failed after Acquire): the
// last Close of a task's handles closes its pool and then removes the
// task's entry. A Handle dropped without Close is reported by the registry's logger
// some time after a garbage collection, and its reference is then released;
// that is a leak detector, not a lifetime mechanism.
//
// A Handle is safe for concurrent use by multiple goroutines. The zero
// Handle (and a nil *Handle) is not registered: Pool returns nil and Close
// does nothing.
type Handle struct {
	e       *entry
	closed  atomic.Bool
	cleanup runtime.Cleanup
}

// Pool is the task's shared pool. It keeps returning the same pool after
// Close, but a closed unified pool refuses every grow.
func (h *Handle) Pool() pool.Pool {
	if h == nil || h.e == nil {
		return nil
	}
	return h.e.pool
}

// TaskAttemptID is the id of the task this handle belongs to.
func (h *Handle) TaskAttemptID() int64 {
	if h == nil || h.e == nil {
		return 0
	}
	return h.e.id
}

// Close releases this handle's reference. The last Close of a task's handles
// closes the pool, without the registry lock, if it has a Close() error
// method, logging its error (a leak report naming the consumers) with the
// task id; then it removes the task's entry (only if it is still this
// pool's) and wakes the plans of the task that arrived meanwhile: they wait
// for that moment and then get a new pool. If the pool's Close panics, the
// entry is removed and the waiters woken all the same, and the panic
// propagates. Close is idempotent: a second Close of the same handle does
// nothing and is logged at debug level. A Close on the zero or nil Handle
// does nothing.
func (h *Handle) Close() { _ = h.CloseReporting() }

// CloseReporting is Close that returns the pool's Close error (logged as by
// Close) when this call was the last one and closed the pool, and nil
// otherwise: for a caller that must hand that error on, as the JNI bridge
// rethrows the Java exception the pool's final release raised.
func (h *Handle) CloseReporting() error {
	if h == nil || h.e == nil {
		return nil
	}
	if !h.closed.CompareAndSwap(false, true) {
		h.e.reg.logger.Debug("taskshared: handle closed twice; ignored", slog.Int64("task", h.e.id))
		return nil
	}
	h.cleanup.Stop()
	return h.e.reg.unref(h.e)
}
