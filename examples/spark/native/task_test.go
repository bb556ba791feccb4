package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/jni"
	"github.com/nativepool/nativepool/pool"
	"github.com/nativepool/nativepool/taskshared"
)

// testTasks stands in for the plugin's task pools and jni.JoinTaskPool
// without a JVM: a taskshared registry in which the first join of a task
// opens the task's pool (newPool's) and holds it until the test ends, as
// Java's TaskPool holds it for the task's life, and every join adds a
// counted reference the engine must release.
type testTasks struct {
	reg     *taskshared.Registry
	newPool func(task int64) pool.Pool
	mu      sync.Mutex
	held    map[int64]*taskshared.Handle
	joins   atomic.Int64 // join references not yet released
}

func newTestTasks(t *testing.T, newPool func(task int64) pool.Pool) *testTasks {
	t.Helper()
	tt := &testTasks{reg: taskshared.NewRegistry(), newPool: newPool, held: make(map[int64]*taskshared.Handle)}
	t.Cleanup(func() {
		assert.Zero(t, tt.joins.Load(), "every join was released")
		tt.mu.Lock()
		defer tt.mu.Unlock()
		for _, h := range tt.held {
			h.Close()
		}
		assert.Zero(t, tt.reg.Len(), "every task pool was closed")
	})
	return tt
}

// join is jni.JoinTaskPool's stand-in: a task below 0 has no open pool.
func (tt *testTasks) join(task int64) (*taskshared.Handle, func(), error) {
	if task < 0 {
		return nil, nil, fmt.Errorf("jni: JoinTaskPool(task %d): the task has no open pool: %w", task, jni.ErrIllegalState)
	}
	create := func() (pool.Pool, error) { return tt.newPool(task), nil }
	tt.mu.Lock()
	if _, ok := tt.held[task]; !ok {
		h, err := tt.reg.Acquire(task, create)
		if err != nil {
			tt.mu.Unlock()
			return nil, nil, err
		}
		tt.held[task] = h
	}
	tt.mu.Unlock()
	h, err := tt.reg.Acquire(task, create)
	if err != nil {
		return nil, nil, err
	}
	tt.joins.Add(1)
	var once sync.Once
	return h, func() {
		once.Do(func() {
			tt.joins.Add(-1)
			h.Close()
		})
	}, nil
}

// pool is task's pool, which every join of the task shares.
func (tt *testTasks) pool(task int64) pool.Pool {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.held[task].Pool()
}

// currentSeen records, for every pool operation, which task was current on
// the goroutine that made it: a slog handler behind pool.NewLogging, which
// logs each register, unregister, grow, shrink and try_grow on the calling
// goroutine.
type currentSeen struct {
	// consumerSide is set while the test, as Java, releases an output
	// batch: that is the C Data release callback, no call of the engine,
	// so no task is current and its shrinks are not recorded.
	consumerSide atomic.Bool
	mu           sync.Mutex
	// byConsumer lists, by consumer name, the task attempt id current at
	// each of its pool operations (-1: none).
	byConsumer map[string][]int64
}

func (c *currentSeen) Enabled(context.Context, slog.Level) bool { return true }
func (c *currentSeen) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *currentSeen) WithGroup(string) slog.Handler            { return c }

func (c *currentSeen) Handle(_ context.Context, r slog.Record) error {
	if c.consumerSide.Load() {
		return nil
	}
	task := int64(-1)
	if h, ok := taskshared.Current(); ok {
		task = h.TaskAttemptID()
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "consumer" {
			c.mu.Lock()
			c.byConsumer[a.Value.String()] = append(c.byConsumer[a.Value.String()], task)
			c.mu.Unlock()
			return false
		}
		return true
	})
	return nil
}

// release releases an output batch as Java does, unrecorded.
func (c *currentSeen) release(out *cdata.CArrowArray, osc *cdata.CArrowSchema) {
	c.consumerSide.Store(true)
	defer c.consumerSide.Store(false)
	cdata.ReleaseCArrowArray(out)
	cdata.ReleaseCArrowSchema(osc)
}

// tasks lists the ids seen for every consumer whose name starts with
// prefix (an operator may register more than one consumer).
func (c *currentSeen) tasks(prefix string) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int64
	for name, ids := range c.byConsumer {
		if strings.HasPrefix(name, prefix) {
			out = append(out, ids...)
		}
	}
	return out
}

// assertNoCurrentTask checks that a native call left no current task on
// the goroutine that made it (the next Java thread's call would inherit
// it).
func assertNoCurrentTask(t *testing.T, call string) {
	t.Helper()
	_, ok := taskshared.Current()
	assert.False(t, ok, "%s left a current task on its goroutine", call)
}

// allTask reports whether every id in seen is task, and seen is not empty.
func allTask(seen []int64, task int64) bool {
	for _, s := range seen {
		if s != task {
			return false
		}
	}
	return len(seen) > 0
}

// TestNoTaskIsCurrentOutsideANativeCall: engine code reads its task from
// the native call it runs in; outside onTask there is none, and it fails
// rather than guess.
func TestNoTaskIsCurrentOutsideANativeCall(t *testing.T) {
	_, err := currentTask("op")
	require.ErrorIs(t, err, jni.ErrIllegalState)
	assert.Equal(t, "op: no current task on this goroutine: illegal state", err.Error())
}
