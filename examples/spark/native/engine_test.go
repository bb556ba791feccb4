package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/arbiter"
	extsort "github.com/nativepool/nativepool/examples/sort"
	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/jni"
	"github.com/nativepool/nativepool/pool"
	"github.com/nativepool/nativepool/taskshared"
)

// These tests drive the engines behind SortBridge's and AggBridge's natives
// without a JVM: a Go producer stands in for Java, exporting batches
// through the C Data Interface into C-allocated structs (as
// ArrowArray.allocateNew does) and importing the output batches back with a
// plain, non-charging arrow-go import (as Java's dedicated import allocator
// does). What engine.go does for every kind is tested here once for each
// kind; sorts_test.go and aggs_test.go test what is a kind's own.

// cStructs allocates zeroed C memory for C Data structs.
type cStructs struct {
	m    *mallocator.Mallocator
	bufs [][]byte
}

func newCStructs(t *testing.T) *cStructs {
	c := &cStructs{m: mallocator.NewMallocator()}
	t.Cleanup(func() {
		for _, b := range c.bufs {
			c.m.Free(b)
		}
		c.m.AssertSize(t, 0)
	})
	return c
}

func (c *cStructs) array() *cdata.CArrowArray {
	b := c.m.Allocate(int(unsafe.Sizeof(cdata.CArrowArray{})))
	c.bufs = append(c.bufs, b)
	return (*cdata.CArrowArray)(unsafe.Pointer(&b[0]))
}

func (c *cStructs) schema() *cdata.CArrowSchema {
	b := c.m.Allocate(int(unsafe.Sizeof(cdata.CArrowSchema{})))
	c.bufs = append(c.bufs, b)
	return (*cdata.CArrowSchema)(unsafe.Pointer(&b[0]))
}

// export exports rb into new C structs, as Java does before push0, and
// releases the producer's reference.
func (c *cStructs) export(rb arrow.RecordBatch) (*cdata.CArrowArray, *cdata.CArrowSchema) {
	arr, sc := c.array(), c.schema()
	cdata.ExportArrowRecordBatch(rb, arr, sc)
	rb.Release()
	return arr, sc
}

// pushBatch exports rb as Java does and pushes it through push0 of h.
func pushBatch[O operator](e *engine[O], h int64, cs *cStructs, rb arrow.RecordBatch) error {
	arr, sc := cs.export(rb)
	return e.push(h, arr, sc)
}

// arrayReleaseFn reads the release callback of a C ArrowArray: the ninth
// word of the struct (C Data Interface layout).
func arrayReleaseFn(arr *cdata.CArrowArray) unsafe.Pointer {
	return (*[10]unsafe.Pointer)(unsafe.Pointer(arr))[8]
}

// drainOutput calls next0 on h until it reports the end, handing every
// output batch's C structs to each (which must release them).
func drainOutput[O operator](t *testing.T, e *engine[O], h int64, cs *cStructs, each func(*cdata.CArrowArray, *cdata.CArrowSchema)) {
	t.Helper()
	for {
		out, osc := cs.array(), cs.schema()
		more, err := e.next(h, out, osc)
		require.NoError(t, err)
		if !more {
			return
		}
		each(out, osc)
	}
}

// engineRecorder stands in for jni.ReportSpill and jni.TrackAllocator in an
// engine under test, and records what the engine tells them.
type engineRecorder struct {
	// memory and disk sum the spill bytes reported, over every task.
	memory, disk atomic.Int64
	mu           sync.Mutex
	// diskByTask sums the disk bytes reported, by task attempt id.
	diskByTask map[int64]int64
	// misreported counts reports made to another task than the one whose
	// call made them.
	misreported int
	// tracked counts the allocators counted in the ledger now, by
	// consumer.
	tracked map[string]int
}

// joinOf is the join of an engine under test: tasks' stand-in of
// jni.JoinTaskPool, with r's stand-ins of jni.ReportSpill and
// jni.TrackAllocator.
func (r *engineRecorder) joinOf(tasks *testTasks) func(int64) (taskRef, error) {
	return func(task int64) (taskRef, error) {
		h, release, err := tasks.join(task)
		if err != nil {
			return taskRef{}, err
		}
		report := func(to *taskshared.Handle, memory, disk int64) error {
			r.memory.Add(memory)
			r.disk.Add(disk)
			r.mu.Lock()
			defer r.mu.Unlock()
			if to != h {
				r.misreported++
			}
			r.diskByTask[to.TaskAttemptID()] += disk
			return nil
		}
		track := func(consumer string, _ *ffi.Allocator) func() {
			r.mu.Lock()
			r.tracked[consumer]++
			r.mu.Unlock()
			var once sync.Once
			return func() {
				once.Do(func() {
					r.mu.Lock()
					r.tracked[consumer]--
					r.mu.Unlock()
				})
			}
		}
		return taskRef{task: h, reportSpill: report, release: release, track: track}, nil
	}
}

func (r *engineRecorder) trackedNow(consumer string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tracked[consumer]
}

func (r *engineRecorder) diskReportedTo(task int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.diskByTask[task]
}

// engineUnderTest is an engine of one kind, built for a test, with what
// the tests of engine.go need to drive it without knowing its kind.
type engineUnderTest[O operator] struct {
	*engine[O]
	*engineRecorder
	// what is the kind's word for an operator in errors ("sorter").
	what string
	// otherKind is a handle of the other kind's engine.
	otherKind int64
	// open is create0 with the kind's test arguments.
	open func(task int64, name string) (int64, error)
	// batch is the i-th batch of a stream of 8,192-row batches the kind
	// accepts; 16 of them make it spill in a pool of 1 MiB.
	batch func(i int) arrow.RecordBatch
}

// testLogger is the engines' logger in tests: warnings and errors only.
func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// newRecorder returns an empty recorder.
func newRecorder() *engineRecorder {
	return &engineRecorder{diskByTask: make(map[int64]int64), tracked: make(map[string]int)}
}

// sortsFor is a sort engine whose task pools come from newPool, and the
// recorder of what it reports.
func sortsFor(t *testing.T, newPool func(task int64) pool.Pool) (*sortEngine, *engineRecorder) {
	r := newRecorder()
	return newSortEngine(testLogger(), r.joinOf(newTestTasks(t, newPool))), r
}

// aggsFor is an aggregation engine whose task pools come from newPool, and
// the recorder of what it reports.
func aggsFor(t *testing.T, newPool func(task int64) pool.Pool) (*aggEngine, *engineRecorder) {
	r := newRecorder()
	return newAggEngine(testLogger(), r.joinOf(newTestTasks(t, newPool))), r
}

// sortsUnderTest is sortsFor's engine as the tests of engine.go drive it.
func sortsUnderTest(t *testing.T, newPool func(task int64) pool.Pool) *engineUnderTest[*sortOp] {
	e, r := sortsFor(t, newPool)
	return &engineUnderTest[*sortOp]{
		engine: e.engine, engineRecorder: r, what: "sorter", otherKind: 0x4700000100000001,
		open: func(task int64, name string) (int64, error) { return e.create(task, name, 4096, t.TempDir()) },
		batch: func(i int) arrow.RecordBatch {
			return extsort.NewGenerator(uint64(i), 0).Next(nil, 8192)
		},
	}
}

// aggsUnderTest is aggsFor's engine as the tests of engine.go drive it;
// each aggregation has a state directory of its own.
func aggsUnderTest(t *testing.T, newPool func(task int64) pool.Pool) *engineUnderTest[*aggregator] {
	e, r := aggsFor(t, newPool)
	return &engineUnderTest[*aggregator]{
		engine: e.engine, engineRecorder: r, what: "aggregation", otherKind: 0x5300000100000001,
		open: func(task int64, name string) (int64, error) {
			return e.create(task, aggCreate{name: name, stateDir: t.TempDir(), tempDir: t.TempDir(), batchRows: 4096})
		},
		batch: func(i int) arrow.RecordBatch {
			return rateBatch(int64(i)*8192, int64(i+1)*8192, 1<<20, 0, 1)
		},
	}
}

// onEveryKind runs test for the engine of each kind, every task's pool
// newPool's.
func onEveryKind(t *testing.T, newPool func(task int64) pool.Pool, sorts func(*testing.T, *engineUnderTest[*sortOp]), aggs func(*testing.T, *engineUnderTest[*aggregator])) {
	t.Run("sorter", func(t *testing.T) { sorts(t, sortsUnderTest(t, newPool)) })
	t.Run("aggregation", func(t *testing.T) { returnGoHeap(t); aggs(t, aggsUnderTest(t, newPool)) })
}

// fixed is the pool of every task.
func fixed(p pool.Pool) func(int64) pool.Pool { return func(int64) pool.Pool { return p } }

// arbiterTaskPool is a unified pool over one task of an in-process
// arbiter (Spark's rules) of budget bytes, borrowing in chunks of chunk
// bytes, and its Reclaim, which is what Spark's spill of the task's native
// consumer reaches.
func arbiterTaskPool(t *testing.T, budget, chunk int64) (pool.Pool, pool.Unified) {
	t.Helper()
	arb := arbiter.New(budget)
	task := arb.NewTask(context.Background(), t.Name())
	up := task.NewConsumer("nativepool", nil)
	p := pool.NewFairUnified(up, 64<<20, pool.WithChunkSize(chunk))
	u, _ := pool.As[pool.Unified](p)
	up.SetReclaimer(u)
	t.Cleanup(func() {
		require.NoError(t, u.Close())
		task.Close()
		arb.Close()
	})
	return p, u
}

func TestHandlesRejectForgedAndClosedOnesWithTheRightException(t *testing.T) {
	onEveryKind(t, fixed(pool.NewUnbounded()), testHandlesRejectForgedAndClosedOnes, testHandlesRejectForgedAndClosedOnes)
}

func testHandlesRejectForgedAndClosedOnes[O operator](t *testing.T, e *engineUnderTest[O]) {
	h, err := e.open(1, "a")
	require.NoError(t, err)
	require.NoError(t, e.close(h))

	for _, tc := range []struct {
		name string
		err  error
		is   error
		msg  string
	}{
		{"zero", e.finish(0), jni.ErrIllegalArgument, "finish0: %s: invalid %s handle 0x0: illegal argument"},
		{"a jni pool handle", e.close(0x5000000100000001), jni.ErrIllegalArgument, "close0: %s: invalid %s handle 0x5000000100000001: illegal argument"},
		{"the other kind's", e.close(e.otherKind), jni.ErrIllegalArgument, fmt.Sprintf("close0: %%s: invalid %%s handle 0x%x: illegal argument", e.otherKind)},
		{"closed", e.close(h), jni.ErrIllegalState, fmt.Sprintf("close0: %%s: %%s handle 0x%x is closed: illegal state", h)},
		{"forged generation", e.finish(h + 7), jni.ErrIllegalArgument, fmt.Sprintf("finish0: %%s: invalid %%s handle 0x%x: illegal argument", h+7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.err, tc.is)
			assert.Equal(t, fmt.Sprintf(tc.msg, e.prefix, e.what), tc.err.Error())
		})
	}

	// The slot is reused under a new generation: the old handle stays closed.
	h2, err := e.open(1, "b")
	require.NoError(t, err)
	assert.NotEqual(t, h, h2)
	_, err = e.get("stats0", h)
	require.ErrorIs(t, err, jni.ErrIllegalState)
	require.NoError(t, e.close(h2))

	_, err = e.open(-1, "c")
	require.ErrorIs(t, err, jni.ErrIllegalState, "a task without an open pool")
	_, err = e.open(1, "")
	require.ErrorIs(t, err, jni.ErrIllegalArgument)
	assert.Zero(t, e.ops.Len())
}

func TestConcurrentDriverCallsOnOneOperatorAreIllegalState(t *testing.T) {
	onEveryKind(t, fixed(pool.NewUnbounded()), testConcurrentDriverCallsAreIllegalState, testConcurrentDriverCallsAreIllegalState)
}

func testConcurrentDriverCallsAreIllegalState[O operator](t *testing.T, e *engineUnderTest[O]) {
	h, err := e.open(1, "a")
	require.NoError(t, err)
	oh, err := e.ops.Get(h)
	require.NoError(t, err)
	oh.busy.Store(true) // another thread is inside push0
	err = e.finish(h)
	require.ErrorIs(t, err, jni.ErrIllegalState)
	assert.Equal(t, e.prefix+": finish0 on a while another call on it is running: illegal state", err.Error())
	err = e.close(h)
	require.ErrorIs(t, err, jni.ErrIllegalState, "close0 during a call closes, then reports the race")
	assert.Equal(t, e.prefix+": close0 of a while a call on it was running: illegal state", err.Error())
	assert.Zero(t, e.ops.Len())
}

func TestCloseWithAnUnreleasedOutputBatchThrowsTheLeakReportAndFreesTheCharge(t *testing.T) {
	p := pool.NewGreedy(64 << 20)
	onEveryKind(t, fixed(p), testCloseWithAnUnreleasedOutputBatch[*sortOp](p), testCloseWithAnUnreleasedOutputBatch[*aggregator](p))
}

// leakVolatile matches what a leak report's text says that depends on the
// kind and the data: consumer ids, buffer counts, sizes.
var leakVolatile = regexp.MustCompile(`#\d+ |\d+ buffers|\(\d+(\.\d+)? [KMG]?B\)`)

func testCloseWithAnUnreleasedOutputBatch[O operator](p pool.Pool) func(*testing.T, *engineUnderTest[O]) {
	return func(t *testing.T, e *engineUnderTest[O]) {
		h, err := e.open(1, "leaky")
		require.NoError(t, err)
		require.NoError(t, pushBatch(e.engine, h, newCStructs(t), e.batch(0)))
		require.NoError(t, e.finish(h))
		cs := newCStructs(t)
		out, osc := cs.array(), cs.schema()
		more, err := e.next(h, out, osc)
		require.NoError(t, err)
		require.True(t, more)

		err = e.close(h) // Java never released out
		require.ErrorIs(t, err, jni.ErrIllegalState)
		masked := leakVolatile.ReplaceAllStringFunc(err.Error(), func(m string) string {
			switch {
			case m[0] == '#':
				return "#N "
			case m[0] == '(':
				return "(SIZE)"
			}
			return "N buffers"
		})
		assert.Equal(t, e.prefix+": close0 of leaky: ffi: leaky#N leaked N buffers (SIZE), 1 exported batches (SIZE)"+
			" and 0 exported streams never released by the consumer;"+
			" allocation sites not recorded (use WithAllocationSites(true)): illegal state", masked)
		assert.Zero(t, p.Reserved(), "the charge goes back to the pool anyway")
		assert.Zero(t, e.trackedNow("leaky"), "untracked at close")
		cdata.ReleaseCArrowArray(out) // the late release frees the memory
		cdata.ReleaseCArrowSchema(osc)
	}
}

// TestEveryCallRunsWithItsTaskCurrentAndClearsIt drives two operators of
// two tasks in turn on one goroutine, as two Java threads reusing one JNI
// goroutine would, and checks that every pool operation the engine makes
// (the registration in create0, the buffers of push0, finish0 and next0,
// the releases of close0) happens with that operator's own task current,
// that its spill bytes go to that task's metrics, and that no call leaves
// a task current behind.
func TestEveryCallRunsWithItsTaskCurrentAndClearsIt(t *testing.T) {
	seen := &currentSeen{byConsumer: make(map[string][]int64)}
	newPool := func(int64) pool.Pool { return pool.NewLogging(pool.NewGreedy(1<<20), slog.New(seen)) }
	onEveryKind(t, newPool, testEveryCallRunsWithItsTaskCurrent[*sortOp](seen), testEveryCallRunsWithItsTaskCurrent[*aggregator](seen))
}

func testEveryCallRunsWithItsTaskCurrent[O operator](seen *currentSeen) func(*testing.T, *engineUnderTest[O]) {
	return func(t *testing.T, e *engineUnderTest[O]) {
		cs := newCStructs(t)
		tasks := []int64{7, 8}
		hs := map[int64]int64{}
		for _, task := range tasks {
			h, err := e.open(task, fmt.Sprintf("%s-%d", e.what, task))
			require.NoError(t, err)
			assertNoCurrentTask(t, "create0")
			hs[task] = h
		}
		for i := range 16 { // 128 Ki rows into each 1 MiB pool: both spill
			for _, task := range tasks {
				require.NoError(t, pushBatch(e.engine, hs[task], cs, e.batch(i)))
				assertNoCurrentTask(t, "push0")
			}
		}
		spilled := map[int64]int64{}
		for _, task := range tasks {
			require.NoError(t, e.finish(hs[task]))
			assertNoCurrentTask(t, "finish0")
			drainOutput(t, e.engine, hs[task], cs, func(out *cdata.CArrowArray, osc *cdata.CArrowSchema) {
				assertNoCurrentTask(t, "next0")
				seen.release(out, osc)
			})
			oh, err := e.ops.Get(hs[task])
			require.NoError(t, err)
			_, spilled[task] = oh.op.spilled()
			require.NoError(t, e.close(hs[task]))
			assertNoCurrentTask(t, "close0")
		}
		for _, task := range tasks {
			consumer := fmt.Sprintf("%s-%d", e.what, task)
			got := seen.tasks(consumer)
			assert.True(t, allTask(got, task), "%s's pool operations ran with task %d current: %v", consumer, task, got)
			require.Positive(t, spilled[task], "the %s of task %d spilled", e.what, task)
			assert.Equal(t, spilled[task], e.diskReportedTo(task), "task %d's spills were reported to it", task)
		}
		assert.Zero(t, e.misreported, "no spill reported to another task")
	}
}

// javaSource reads a file of the demo's Java code.
func javaSource(t *testing.T, class string) string {
	t.Helper()
	src, err := os.ReadFile("../src/main/java/org/nativepool/spark/example/" + class + ".java")
	require.NoError(t, err)
	return string(src)
}

// named maps a stats0 array laid out by t to its figures' names.
func (t statTable[F]) named(a []int64) map[string]int64 {
	m := make(map[string]int64, len(t))
	for i, row := range t {
		m[row.name] = a[i]
	}
	return m
}

// statRows lists a stats0 table's names and docs.
func statRows[F any](t statTable[F]) (names, docs []string) {
	for _, row := range t {
		names, docs = append(names, row.name), append(docs, row.doc)
	}
	return names, docs
}

// TestStatTablesMatchTheirJavaEnums reads the Java copy of each stats0
// table (the enums SortStat and AggStat) and checks its constants, in
// order, against the Go table: the enum's ordinal is the array index.
func TestStatTablesMatchTheirJavaEnums(t *testing.T) {
	sortNames, sortDocs := statRows(sortStats)
	aggNames, aggDocs := statRows(aggStatTable)
	for _, tc := range []struct {
		enum        string
		names, docs []string
	}{{"SortStat", sortNames, sortDocs}, {"AggStat", aggNames, aggDocs}} {
		t.Run(tc.enum, func(t *testing.T) {
			var java []string
			for _, m := range regexp.MustCompile(`(?m)^  ([A-Z][A-Z0-9_]*)[,;]$`).FindAllStringSubmatch(javaSource(t, tc.enum), -1) {
				java = append(java, m[1])
			}
			assert.Equal(t, tc.names, java)
			for i, doc := range tc.docs {
				assert.NotEmpty(t, doc, "row %d (%s) has no doc", i, tc.names[i])
			}
		})
	}
}

// TestSampleIndicesMatchTheirJavaCopies checks the SAMPLE_* constants of
// SortBridge.java and AggBridge.java against sample0's indices.
func TestSampleIndicesMatchTheirJavaCopies(t *testing.T) {
	for class, want := range map[string]map[string]int{
		"SortBridge": {
			"SAMPLE_LIVE_SORTERS": sampleLiveSorters, "SAMPLE_RESERVED": sampleReserved, "SAMPLE_ALLOCATED": sampleAllocated,
			"SAMPLE_CHECKS": sampleChecks, "SAMPLE_VIOLATIONS": sampleViolations, "SAMPLE_GO_RUNTIME": sampleGoRuntime,
			"SAMPLE_RSS": sampleRSS, "SAMPLE_GO_PEAK": sampleGoPeak, "SAMPLE_GO_MAPPED": sampleGoMapped, "SAMPLE_COUNT": sampleCount,
		},
		"AggBridge": {
			"SAMPLE_LIVE": aggSampleLive, "SAMPLE_RETAINED_BATCHES": aggSampleRetainedBatches,
			"SAMPLE_RETAINED_BYTES": aggSampleRetainedBytes, "SAMPLE_COUNT": aggSampleCount,
		},
	} {
		t.Run(class, func(t *testing.T) {
			got := map[string]int{}
			for _, m := range regexp.MustCompile(`public static final int (SAMPLE_[A-Z_]+) = (\d+);`).FindAllStringSubmatch(javaSource(t, class), -1) {
				got[m[1]], _ = strconv.Atoi(m[2])
			}
			assert.Equal(t, want, got)
		})
	}
}
