package arrowruntime

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/internal/bridge"
	"github.com/nativepool/nativepool/pool"
)

// The operations of FuzzBridgeCallSequences: the natives Java calls, each
// decoded from four bytes (op, a, b, c).
const (
	opOpen = iota
	opClosePool
	opNewReservation
	opTryGrow
	opGrow
	opShrink
	opCloseReservation
	opReclaim
	opReclaimTask
	opImport
	opExport
	opReleaseBatch
	opCopy
	opCloseArrow
	opTaskEnd
	opReleaseExport
	opForged
	opCount
)

// seqDeadline bounds one sequence: its calls return in milliseconds unless
// one waits for ever.
const seqDeadline = 20 * time.Second

// seqTasks are the task attempts a sequence opens pools for; each has its
// own Spark (a fake upstream).
const seqTasks = 2

// seqState is what the goroutines of one sequence share: every handle ever
// issued (closed ones stay, so that later calls use them stale), and the
// exported structs Java has not released yet.
type seqState struct {
	t        *testing.T
	b        *bridge.Bridge
	up       [seqTasks]*fakeUpstream
	producer *producer

	mu struct {
		sync.Mutex
		pools, ress, batches, taskHandles []int64
		poolTask, resPool                 map[int64]int64 // handle → task index, reservation → pool handle
		exported                          []exportedStructs
	}
}

type exportedStructs struct {
	arr *cdata.CArrowArray
	sc  *cdata.CArrowSchema
}

// owner is one pool's upstream as jni makes it: a global ref to the task's
// owner, made at each create and deleted by Close, over the task's Spark,
// which outlives it (a task may open a pool again after its first closed).
type owner struct {
	s      *seqState
	up     *fakeUpstream
	closed atomic.Bool
}

func (o *owner) Acquire(n int64) (int64, error) {
	if o.closed.Load() {
		o.s.t.Errorf("Acquire(%d) through a deleted global ref", n)
	}
	return o.up.Acquire(n)
}

func (o *owner) Release(n int64) error {
	if o.closed.Load() {
		o.s.t.Errorf("Release(%d) through a deleted global ref", n)
	}
	return o.up.Release(n)
}

func (o *owner) Close() {
	if o.closed.Swap(true) {
		o.s.t.Error("an owner's global ref deleted twice")
	}
}

// pick returns the handle idx selects from list, or a forged one when the
// list is empty or idx's top bit is set (a handle Java never got).
func (s *seqState) pick(list *[]int64, idx, x byte) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(*list) == 0 || idx&0x80 != 0 {
		return int64(idx)<<40 | int64(x)<<8 | int64(idx^x)
	}
	return (*list)[int(idx)%len(*list)]
}

func (s *seqState) add(list *[]int64, h int64) {
	s.mu.Lock()
	*list = append(*list, h)
	s.mu.Unlock()
}

// size is a request size: mostly small, some past the fake Spark's budget,
// some negative.
func size(b, c byte) int64 {
	switch {
	case c == 0xff:
		return -int64(b) - 1
	case c >= 0xf0:
		return int64(b) << 20
	}
	return int64(b)<<8 | int64(c)
}

// check fails the sequence on an error Java would see as a bare
// RuntimeException: everything a caller can get wrong is an
// IllegalArgumentException or an IllegalStateException, and only a refusal
// of memory (ResourcesExhausted, an allocator out of memory) is not.
func (s *seqState) check(op string, err error) {
	if err == nil {
		return
	}
	switch bridge.Classify(err) {
	case bridge.ThrowIllegalArgument, bridge.ThrowIllegalState:
		return
	}
	if errors.Is(err, pool.ErrResourcesExhausted) || errors.Is(err, ffi.ErrOutOfMemory) {
		return
	}
	s.t.Errorf("%s: %v (%v)", op, err, bridge.Classify(err))
}

// run executes one operation.
func (s *seqState) run(op, a, b, c byte) {
	st := &s.mu
	switch op % opCount {
	case opOpen:
		task := int64(a % seqTasks)
		kind := int32(bridge.KindGreedyUnified)
		if b&1 != 0 {
			kind = bridge.KindFairUnified
		}
		ph, err := s.b.OpenPool(100+task, kind, 64<<20, int64(c%3)<<20, func(th int64) (bridge.OwnedUpstream, error) {
			s.add(&st.taskHandles, th)
			return &owner{s: s, up: s.up[task]}, nil
		})
		s.check("openPool", err)
		if err == nil {
			s.mu.Lock()
			st.pools = append(st.pools, ph)
			st.poolTask[ph] = task
			s.mu.Unlock()
		}
	case opClosePool:
		s.check("closePool", s.b.ClosePool(s.pick(&st.pools, a, b)))
	case opNewReservation:
		ph := s.pick(&st.pools, a, b)
		h, err := s.b.NewReservation(ph, fmt.Sprintf("r%d", c), c&1 != 0, nil)
		s.check("newReservation", err)
		if err == nil {
			s.mu.Lock()
			st.ress = append(st.ress, h)
			st.resPool[h] = ph
			s.mu.Unlock()
		}
	case opTryGrow:
		s.check("tryGrow", s.b.TryGrow(s.pick(&st.ress, a, b), size(b, c)))
	case opGrow:
		s.check("grow", s.b.Grow(s.pick(&st.ress, a, b), size(b, c)))
	case opShrink:
		s.check("shrink", s.b.Shrink(s.pick(&st.ress, a, b), size(b, c)))
	case opCloseReservation:
		s.check("closeReservation", s.b.CloseReservation(s.pick(&st.ress, a, b)))
	case opReclaim:
		_, err := s.b.Reclaim(s.pick(&st.pools, a, b), size(b, c))
		s.check("reclaim", err)
	case opReclaimTask:
		_, err := s.b.ReclaimTask(s.pick(&st.taskHandles, a, b), size(b, c))
		s.check("reclaimTask", err)
	case opImport:
		arr, sc := s.producer.export(s.t, int64(b), 1+int64(c%64))
		h, err := ImportBatchAt(s.b, s.pick(&st.ress, a, b), uintptr(unsafe.Pointer(arr)), uintptr(unsafe.Pointer(sc)))
		s.check("importBatch", err)
		if err != nil {
			cdata.ReleaseCArrowArray(arr) // the caller still owns what a refused import left
			cdata.ReleaseCArrowSchema(sc)
			return
		}
		s.add(&st.batches, h)
	case opExport:
		out, outSchema := cStructs(s.t)
		err := ExportBatchAt(s.b, s.pick(&st.batches, a, b), uintptr(unsafe.Pointer(out)), uintptr(unsafe.Pointer(outSchema)))
		s.check("exportBatch", err)
		if err == nil {
			s.mu.Lock()
			st.exported = append(st.exported, exportedStructs{out, outSchema})
			s.mu.Unlock()
		}
	case opReleaseBatch:
		s.check("releaseBatch", s.b.ReleaseBatch(s.pick(&st.batches, a, b)))
	case opCopy:
		h, err := CopyBatch(s.b, s.pick(&st.ress, a, b), s.pick(&st.batches, b, c), "")
		s.check("copyBatch", err)
		if err == nil {
			s.add(&st.batches, h)
		}
	case opCloseArrow:
		_, err := s.b.CloseArrow(s.pick(&st.ress, a, b))
		s.check("closeArrow", err)
	case opTaskEnd:
		s.taskEnd(int64(a % seqTasks))
	case opReleaseExport:
		s.mu.Lock()
		if len(st.exported) == 0 {
			s.mu.Unlock()
			return
		}
		i := int(a) % len(st.exported)
		e := st.exported[i]
		st.exported = append(st.exported[:i], st.exported[i+1:]...)
		s.mu.Unlock()
		cdata.ReleaseCArrowArray(e.arr) // Java's release, possibly after its task ended
		cdata.ReleaseCArrowSchema(e.sc)
	case opForged:
		forged := int64(a)<<56 | int64(b)<<24 | int64(c)
		for _, err := range []error{
			s.b.TryGrow(forged, 1), s.b.Shrink(forged, 1), s.b.CloseReservation(forged), s.b.ClosePool(forged),
			s.b.ReleaseBatch(forged),
		} {
			if k := bridge.Classify(err); err == nil || k != bridge.ThrowIllegalArgument && k != bridge.ThrowIllegalState {
				s.t.Errorf("a forged handle %#x: %v (%v)", forged, err, k)
			}
		}
	}
}

// taskEnd is what the task completion listener does on Java's side: close
// the Arrow allocator and the handle of each reservation of the task's
// pools, then each pool handle.
func (s *seqState) taskEnd(task int64) {
	s.mu.Lock()
	var pools, ress []int64
	for _, ph := range s.mu.pools {
		if s.mu.poolTask[ph] == task {
			pools = append(pools, ph)
		}
	}
	for _, rh := range s.mu.ress {
		if s.mu.poolTask[s.mu.resPool[rh]] == task {
			ress = append(ress, rh)
		}
	}
	s.mu.Unlock()
	for _, rh := range ress {
		_, err := s.b.CloseArrow(rh)
		s.check("closeArrow at task end", err)
		s.check("closeReservation at task end", s.b.CloseReservation(rh))
	}
	for _, ph := range pools {
		s.check("closePool at task end", s.b.ClosePool(ph))
	}
}

// books checks, with no call in flight, that Java's books and Go's agree
// for each task with an open pool: the pool's HELD is what Spark granted
// the task, and RESERVED + SLACK = HELD + OVERCOMMIT.
func (s *seqState) books() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ph := range s.mu.pools {
		st, err := s.b.PoolStats(ph)
		if err != nil {
			continue // closed
		}
		up := s.up[s.mu.poolTask[ph]]
		if st[bridge.StatHeld] != up.Held() {
			s.t.Fatalf("pool %#x: HELD %d, Spark granted %d; %v", ph, st[bridge.StatHeld], up.Held(), st)
		}
		if st[bridge.StatReserved]+st[bridge.StatSlack] != st[bridge.StatHeld]+st[bridge.StatOvercommit] {
			s.t.Fatalf("pool %#x: RESERVED + SLACK != HELD + OVERCOMMIT: %v", ph, st)
		}
	}
}

// FuzzBridgeCallSequences runs random interleavings of the natives from
// one to three goroutines (open, grow, shrink, spill through a pool or a
// task handle, close, import, export, copy, release, task end), with stale
// handles (every closed handle stays in play) and forged ones mixed in.
// The properties: no call panics, every error is one Java can be told
// (IllegalArgument or IllegalState, or a refusal of memory); once the
// goroutines are done, each open pool's HELD is what its task's Spark
// granted and RESERVED + SLACK = HELD + OVERCOMMIT; after every task ends
// and Java releases its exports, Spark holds nothing for any task, no task
// is live, nothing is allocated, every import went back to its producer,
// and the upstream was never misused (a zero or negative call, a return of
// more than it granted).
//
// It runs in Go against the bridge core (internal/bridge) with the real
// Arrow runtime, which is what every native is a thin wrapper of; Java's
// own books (the MemoryConsumer's mirror against Spark's TaskMemoryManager)
// are checked through JNI by the plugin's PoolAccountingTest.
func FuzzBridgeCallSequences(f *testing.F) {
	f.Add([]byte{1,
		opOpen, 0, 0, 1, opNewReservation, 0, 0, 0, opTryGrow, 0, 4, 0, opImport, 0, 3, 9, opCopy, 0, 0, 0,
		opExport, 0, 1, 0, opTaskEnd, 0, 0, 0, opReleaseExport, 0, 0, 0})
	f.Add([]byte{3,
		opOpen, 0, 1, 2, opOpen, 1, 0, 0, opOpen, 0, 1, 2, opNewReservation, 0, 0, 1, opNewReservation, 1, 1, 0,
		opNewReservation, 2, 0, 3, opGrow, 0, 200, 0xf0, opGrow, 1, 3, 7, opTryGrow, 2, 9, 9, opReclaim, 0, 0, 0xf1,
		opReclaimTask, 0, 1, 0xf0, opShrink, 1, 1, 1, opImport, 1, 2, 3, opImport, 2, 5, 6, opCopy, 0, 1, 1,
		opExport, 1, 0, 0, opCloseArrow, 1, 0, 0, opClosePool, 0, 0, 0, opTryGrow, 0, 1, 1, opTaskEnd, 1, 0, 0,
		opForged, 7, 7, 7, opReleaseBatch, 0, 0, 0, opReleaseExport, 0, 0, 0})
	f.Add([]byte{2,
		opOpen, 0, 0, 0, opNewReservation, 0, 0, 0, opCloseReservation, 0, 0, 0, opGrow, 0, 1, 1, opClosePool, 0, 0, 0,
		opClosePool, 0, 0, 0, opReclaimTask, 0, 0, 0, opShrink, 0, 0, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		workers := 1 + int(in[0])%3
		ops := in[1:]
		if len(ops) > 4*64 {
			ops = ops[:4*64]
		}
		b, _ := newTestBridge(t)
		s := &seqState{t: t, b: b, producer: newProducer()}
		s.mu.poolTask = map[int64]int64{}
		s.mu.resPool = map[int64]int64{}
		for i := range s.up {
			s.up[i] = newFakeUpstream(48 << 20)
		}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := 4 * w; i+3 < len(ops); i += 4 * workers {
					s.run(ops[i], ops[i+1], ops[i+2], ops[i+3])
				}
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(seqDeadline):
			stacks := make([]byte, 1<<20)
			t.Fatalf("the calls did not return within %v (a deadlock):\n%s", seqDeadline, stacks[:runtime.Stack(stacks, true)])
		}
		s.books()

		// Every task ends; then Java releases what it still holds.
		for task := range int64(seqTasks) {
			s.taskEnd(task)
		}
		for _, h := range s.mu.batches {
			_ = b.ReleaseBatch(h) // stale for most: closed with their allocator
		}
		for _, e := range s.mu.exported {
			cdata.ReleaseCArrowArray(e.arr)
			cdata.ReleaseCArrowSchema(e.sc)
		}
		for i, up := range s.up {
			up.requireSane(t)
			if up.Held() != 0 {
				t.Fatalf("task %d: Spark still holds %d bytes after the task ended", i, up.Held())
			}
		}
		if n := b.LiveTasks(); n != 0 {
			t.Fatalf("%d tasks still live after every task ended", n)
		}
		if a := b.ProcessArrowStats()[bridge.ArrowPStatAllocated]; a != 0 {
			t.Fatalf("%d bytes still allocated after every task ended and every export was released", a)
		}
		require.Zero(t, s.producer.mem.CurrentAlloc(), "imports not given back to their producer")
	})
}
