package taskshared

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/nativepool/nativepool/pool"
)

// ErrSpecMismatch is wrapped when a plan asks for a pool whose Spec differs
// from the one the task's live pool was created with.
var ErrSpecMismatch = errors.New("pool spec mismatch")

// Spec describes the pool a plan asks for. Two plans of one task must agree
// on it; it is stored with the task's entry and compared with ==. A Spec
// with an empty Kind is unspecified and matches any Spec. The zero Spec is
// unspecified.
type Spec struct {
	Kind  string // the pool kind, e.g. "fair_unified" or "greedy_unified"
	Size  int64  // the pool size in bytes, where the kind has one
	Chunk int64  // the upstream chunk in bytes (0 = one upstream call per grow/shrink)
}

// String renders the spec with exact byte counts (two sizes that differ by
// less than a rounded unit must not print alike), e.g.
// "fair_unified(size: 1073741824 B, chunk: 8388608 B)".
func (s Spec) String() string {
	if s.Kind == "" {
		return "unspecified"
	}
	return fmt.Sprintf("%s(size: %d B, chunk: %d B)", s.Kind, s.Size, s.Chunk)
}

func (s Spec) matches(o Spec) bool { return s.Kind == "" || o.Kind == "" || s == o }

// Registry maps task attempt ids to the one pool their plans share. A
// process has one Registry per bridge (the JNI library keeps one); tests
// make their own. See the package doc for lifetimes.
//
// A Registry is safe for concurrent use by multiple goroutines and must not
// be copied after first use. Build one with NewRegistry; the zero value is
// not usable.
type Registry struct {
	logger *slog.Logger
	// testHookRemoving, when set (by this package's tests only), runs after
	// a Close dropped an entry's last reference and before it closes the
	// pool and removes the entry: the window of the drop race.
	testHookRemoving func(taskAttemptID int64)

	// mu guards entries. It is never held across create, a pool's Close or
	// a log call that could block; nothing else is locked while holding it.
	mu struct {
		sync.Mutex
		entries map[int64]*entry // one per task with a live, in-creation or tearing-down pool
		// settled is broadcast when a create ends or a teardown ends (its
		// entry removed), if waiting > 0: callers that found their task's
		// pool being created or torn down wait on it, so neither costs an
		// allocation for a wake-up channel.
		settled sync.Cond
		waiting int
	}
}

// entry is one task's pool and its references.
type entry struct {
	reg  *Registry
	id   int64
	spec Spec // immutable
	// refs counts open Handles. It is raised only under Registry.mu and only
	// from > 0; lowered without the lock. Once it reaches 0 (and creating is
	// false) the entry is tearing down for good: its pool is being closed,
	// the entry stays in the map until that Close returned, and Acquire
	// waits for its removal before creating a replacement.
	refs atomic.Int64
	// creating is true while create runs. Guarded by Registry.mu.
	creating bool
	// pool is set under Registry.mu before creating is closed, then never
	// written again; handles read it without the lock.
	pool pool.Pool
}

// RegistryOption configures NewRegistry.
type RegistryOption func(*Registry)

// WithLogger sets where the registry reports leaked handles, pools closed
// with bytes still reserved and double closes (debug). The default is
// slog.Default().
func WithLogger(l *slog.Logger) RegistryOption {
	return func(r *Registry) {
		if l != nil {
			r.logger = l
		}
	}
}

// NewRegistry returns an empty registry.
func NewRegistry(opts ...RegistryOption) *Registry {
	r := &Registry{logger: slog.Default()}
	r.mu.entries = make(map[int64]*entry)
	r.mu.settled.L = &r.mu.Mutex
	for _, o := range opts {
		o(r)
	}
	return r
}

// Len is the number of task entries: live pools, pools being created, and
// pools whose last handle was closed and whose Close has not returned yet.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mu.entries)
}

// Acquire returns a new Handle to the pool of task taskAttemptID, creating
// the pool with create if the task has none. It is AcquireSpec with an
// unspecified Spec: no check that the plans agree on the pool.
func (r *Registry) Acquire(taskAttemptID int64, create func() (pool.Pool, error)) (*Handle, error) {
	return r.AcquireSpec(taskAttemptID, Spec{}, create)
}

// AcquireSpec returns a new Handle to the pool of task taskAttemptID. If the
// task has a live pool, the Handle shares it, provided spec matches the
// Spec it was created with; otherwise AcquireSpec fails with an error
// wrapping ErrSpecMismatch that names both specs. If the task has no live
// pool, create builds one and spec is stored with it.
//
// create runs without the registry lock held, so it may block or call the
// JVM; it runs at most once at a time per task: concurrent AcquireSpec calls
// for the same task wait for it and share its pool. If create fails (or
// returns a nil pool, or panics) nothing is registered, its error is
// returned, and each waiting caller tries its own create in turn. Close the
// Handle when the plan ends. It panics if create is nil.
//
// A replacement waits for teardown: if the task's last Handle was closed
// and its pool's Close has not returned yet (the pool is still giving its
// bytes back to Spark), AcquireSpec blocks until that Close returned (also
// by panicking) and then creates a new pool, whatever spec the old one had.
// So the old pool's final release can never land under the replacement's
// first acquire (which could then park in Spark on a task entry the release
// zeroes: the reason for Comet's condvar registry, reference §3). A pool's
// Close must therefore not acquire its own task's pool.
func (r *Registry) AcquireSpec(taskAttemptID int64, spec Spec, create func() (pool.Pool, error)) (*Handle, error) {
	if create == nil {
		panic(fmt.Sprintf("taskshared: Acquire(%d): nil create", taskAttemptID))
	}
	for {
		r.mu.Lock()
		e := r.mu.entries[taskAttemptID]
		if e != nil {
			if !e.creating && e.refs.Load() <= 0 {
				// Tearing down: wait until its Close returned and the entry
				// is gone, then look again.
				r.waitLocked()
				continue
			}
			if !e.spec.matches(spec) {
				r.mu.Unlock()
				return nil, fmt.Errorf("taskshared: task %d: plan asks for pool %s but the task's pool is %s: %w",
					taskAttemptID, spec, e.spec, ErrSpecMismatch)
			}
			if e.creating {
				r.waitLocked()
				continue
			}
			if e.tryRef() {
				r.mu.Unlock()
				return r.newHandle(e), nil
			}
			// The last handle was closed since the Load above: the entry is
			// tearing down; the next round waits for it.
			r.mu.Unlock()
			continue
		}
		ne := &entry{reg: r, id: taskAttemptID, spec: spec, creating: true}
		ne.refs.Store(1) // the creator's reference; the entry is not live until created
		r.mu.entries[taskAttemptID] = ne
		r.mu.Unlock()
		return r.create(ne, create)
	}
}

// waitLocked waits for the next create or teardown to end, then unlocks.
// r.mu must be held.
func (r *Registry) waitLocked() {
	r.mu.waiting++
	r.mu.settled.Wait()
	r.mu.waiting--
	r.mu.Unlock()
}

// broadcastLocked wakes the callers waiting for a create or a teardown.
// r.mu must be held.
func (r *Registry) broadcastLocked() {
	if r.mu.waiting > 0 {
		r.mu.settled.Broadcast()
	}
}

// create runs create for the in-creation entry e and publishes the result.
func (r *Registry) create(e *entry, create func() (pool.Pool, error)) (h *Handle, err error) {
	done := false
	defer func() {
		r.mu.Lock()
		if !done || err != nil {
			r.removeLocked(e)
		}
		e.creating = false
		r.broadcastLocked()
		r.mu.Unlock()
	}()
	p, err := create()
	if err == nil && p == nil {
		err = fmt.Errorf("taskshared: Acquire(%d): create returned a nil pool", e.id)
	}
	if err != nil {
		done = true
		return nil, err
	}
	e.pool = p // published to other goroutines by the deferred unlock
	done = true
	return r.newHandle(e), nil
}

// tryRef adds a reference if e is live.
func (e *entry) tryRef() bool {
	for {
		n := e.refs.Load()
		if n <= 0 {
			return false
		}
		if e.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// removeLocked deletes e's map entry if the map still holds e itself (never
// a replacement). r.mu must be held. Since a replacement waits for
// teardown, the map holds e at every removal today; the comparison keeps
// removal safe should that ever change.
func (r *Registry) removeLocked(e *entry) {
	if r.mu.entries[e.id] == e {
		delete(r.mu.entries, e.id)
	}
}

// unref drops one reference of e; the last one closes e's pool outside the
// lock and then removes e (compare-and-delete) and wakes the acquires that
// waited for the teardown, also when Close panics (the panic propagates).
// It returns the pool's Close error when it closed the pool.
func (r *Registry) unref(e *entry) error {
	switch n := e.refs.Add(-1); {
	case n > 0:
		return nil
	case n < 0:
		e.refs.Add(1)
		r.logger.Error("taskshared: reference released twice; ignored", "task", e.id)
		return nil
	}
	defer func() {
		r.mu.Lock()
		r.removeLocked(e)
		r.broadcastLocked()
		r.mu.Unlock()
	}()
	if hook := r.testHookRemoving; hook != nil {
		hook(e.id)
	}
	return r.closePool(e)
}

// closePool closes e's pool if it (or a pool it decorates) can be closed,
// logging a close error (a leak report) with the task id, and returns it.
func (r *Registry) closePool(e *entry) error {
	c, ok := pool.As[interface{ Close() error }](e.pool)
	if !ok {
		return nil
	}
	err := c.Close()
	if err != nil {
		msg := "taskshared: closing the task pool failed"
		if leak := (*pool.LeakError)(nil); errors.As(err, &leak) {
			msg = "taskshared: task pool closed with memory still reserved"
		}
		r.logger.Error(msg, "task", e.id, "pool", e.pool.Name(), "err", err)
	}
	return err
}

// newHandle wraps one reference of e and arms the dropped-handle detector.
func (r *Registry) newHandle(e *entry) *Handle {
	h := &Handle{e: e}
	// The cleanup's argument must not reach h, or h never becomes
	// unreachable: the entry (and through it the registry) never does.
	h.cleanup = runtime.AddCleanup(h, droppedHandle, e)
	return h
}

// droppedHandle runs, on a runtime goroutine some time after a GC, for a
// Handle that became unreachable without Close: it reports the task and
// releases the reference the handle held.
func droppedHandle(e *entry) {
	e.reg.logger.Error("taskshared: handle dropped without Close; releasing its reference",
		"task", e.id, "pool", e.pool.Name())
	_ = e.reg.unref(e)
}
