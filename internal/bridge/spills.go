package bridge

import (
	"fmt"
	"sync"

	"github.com/nativepool/nativepool/pool"
	"github.com/nativepool/nativepool/taskshared"
)

// Native spill bytes for Spark's task metrics. Spark counts a task's spills
// in two figures: memoryBytesSpilled (the in-memory size of what was spilled)
// and diskBytesSpilled (what the spill wrote). The bytes a Spark-requested
// spill of the task's native consumer releases are counted on the Java side
// (the task owner's spill). What only an engine knows, the bytes its spills
// wrote to disk and the memory its own spills freed (a spill it started
// because a grow was refused), it reports here while it holds a handle of the
// task's pool; Java takes the sums (TakeSpill, takeSpill0) after each Spark
// spill of the task and when the task's owner closes, and adds them to the
// task's metrics.

// SpillBytes is what a task's engines reported and Java has not taken yet.
type SpillBytes struct {
	Memory int64 // bytes freed by spills the engine started itself
	Disk   int64 // bytes written to disk by every spill of the engine
}

// spillTally holds the SpillBytes per task attempt. The zero value is
// ready to use; it is safe for concurrent use.
type spillTally struct {
	mu sync.Mutex
	// byTask: an entry exists from a task's first report to Java's next
	// take. Reports need a live handle of the task's pool and the task's
	// owner takes when it closes, after every handle, so no entry
	// outlives its task.
	byTask map[int64]SpillBytes
}

// ReportSpill adds a spill of an engine to the task of h, a live handle of
// the task's pool (from JoinTaskPool): memory is the bytes a spill the
// engine started itself freed (0 for a spill the pool asked of the
// engine's pool.Spiller: what that frees reaches Spark through the pool
// and is counted there), disk the bytes it wrote. Report before closing h:
// the task's owner takes the last sums when it closes, after the pool. A
// negative figure wraps pool.ErrInvalidSize, a nil or zero handle
// pool.ErrClosed; nothing is recorded then.
func (b *Bridge) ReportSpill(h *taskshared.Handle, memory, disk int64) error {
	if memory < 0 || disk < 0 {
		return fmt.Errorf("nativepool: ReportSpill(memory %d, disk %d): negative size: %w", memory, disk, pool.ErrInvalidSize)
	}
	if h == nil || h.Pool() == nil {
		return fmt.Errorf("nativepool: ReportSpill: no task pool handle: %w", pool.ErrClosed)
	}
	if memory == 0 && disk == 0 {
		return nil
	}
	id := h.TaskAttemptID()
	b.spills.mu.Lock()
	defer b.spills.mu.Unlock()
	if b.spills.byTask == nil {
		b.spills.byTask = make(map[int64]SpillBytes)
	}
	s := b.spills.byTask[id]
	s.Memory += memory
	s.Disk += disk
	b.spills.byTask[id] = s
	return nil
}

// TakeSpill returns what the engines reported for task taskAttemptID since
// the last take, and forgets it (zeros if nothing was reported).
func (b *Bridge) TakeSpill(taskAttemptID int64) SpillBytes {
	b.spills.mu.Lock()
	defer b.spills.mu.Unlock()
	s := b.spills.byTask[taskAttemptID]
	delete(b.spills.byTask, taskAttemptID)
	return s
}

// PendingSpills is the number of tasks with reported spills not yet taken.
func (b *Bridge) PendingSpills() int {
	b.spills.mu.Lock()
	defer b.spills.mu.Unlock()
	return len(b.spills.byTask)
}
