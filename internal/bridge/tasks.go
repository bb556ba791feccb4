package bridge

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// Task handles: one owner per task. Each task pool has one: issued when the
// pool is created (the first openPool0 of a live task attempt) and removed
// when it closes (taskPool.Close). The Java object that owns the task (a
// TaskOwner: the task's Spark MemoryConsumer) holds it, and Spark's spill of
// that consumer is one reclaimTask0 through it. The Go registry is thus the
// only record of which pool a task has: Java keeps no task map and no list of
// pool handles.

// OwnerFactory makes the upstream of a task pool that OpenPool is creating,
// from the opener's owner candidate: the export makes the global ref to the
// candidate and stores taskHandle in it. OpenPool calls it at most once, on
// the opening goroutine, before the pool is visible to any other open; it
// does not call it for a join. Keeping it a closure keeps JNI types out of
// the Bridge.
type OwnerFactory func(taskHandle int64) (OwnedUpstream, error)

// taskSlot is a task handle's entry: the pool, stored once the pool is built
// (the handle is issued first, so that the owner can hold it before anyone
// can spill). Until then, and for a forged lookup racing the create, it is
// nil and a reclaim through it reclaims nothing.
type taskSlot struct {
	tp atomic.Pointer[taskPool]
}

// createTaskPool is the registry's create of OpenPool: it issues the task
// handle, asks newOwner for the upstream, builds the pool and binds it to
// the handle. On error nothing is left behind.
func (b *Bridge) createTaskPool(taskID int64, kind int32, poolSize, chunk int64, newOwner OwnerFactory) (*taskPool, error) {
	slot := &taskSlot{}
	th, err := b.tasks.Insert(slot)
	if err != nil {
		return nil, fmt.Errorf("nativepool: openPool(task %d): %w", taskID, err)
	}
	up, err := newOwner(th)
	if err != nil {
		_, _ = b.tasks.Remove(th) // issued above, removed only here
		return nil, fmt.Errorf("nativepool: openPool(task %d): %w", taskID, err)
	}
	tp := b.newTaskPool(taskID, kind, poolSize, chunk, up)
	tp.task = th
	slot.tp.Store(tp)
	return tp, nil
}

// removeTask removes tp's task handle; called once, by taskPool.Close.
func (b *Bridge) removeTask(tp *taskPool) {
	if tp.task != 0 {
		_, _ = b.tasks.Remove(tp.task) // only Close removes it, once
	}
}

// ReclaimTask is Spark's spill of a task's consumer, reached through the
// task handle th its owner holds: Reclaim on the task's pool, inside the
// pool's callGate (so the pool's final close waits for it). A task handle
// whose pool has closed (stale), and a pool that is closing, reclaim
// nothing and return 0 without error: Spark may spill the owner's consumer
// after the pool returned everything. A handle that was never a task handle
// wraps ErrInvalidHandle. Otherwise the result and errors are Reclaim's:
// a negative target wraps pool.ErrInvalidSize, and a failed spiller or
// release is returned after the reclaim has finished (a *JavaException when
// spill or releaseMemory threw).
func (b *Bridge) ReclaimTask(th, target int64) (int64, error) {
	slot, err := b.tasks.Get(th)
	if errors.Is(err, ErrStaleHandle) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	tp := slot.tp.Load()
	if tp == nil || !tp.calls.enterAcquire() {
		return 0, nil
	}
	defer tp.calls.exit()
	return b.reclaim(tp, target)
}

// TaskOwner returns the upstream (the task's owner) of the pool of handle h:
// the one its creating open registered.
func (b *Bridge) TaskOwner(h int64) (OwnedUpstream, error) {
	ph, err := b.pool(h)
	if err != nil {
		return nil, err
	}
	return ph.tp.upstream, nil
}

// LiveTasks is the number of live task handles: task pools open now.
func (b *Bridge) LiveTasks() int { return b.tasks.Len() }
