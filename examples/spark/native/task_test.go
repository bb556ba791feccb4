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

	extsort "github.com/nativepool/nativepool/examples/sort"
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

// TestSortCallsRunWithTheirTaskCurrentAndClearIt drives two sorters of two
// tasks in turn on one goroutine, as two Java threads reusing one JNI
// goroutine would, and checks that every pool operation the engine makes
// (the sorter's registration in create0, its buffers in push0, finish0 and
// next0, its releases in close0) happens with that sorter's own task
// current, that the spill bytes go to that task's metrics, and that no call
// leaves a task current behind.
func TestSortCallsRunWithTheirTaskCurrentAndClearIt(t *testing.T) {
	seen := &currentSeen{byConsumer: make(map[string][]int64)}
	tasks := newTestTasks(t, func(int64) pool.Pool {
		return pool.NewLogging(pool.NewGreedy(1<<20), slog.New(seen))
	})
	var reportedTo sync.Map // task attempt id → disk bytes reported
	e := newEngine(slog.New(slog.DiscardHandler), func(task int64) (taskRef, error) {
		h, release, err := tasks.join(task)
		if err != nil {
			return taskRef{}, err
		}
		report := func(to *taskshared.Handle, _, disk int64) error {
			assert.Same(t, h, to, "spill bytes of task %d reported to the task of the call", task)
			prev, _ := reportedTo.LoadOrStore(to.TaskAttemptID(), new(atomic.Int64))
			prev.(*atomic.Int64).Add(disk)
			return nil
		}
		return taskRef{task: h, reportSpill: report, release: release}, nil
	})
	cs := newCStructs(t)

	h7, err := e.create(7, "sorter-7", 4096, t.TempDir())
	require.NoError(t, err)
	assertNoCurrentTask(t, "create0")
	h8, err := e.create(8, "sorter-8", 4096, t.TempDir())
	require.NoError(t, err)
	assertNoCurrentTask(t, "create0")
	assert.NotSame(t, tasks.pool(7), tasks.pool(8))

	g7, g8 := extsort.NewGenerator(7, 0), extsort.NewGenerator(8, 0)
	for range 16 { // 2 MiB of rows into each 1 MiB pool: both sorters spill
		for _, s := range []struct {
			h int64
			g *extsort.Generator
		}{{h7, g7}, {h8, g8}} {
			rb := s.g.Next(nil, 8192)
			arr, sc := cs.array(), cs.schema()
			cdata.ExportArrowRecordBatch(rb, arr, sc)
			rb.Release()
			require.NoError(t, e.push(s.h, arr, sc))
			assertNoCurrentTask(t, "push0")
		}
	}
	for _, h := range []int64{h7, h8} {
		require.NoError(t, e.finish(h))
		assertNoCurrentTask(t, "finish0")
		for {
			out, osc := cs.array(), cs.schema()
			more, err := e.next(h, out, osc)
			require.NoError(t, err)
			assertNoCurrentTask(t, "next0")
			if !more {
				break
			}
			seen.release(out, osc)
		}
	}
	st7, err := e.stats(h7)
	require.NoError(t, err)
	require.NoError(t, e.close(h7))
	assertNoCurrentTask(t, "close0")
	require.NoError(t, e.close(h8))
	assertNoCurrentTask(t, "close0")

	for task, consumer := range map[int64]string{7: "sorter-7", 8: "sorter-8"} {
		got := seen.tasks(consumer)
		assert.True(t, allTask(got, task), "%s's pool operations ran with task %d current: %v", consumer, task, got)
	}
	require.Positive(t, st7[statSpilledBytes], "the sorter spilled")
	disk7, ok := reportedTo.Load(int64(7))
	require.True(t, ok, "task 7's spills were reported")
	assert.Equal(t, st7[statSpilledBytes], disk7.(*atomic.Int64).Load())
}

// TestAggregationCallsRunWithTheirTaskCurrentAndClearIt is the same check
// for the streaming aggregation's engine: create0, push0, finish0, next0
// and close0 run with the aggregation's task current, and clear it.
func TestAggregationCallsRunWithTheirTaskCurrentAndClearIt(t *testing.T) {
	seen := &currentSeen{byConsumer: make(map[string][]int64)}
	tasks := newTestTasks(t, func(int64) pool.Pool {
		return pool.NewLogging(pool.NewGreedy(64<<20), slog.New(seen))
	})
	e := newAggEngine(slog.New(slog.DiscardHandler), func(task int64) (taskRef, error) {
		h, release, err := tasks.join(task)
		if err != nil {
			return taskRef{}, err
		}
		return taskRef{task: h, reportSpill: func(*taskshared.Handle, int64, int64) error { return nil }, release: release}, nil
	})
	cs := newCStructs(t)
	var hs []int64
	for _, task := range []int64{5, 6} {
		h, err := e.create(task, aggCreate{name: fmt.Sprintf("agg-%d", task), stateDir: t.TempDir(), tempDir: t.TempDir()})
		require.NoError(t, err)
		assertNoCurrentTask(t, "create0")
		hs = append(hs, h)
	}
	for i, h := range hs {
		rb := rateBatch(int64(i)*1000, int64(i)*1000+1000, 100, 0, 1)
		arr, sc := cs.array(), cs.schema()
		cdata.ExportArrowRecordBatch(rb, arr, sc)
		rb.Release()
		require.NoError(t, e.push(h, arr, sc))
		assertNoCurrentTask(t, "push0")
	}
	for _, h := range hs {
		require.NoError(t, e.finish(h))
		assertNoCurrentTask(t, "finish0")
		for {
			out, osc := cs.array(), cs.schema()
			more, err := e.next(h, out, osc)
			require.NoError(t, err)
			assertNoCurrentTask(t, "next0")
			if !more {
				break
			}
			seen.release(out, osc)
		}
		require.NoError(t, e.close(h))
		assertNoCurrentTask(t, "close0")
	}
	for _, task := range []int64{5, 6} {
		consumer := fmt.Sprintf("agg-%d", task)
		got := seen.tasks(consumer)
		assert.True(t, allTask(got, task), "%s's pool operations ran with task %d current: %v", consumer, task, got)
	}
}

// TestNoTaskIsCurrentOutsideANativeCall: engine code reads its task from
// the native call it runs in; outside onTask there is none, and it fails
// rather than guess.
func TestNoTaskIsCurrentOutsideANativeCall(t *testing.T) {
	_, err := currentTask("op")
	require.ErrorIs(t, err, jni.ErrIllegalState)
	assert.Equal(t, "op: no current task on this goroutine: illegal state", err.Error())
}
