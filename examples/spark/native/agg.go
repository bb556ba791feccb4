package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nativepool/nativepool/examples/internal/spillable"
	"github.com/nativepool/nativepool/examples/internal/spillfile"
	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/pool"
)

// The streaming aggregation of the soak (examples/spark/README.md, "The
// streaming soak"): one aggregator per partition and micro-batch, that is
// per Spark task, grouping the micro-batch's rows by key into a count and a
// sum of values, on top of the partition's state kept on disk.
//
// # Life of a micro-batch
//
//	Push(batch)… ──▶ hash table of this micro-batch's groups ──spill──▶ sorted run files
//	Finish()     ──▶ merge of the previous state version, the runs and the table
//	Next()…      ──▶ the groups this micro-batch updated, with their new totals;
//	                 every group goes to the new state version, committed after the last
//	Close()      ──▶ everything released, run files removed
//
// The state between micro-batches is a file per version in the partition's
// state directory: every group of the partition, sorted by key. Version v is
// written by the task of micro-batch v from version v-1 (none for v = 0),
// under a temporary name renamed at commit, and versions below v-1 are
// removed then (v-1 stays, so that a retried task of micro-batch v still
// finds its input). So nothing native outlives the task: each micro-batch
// is a new task with a new task pool, and at its end every byte goes back.
//
// # Memory
//
// Every buffer proportional to the data comes from an ffi.Allocator over
// the aggregator's reservation in the task's pool: the table (24 bytes a
// slot, at most three-quarters full), the merge's file buffers (64 KiB per
// file), the state writer's buffer and the output batches, which stay
// charged until Java releases them. When the pool refuses a bigger table the
// aggregator spills (self-initiated): it sorts the table's groups in place,
// writes them to a run file straight from the table's memory and frees the
// table. When the pool asks it to spill (pool.Spiller: Spark's spill of the
// task's native consumer reaches it through the unified pool's Reclaim) it
// does the same. Once it has spilled, Finish spills the table too, so the
// merge reads files only; if the pool refuses a file's buffer, the merge
// writes the table out, or merges the open runs into one first (a pass).
//
// # Locking and re-entrancy
//
// As in extsort: the driver methods (Push, Finish, Next, Close) are called
// by one goroutine at a time, Spill may come from any goroutine at any
// moment, including from inside an allocation of the driver goroutine (the
// pool asks Spark, and Spark spills the requester itself). No driver method
// holds the lock across an allocation; under the lock the aggregator only
// frees, which never spills. Spill recognises a call from the goroutine that
// holds the lock and answers 0. After Finish a Spill frees nothing: the
// merge holds working memory only (and the table, which the merge writes
// out itself when the pool refuses it a buffer).
//
// The lock, the driver guard and the spill counters are extsort's too
// (examples/internal/spillable), and so is the spill-file writer
// (examples/internal/spillfile): runs are written straight from the
// table's memory, merge passes through the state writer's buffer.

// aggOptions configure newAggregator.
type aggOptions struct {
	// Name is the consumer's name in the pool (refusals, leak reports,
	// the ledger's owners).
	Name string
	// Version is the micro-batch: the aggregator reads state version
	// Version-1 (none when Version is 0) and writes Version.
	Version int64
	// StateDir is the partition's state directory, made if missing.
	StateDir string
	// TempDir is where the aggregator makes its private run directory.
	// Default os.TempDir().
	TempDir string
	// BatchRows is the number of rows of each output batch. Default 8192.
	BatchRows int
	// InitialSlots is the size of a new table (a power of two). Default
	// 4096 (96 KiB).
	InitialSlots int
	// AllocatorOptions are passed to ffi.NewAllocator (allocation sites).
	AllocatorOptions []ffi.Option
	// RetainBytes plants a leak: after each commit the aggregator copies
	// groups into a buffer of this size that it keeps (retained), as a
	// cache that never lets go would. 0, the default, keeps nothing.
	RetainBytes int64
	// Logger receives the spills at debug level. Default slog.Default().
	Logger *slog.Logger
}

const (
	defaultAggBatchRows = 8192
	defaultInitialSlots = 4096
)

// aggPhase is where an aggregator is in its life.
type aggPhase int

const (
	aggAccepting aggPhase = iota // Push
	aggMerging                   // Next
	aggCommitted                 // the new state version is written
	aggClosed
)

func (p aggPhase) String() string {
	return [...]string{"accepting", "merging", "committed", "closed"}[p]
}

// aggStats is a snapshot of an aggregator's counters.
type aggStats struct {
	RowsIn, BatchesIn int64
	// MinValue and MaxValue bound the values pushed (MaxInt64 and MinInt64
	// without rows); SumIn is their sum.
	MinValue, MaxValue, SumIn int64
	// RowsOut is the groups the micro-batch updated, returned by Next.
	RowsOut, BatchesOut int64
	// SelfSpills are spills the aggregator started when the pool refused a
	// table or a buffer (and Finish's spill of the table once it had
	// spilled); SelfSpilledBytes is the memory they freed.
	SelfSpills, SelfSpilledBytes int64
	// RequestedSpills are Spill calls that freed bytes; SpillRequests counts
	// every Spill call.
	RequestedSpills, SpillRequests int64
	// SpilledGroups and SpilledBytes are what run files hold; Runs counts
	// them, MergePasses the runs merged into one to save buffers.
	SpilledGroups, SpilledBytes, Runs, MergePasses int64
	// The new state version: its groups, their rows and sums, its bytes.
	StateGroups, StateCount, StateSum, StateBytes int64
	// The reservation and the allocator, now and at their peak.
	Reserved, PeakReserved, Allocated, PeakAllocated int64
	// RetainedBytes is what the aggregator keeps after its commit (the
	// planted leak).
	RetainedBytes int64
}

// aggregator is the streaming aggregation of one partition for one
// micro-batch; see the comment at the top of agg.go. Build it with
// newAggregator.
type aggregator struct {
	opts     aggOptions
	consumer *pool.Consumer
	res      *pool.Reservation
	alloc    *ffi.Allocator
	spillDir *spillfile.Dir // private run directory, removed by Close
	log      *slog.Logger
	driver   spillable.Driver  // catches concurrent driver methods
	spills   *spillable.Spills // runs Spill and the aggregator's own spills under mu, counts them

	// mu guards the aggregation's state, keeps its sticky failure
	// (mu.Fail) and knows its holder, so that Spill can refuse a re-entrant
	// call. It is never held across an allocation (see the top of agg.go).
	mu struct {
		spillable.Mutex
		phase    aggPhase
		table    *table
		runs     []*fileSource // spill runs, not yet opened
		merge    *merger
		mem      *memSource // the table as a merge source, while in the merge
		writer   *groupWriter
		out      [3]*memory.Buffer // the first output batch's buffers, from openMerge
		retained [][]byte
	}

	rowsIn, batchesIn, sumIn, minValue, maxValue atomic.Int64
	rowsOut, batchesOut                          atomic.Int64
	spilledGroups, spilledBytes, runs, passes    atomic.Int64
	stateGroups, stateCount, stateSum, stateSize atomic.Int64
	peakReserved, retainedBytes                  atomic.Int64
}

// newAggregator registers a spillable consumer named opts.Name in p and
// opens the partition's state. Version must be ≥ 0, and version
// Version-1 must exist when Version > 0: a missing one means the state was
// lost, which the aggregator reports instead of starting over.
func newAggregator(p pool.Pool, opts aggOptions) (*aggregator, error) {
	if opts.Version < 0 || opts.StateDir == "" || opts.RetainBytes < 0 {
		return nil, fmt.Errorf("aggregate: version %d, state directory %q, retained bytes %d: need a version ≥ 0, a directory and retained bytes ≥ 0", opts.Version, opts.StateDir, opts.RetainBytes)
	}
	opts.Name = cmp.Or(opts.Name, "StreamingAgg")
	if opts.BatchRows <= 0 {
		opts.BatchRows = defaultAggBatchRows
	}
	if opts.InitialSlots <= 0 {
		opts.InitialSlots = defaultInitialSlots
	}
	if opts.InitialSlots < 2 || opts.InitialSlots&(opts.InitialSlots-1) != 0 {
		return nil, fmt.Errorf("aggregate: initial slots %d: not a power of two", opts.InitialSlots)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("aggregate: %w", err)
	}
	if opts.Version > 0 {
		if _, err := os.Stat(statePath(opts.StateDir, opts.Version-1)); err != nil {
			return nil, fmt.Errorf("aggregate: state version %d of %s: %w", opts.Version-1, opts.StateDir, err)
		}
	}
	dir, err := spillfile.New(opts.TempDir, "agg-*", ".groups")
	if err != nil {
		return nil, fmt.Errorf("aggregate: %w", err)
	}
	a := &aggregator{opts: opts, spillDir: dir, log: opts.Logger}
	a.minValue.Store(math.MaxInt64)
	a.maxValue.Store(math.MinInt64)
	a.consumer = pool.NewConsumer(opts.Name).WithSpiller(a)
	a.spills = spillable.NewSpills(&a.mu.Mutex, opts.Logger.With("consumer", a.consumer), "aggregate")
	a.res = a.consumer.Register(p)
	a.alloc = ffi.NewAllocator(nil, a.res, append([]ffi.Option{ffi.WithLogger(opts.Logger)}, opts.AllocatorOptions...)...)
	return a, nil
}

// statePath is the file of state version v in dir.
func statePath(dir string, v int64) string {
	return filepath.Join(dir, strconv.FormatInt(v, 10)+".state")
}

// Consumer is the aggregator's consumer in the pool.
func (a *aggregator) Consumer() *pool.Consumer { return a.consumer }

// Reservation is the reservation every buffer of the aggregator is charged to.
func (a *aggregator) Reservation() *pool.Reservation { return a.res }

// Allocator is the accounted allocator the aggregator allocates with;
// output batches are charged through it until released.
func (a *aggregator) Allocator() *ffi.Allocator { return a.alloc }

// aggColumns returns the key and value columns of b: two non-null int64
// columns, in that order.
func aggColumns(b arrow.RecordBatch) (keys, values []int64, err error) {
	if b.NumCols() != 2 {
		return nil, nil, fmt.Errorf("aggregate: batch has %d columns, want 2 (key, value)", b.NumCols())
	}
	k, ok1 := b.Column(0).(*array.Int64)
	v, ok2 := b.Column(1).(*array.Int64)
	if !ok1 || !ok2 {
		return nil, nil, fmt.Errorf("aggregate: batch columns are %s and %s, want int64 and int64", b.Column(0).DataType(), b.Column(1).DataType())
	}
	if k.NullN() > 0 || v.NullN() > 0 {
		return nil, nil, fmt.Errorf("aggregate: batch has %d null keys and %d null values; nulls are not supported", k.NullN(), v.NullN())
	}
	return k.Int64Values(), v.Int64Values(), nil
}

// Push adds the rows of b (key, value: non-null int64) to their groups. b
// stays owned by the caller. When the pool refuses a bigger table, Push
// spills the table and goes on in a new one; it returns an error wrapping
// pool.ErrResourcesExhausted only when not even an empty table fits.
func (a *aggregator) Push(b arrow.RecordBatch) error {
	a.driver.Begin("aggregate: Push")
	defer a.driver.End()
	a.mu.Lock()
	ph, ferr := a.mu.phase, a.mu.ErrLocked()
	a.mu.Unlock()
	if ph != aggAccepting {
		return fmt.Errorf("aggregate: Push after %s", ph)
	}
	if ferr != nil {
		return ferr
	}
	keys, values, err := aggColumns(b)
	if err != nil {
		return err
	}
	a.noteInput(values)
	for i := 0; i < len(keys); {
		a.mu.Lock()
		if t := a.mu.table; t != nil {
			for i < len(keys) && !t.full() {
				t.add(keys[i], 1, values[i])
				i++
			}
		}
		a.mu.Unlock()
		if i < len(keys) {
			if err := a.grow(); err != nil {
				return err
			}
		}
	}
	a.batchesIn.Add(1)
	return nil
}

// noteInput counts the rows of a batch and their values' bounds and sum.
func (a *aggregator) noteInput(values []int64) {
	if len(values) == 0 {
		return
	}
	lo, hi, sum := values[0], values[0], int64(0)
	for _, v := range values {
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
	}
	a.rowsIn.Add(int64(len(values)))
	a.sumIn.Add(sum)
	if lo < a.minValue.Load() {
		a.minValue.Store(lo)
	}
	if hi > a.maxValue.Load() {
		a.maxValue.Store(hi)
	}
}

// grow gives the aggregator a table with room: a first one, or one twice
// the size of the full one, into which the groups move. If the pool refuses
// it, grow spills the table instead (the next row starts a new one).
func (a *aggregator) grow() error {
	a.mu.Lock()
	old := a.mu.table
	a.mu.Unlock()
	slots := a.opts.InitialSlots
	if old != nil {
		slots = 2 * len(old.slots)
	}
	// Allocate unlocked: the pool may ask Spark, and Spark may spill us.
	var nt *table
	err := ffi.Catch(func() error { nt = newTable(a.alloc, slots); return nil })
	if err != nil {
		if !errors.Is(err, pool.ErrResourcesExhausted) {
			return a.mu.Fail(fmt.Errorf("aggregate: %s: table of %d slots: %w", a.opts.Name, slots, err))
		}
		freed, serr := a.spillSelf()
		if serr != nil {
			return serr
		}
		a.mu.Lock()
		cur := a.mu.table
		a.mu.Unlock()
		if freed == 0 && old == nil && cur == nil {
			return fmt.Errorf("aggregate: %s: a table of %d slots does not fit even with nothing in memory: %w", a.opts.Name, slots, err)
		}
		return nil // spilled (by us, or by Spark while we asked): the next row starts a new table
	}
	a.samplePeaks()
	a.mu.Lock()
	defer a.mu.Unlock()
	switch cur := a.mu.table; {
	case cur == nil:
		// First table, or Spark spilled the old one while we asked for this
		// one: start over in it.
		a.mu.table = nt
	case cur == old:
		old.moveInto(nt)
		a.mu.table = nt
		old.free()
	default:
		nt.free() // not reached: one driver goroutine
	}
	return nil
}

// Spill implements pool.Spiller: the pool (a unified pool's Reclaim, which
// Spark's spill of the task's native consumer reaches) asks the aggregator
// to free memory. Before Finish it writes the table's groups, sorted, to a
// run file and frees the table, whatever target is, and returns the bytes
// it gave back to the allocator (the reservation has shrunk by them before
// Spill returns). It returns 0 once the merge has begun, after Close, and
// when called re-entrantly by the goroutine that holds the aggregator's
// lock. On an I/O error the aggregator fails (the groups are lost) and Spill
// returns what it freed and the error.
func (a *aggregator) Spill(target int64) (int64, error) {
	return a.spills.Requested(target, a.spillLocked)
}

// spillSelf is the spill the aggregator starts when the pool refuses it.
func (a *aggregator) spillSelf() (int64, error) {
	return a.spills.Self(a.spillLocked)
}

// spillLocked writes the table to a run file and frees it. The caller holds
// the lock.
func (a *aggregator) spillLocked() (int64, error) {
	t := a.mu.table
	if a.mu.phase != aggAccepting || t == nil {
		return 0, nil
	}
	a.mu.table = nil
	if t.n == 0 {
		return t.free(), nil
	}
	run, err := a.writeRunLocked(t.sorted())
	freed := t.free()
	if err != nil {
		return freed, a.mu.FailLocked(err) // the groups exist nowhere else
	}
	a.mu.runs = append(a.mu.runs, run)
	return freed, nil
}

// writeRunLocked writes sorted groups to a new run file. The caller holds
// the lock.
func (a *aggregator) writeRunLocked(groups []entry) (*fileSource, error) {
	run, err := a.spillDir.WriteFile(bytesOf(groups)) // straight from the table's memory
	if err != nil {
		return nil, fmt.Errorf("aggregate: %w", err)
	}
	a.runs.Add(1)
	a.spilledGroups.Add(int64(len(groups)))
	a.spilledBytes.Add(run.Bytes)
	return &fileSource{path: run.Path, isRun: true}, nil
}

// Finish ends the input and opens the merge of the previous state version,
// the run files and the table. Once the aggregator has spilled it spills
// the table too, so that the merge reads files only. Calling it twice is an
// error; on error the aggregator is failed and Close still releases
// everything.
func (a *aggregator) Finish() error {
	a.driver.Begin("aggregate: Finish")
	defer a.driver.End()
	a.mu.Lock()
	if a.mu.phase != aggAccepting {
		ph := a.mu.phase
		a.mu.Unlock()
		return fmt.Errorf("aggregate: Finish after %s", ph)
	}
	if err := a.mu.ErrLocked(); err != nil {
		a.mu.Unlock()
		return err
	}
	var err error
	if len(a.mu.runs) > 0 {
		var freed int64
		freed, err = a.spillLocked()
		a.spills.NoteSelf(freed)
	}
	var mem *memSource
	if t := a.mu.table; t != nil {
		a.mu.table = nil
		if t.n > 0 {
			mem = &memSource{t: t, groups: t.sorted()}
		} else {
			t.free()
		}
	}
	files := a.mu.runs
	a.mu.runs = nil
	if a.opts.Version > 0 {
		// Last: when the pool refuses a buffer, the runs opened before it
		// can be merged into one (a pass) to make room.
		files = append(files, &fileSource{path: statePath(a.opts.StateDir, a.opts.Version-1)})
	}
	a.mu.phase = aggMerging
	a.mu.mem = mem
	a.mu.merge = &merger{}
	a.mu.writer = &groupWriter{}
	a.mu.Unlock()
	if err != nil {
		return err
	}
	if err := a.openMerge(files); err != nil {
		return a.mu.Fail(err)
	}
	return nil
}

// openMerge allocates the state writer's buffer and the first output
// batch's (so that the file buffers leave room for the output: each later
// batch takes the memory of the one Java released before asking), opens
// every file source and starts the merge and the new version's file. When
// the pool refuses a buffer it writes the table out (if still in memory),
// else merges the runs it has opened into one (a pass), and goes on; it
// fails when neither is possible.
func (a *aggregator) openMerge(pending []*fileSource) error {
	var wbuf []byte
	if err := a.allocateInMerge("the state writer", func() { wbuf = a.allocateWriterBuffer() }); err != nil {
		a.release(pending)
		return err
	}
	a.mu.Lock()
	a.mu.writer.buf, a.mu.writer.groups = wbuf, entriesOf(wbuf)
	a.mu.Unlock()
	var out [3]*memory.Buffer
	err := a.allocateInMerge("an output batch", func() { a.allocateOutput(&out) })
	a.mu.Lock()
	a.mu.out = out
	a.mu.Unlock()
	if err != nil {
		a.release(pending)
		return err
	}
	var opened []*fileSource
	for len(pending) > 0 {
		f := pending[0]
		var more bool
		err := ffi.Catch(func() error {
			var err error
			more, err = f.open(a.alloc)
			return err
		})
		if err == nil {
			pending = pending[1:]
			if more {
				opened = append(opened, f)
			} else {
				f.release()
			}
			continue
		}
		if !errors.Is(err, pool.ErrResourcesExhausted) {
			a.release(pending)
			a.release(opened)
			return err
		}
		if run, _, werr := a.writeMemOut(); werr != nil || run != nil {
			if werr != nil {
				a.release(pending)
				a.release(opened)
				return werr
			}
			pending = beforeBase(pending, run) // the table was not in the merge yet
			continue
		}
		var runs, rest []*fileSource
		for _, o := range opened {
			if o.isRun {
				runs = append(runs, o)
			} else {
				rest = append(rest, o)
			}
		}
		if len(runs) < 2 {
			a.release(pending)
			a.release(opened)
			return fmt.Errorf("aggregate: %s: not enough memory to merge %d files: %w", a.opts.Name, len(opened)+len(pending), err)
		}
		run, perr := a.mergePass(runs)
		if perr != nil {
			a.release(pending)
			a.release(rest)
			return perr
		}
		opened = rest
		pending = beforeBase(pending, run)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.mu.merge
	for _, o := range opened {
		m.add(o)
	}
	if a.mu.mem != nil {
		m.add(a.mu.mem)
	}
	tmp, err := os.CreateTemp(a.opts.StateDir, strconv.FormatInt(a.opts.Version, 10)+".state.tmp-*")
	if err != nil {
		return fmt.Errorf("aggregate: %w", err)
	}
	a.mu.writer.start(stateFile{tmp})
	return nil
}

// beforeBase puts run into pending ahead of the previous state version,
// which is opened last.
func beforeBase(pending []*fileSource, run *fileSource) []*fileSource {
	i := len(pending)
	for i > 0 && !pending[i-1].isRun {
		i--
	}
	return slices.Insert(pending, i, run)
}

// allocateInMerge runs alloc (an allocation of the merge) and, while the
// pool refuses it, writes the table out of memory and tries again.
func (a *aggregator) allocateInMerge(what string, alloc func()) error {
	for {
		err := ffi.Catch(func() error { alloc(); return nil })
		if err == nil || !errors.Is(err, pool.ErrResourcesExhausted) {
			return err
		}
		run, old, werr := a.writeMemOut()
		switch {
		case werr != nil:
			return werr
		case run == nil:
			return fmt.Errorf("aggregate: %s: %s does not fit even with the table written out: %w", a.opts.Name, what, err)
		}
		if err := a.swapIn(run, old); err != nil {
			return err
		}
	}
}

// writeMemOut writes the table's groups not yet merged to a run file and
// frees the table (a self-initiated spill), and returns the run (not open)
// and the table's source it replaces; nil when the table is not in memory.
// Before the merge has started the run is opened like any other file; once
// the table is in the merge, swapIn puts the run in its place.
func (a *aggregator) writeMemOut() (run *fileSource, old *memSource, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.mu.mem
	if m == nil {
		return nil, nil, nil
	}
	run, err = a.writeRunLocked(m.groups[m.pos:])
	if err != nil {
		return nil, nil, a.mu.FailLocked(err)
	}
	a.mu.mem = nil
	m.groups = nil
	a.spills.NoteSelf(m.t.free())
	return run, m, nil
}

// swapIn opens run, the table's groups written out, and puts it in the
// merge in place of old, the table's source (same current group, so the
// heap's order is unchanged). When the table was not in the merge yet, run
// simply becomes a source of it.
func (a *aggregator) swapIn(run *fileSource, old *memSource) error {
	var more bool
	err := ffi.Catch(func() error {
		var err error
		more, err = run.open(a.alloc)
		return err
	})
	if err != nil {
		run.release()
		return fmt.Errorf("aggregate: %s: reopening the table written out: %w", a.opts.Name, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.mu.merge.h
	for i := range h {
		if h[i] == source(old) {
			if more {
				h[i] = run
			} else {
				run.release()
				a.mu.merge.h = append(h[:i], h[i+1:]...)
				a.mu.merge.fix()
			}
			return nil
		}
	}
	if more {
		a.mu.merge.add(run)
	} else {
		run.release()
	}
	return nil
}

// mergePass merges open runs into one new run through the state writer's
// buffer (not in use yet) and releases them.
func (a *aggregator) mergePass(runs []*fileSource) (*fileSource, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.mu.writer
	f, err := a.spillDir.Create()
	if err != nil {
		a.release(runs)
		return nil, fmt.Errorf("aggregate: %w", err)
	}
	w.start(f)
	m := &merger{}
	for _, r := range runs {
		m.add(r)
	}
	for !m.done() {
		e, _, _, err := m.next()
		if err == nil {
			err = w.put(e)
		}
		if err != nil {
			m.releaseAll()
			w.abort()
			return nil, err
		}
	}
	if _, err := w.finish(); err != nil {
		return nil, err
	}
	a.passes.Add(1)
	return &fileSource{path: f.Name(), isRun: true}, nil
}

// Next returns the next batch of the groups this micro-batch updated
// (columns key, count, sum: their totals over every micro-batch so far), at
// most Options.BatchRows of them, or (nil, io.EOF) after the last. The
// merge writes every group to the new state version on the way, and the
// call that reaches its end commits the version. The batch's buffers are
// charged to the aggregator's reservation until the caller releases it.
func (a *aggregator) Next() (arrow.RecordBatch, error) {
	a.driver.Begin("aggregate: Next")
	defer a.driver.End()
	a.mu.Lock()
	ph, ferr := a.mu.phase, a.mu.ErrLocked()
	a.mu.Unlock()
	switch {
	case ferr != nil:
		return nil, ferr
	case ph == aggCommitted:
		return nil, io.EOF
	case ph != aggMerging:
		return nil, fmt.Errorf("aggregate: Next %s", map[aggPhase]string{aggAccepting: "before Finish", aggClosed: "after Close"}[ph])
	}
	rows := a.opts.BatchRows
	a.mu.Lock()
	bufs := a.mu.out
	a.mu.out = [3]*memory.Buffer{}
	a.mu.Unlock()
	err := a.allocateInMerge("an output batch", func() { a.allocateOutput(&bufs) })
	releaseBufs := func() {
		for _, b := range bufs {
			if b != nil {
				b.Release()
			}
		}
	}
	if err != nil {
		releaseBufs()
		return nil, a.mu.Fail(err)
	}
	a.samplePeaks()
	keys := arrow.Int64Traits.CastFromBytes(bufs[0].Bytes())[:rows]
	counts := arrow.Int64Traits.CastFromBytes(bufs[1].Bytes())[:rows]
	sums := arrow.Int64Traits.CastFromBytes(bufs[2].Bytes())[:rows]

	k := 0
	a.mu.Lock()
	m, w := a.mu.merge, a.mu.writer
	for k < rows && !m.done() && err == nil {
		var e entry
		var updated bool
		if e, updated, _, err = m.next(); err == nil {
			err = w.put(e)
		}
		if err != nil {
			break
		}
		a.stateGroups.Add(1)
		a.stateCount.Add(e.count)
		a.stateSum.Add(e.sum)
		if updated {
			keys[k], counts[k], sums[k] = e.key, e.count, e.sum
			k++
		}
	}
	done := m.done()
	a.mu.Unlock()
	if err == nil && done {
		err = a.commit()
	}
	if err != nil {
		releaseBufs()
		return nil, a.mu.Fail(err)
	}
	if k == 0 {
		releaseBufs()
		return nil, io.EOF
	}
	rec := groupsRecord(bufs, k)
	releaseBufs() // the record holds its own references
	a.rowsOut.Add(int64(k))
	a.batchesOut.Add(1)
	return rec, nil
}

// allocateWriterBuffer allocates the state writer's buffer (a refusal
// panics: ffi.Catch).
func (a *aggregator) allocateWriterBuffer() []byte { return a.alloc.Allocate(readBufferBytes) }

// allocateOutput allocates the buffers of an output batch that bufs lacks
// (a refusal panics: ffi.Catch).
func (a *aggregator) allocateOutput(bufs *[3]*memory.Buffer) {
	for i := range bufs {
		if bufs[i] == nil {
			bufs[i] = memory.NewBufferWithAllocator(a.alloc.Allocate(a.opts.BatchRows*8), a.alloc)
		}
	}
}

// aggOutSchema is the schema of the batches Next returns.
var aggOutSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.PrimitiveTypes.Int64},
	{Name: "count", Type: arrow.PrimitiveTypes.Int64},
	{Name: "sum", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// groupsRecord makes a record batch of rows rows over the three buffers.
func groupsRecord(bufs [3]*memory.Buffer, rows int) arrow.RecordBatch {
	cols := make([]arrow.Array, len(bufs))
	for i, b := range bufs {
		d := array.NewData(arrow.PrimitiveTypes.Int64, rows, []*memory.Buffer{nil, b}, nil, 0, 0)
		cols[i] = array.NewInt64Data(d)
		d.Release()
	}
	rec := array.NewRecordBatch(aggOutSchema, cols, int64(rows))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// commit closes the new state version under its name, removes the versions
// it replaces (below Version-1) and frees the writer's buffer; with
// RetainBytes set it then keeps a batch (the planted leak).
func (a *aggregator) commit() error {
	a.mu.Lock()
	w := a.mu.writer
	n, err := w.finish()
	if err == nil {
		err = os.Rename(w.path, statePath(a.opts.StateDir, a.opts.Version))
	}
	if err != nil {
		os.Remove(w.path)
		a.mu.Unlock()
		return fmt.Errorf("aggregate: commit of version %d: %w", a.opts.Version, err)
	}
	a.alloc.Free(w.buf)
	w.buf, w.groups = nil, nil
	a.mu.phase = aggCommitted
	a.mu.Unlock()
	a.stateSize.Store(n)
	a.removeOldVersions()
	if a.opts.RetainBytes > 0 {
		a.retainReplayBatch()
	}
	return nil
}

// removeOldVersions removes the state versions below Version-1, and
// temporary files of versions below Version (left by failed attempts).
func (a *aggregator) removeOldVersions() {
	ents, err := os.ReadDir(a.opts.StateDir)
	if err != nil {
		a.log.Warn("aggregate: old state versions not removed", "dir", a.opts.StateDir, "err", err)
		return
	}
	for _, e := range ents {
		name, tmp, _ := strings.Cut(e.Name(), ".state")
		v, err := strconv.ParseInt(name, 10, 64)
		if err != nil {
			continue
		}
		if v < a.opts.Version-1 || (tmp != "" && v < a.opts.Version) {
			if err := os.Remove(filepath.Join(a.opts.StateDir, e.Name())); err != nil {
				a.log.Warn("aggregate: old state version not removed", "file", e.Name(), "err", err)
			}
		}
	}
}

// retainReplayBatch is the planted leak of the soak's --leak run: a batch
// of RetainBytes, allocated here (so that allocation sites name this
// function), filled, and kept for the life of the process, as a cache of
// the last micro-batch that nothing ever empties would. The buffer stays
// live after Close: the allocator reports it at Close and the library keeps
// it counted in the ledger's native.allocated.
func (a *aggregator) retainReplayBatch() {
	defer func() {
		if r := recover(); r != nil {
			err := ffi.Catch(func() error { panic(r) }) // a refusal becomes an error; any other panic goes on
			a.log.Warn("aggregate: replay batch refused", "consumer", a.consumer, "bytes", a.opts.RetainBytes, "err", err)
		}
	}()
	b := a.alloc.Allocate(int(a.opts.RetainBytes)) // here, not in a closure: the site names this function
	g := entriesOf(b)
	for i := range g {
		g[i] = entry{key: int64(i), count: 1, sum: a.opts.Version}
	}
	a.mu.Lock()
	a.mu.retained = append(a.mu.retained, b)
	a.mu.Unlock()
	a.retainedBytes.Add(int64(len(b)))
	a.samplePeaks()
}

// Stats returns a snapshot of the aggregator's counters.
func (a *aggregator) Stats() aggStats {
	spills := a.spills.Counts()
	return aggStats{
		RowsIn: a.rowsIn.Load(), BatchesIn: a.batchesIn.Load(),
		MinValue: a.minValue.Load(), MaxValue: a.maxValue.Load(), SumIn: a.sumIn.Load(),
		RowsOut: a.rowsOut.Load(), BatchesOut: a.batchesOut.Load(),
		SelfSpills: spills.Self, SelfSpilledBytes: spills.SelfBytes,
		RequestedSpills: spills.Requested, SpillRequests: spills.Requests,
		SpilledGroups: a.spilledGroups.Load(), SpilledBytes: a.spilledBytes.Load(),
		Runs: a.runs.Load(), MergePasses: a.passes.Load(),
		StateGroups: a.stateGroups.Load(), StateCount: a.stateCount.Load(),
		StateSum: a.stateSum.Load(), StateBytes: a.stateSize.Load(),
		Reserved: a.res.Size(), PeakReserved: a.peakReserved.Load(),
		Allocated: a.alloc.Allocated(), PeakAllocated: a.alloc.Snapshot().Peak,
		RetainedBytes: a.retainedBytes.Load(),
	}
}

// spilled returns the memory the aggregator's self-initiated spills freed
// and the bytes of the run files it wrote, so far (the engine's
// operator).
func (a *aggregator) spilled() (memory, disk int64) {
	return a.spills.Counts().SelfBytes, a.spilledBytes.Load()
}

// retained is the bytes the planted leak keeps (RetainBytes after a
// commit, else 0). Safe to call after Close.
func (a *aggregator) retained() int64 { return a.retainedBytes.Load() }

// Close releases every buffer the aggregator holds, removes its run files
// (and the new version's file, if it was not committed), closes the
// allocator and the reservation. Output batches the caller has not released,
// and the planted leak's retained batches, are leaks: Close returns the
// allocator's *ffi.LeakError and gives their charge back anyway (their later
// release frees the memory without touching the pool). A second Close
// returns nil.
func (a *aggregator) Close() error {
	a.driver.Begin("aggregate: Close")
	defer a.driver.End()
	if !a.releaseAll() {
		return nil // closed already
	}
	err := a.alloc.Close()
	a.res.Close()
	if rmErr := a.spillDir.RemoveAll(); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("aggregate: Close: %w", rmErr))
	}
	return err
}

// releaseAll moves the aggregator to aggClosed and, under its lock, frees
// every buffer and removes every file it holds but the allocator's leaks;
// it does nothing and reports false when the aggregator was closed
// already.
func (a *aggregator) releaseAll() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.phase == aggClosed {
		return false
	}
	a.mu.phase = aggClosed
	a.mu.table.free()
	a.mu.table = nil
	a.release(a.mu.runs)
	a.mu.runs = nil
	if a.mu.merge != nil {
		a.mu.merge.releaseAll()
	}
	if a.mu.mem != nil {
		a.mu.mem.release()
		a.mu.mem = nil
	}
	for _, b := range a.mu.out {
		if b != nil {
			b.Release()
		}
	}
	a.mu.out = [3]*memory.Buffer{}
	if w := a.mu.writer; w != nil {
		w.abort()
		if w.buf != nil {
			a.alloc.Free(w.buf)
			w.buf, w.groups = nil, nil
		}
	}
	return true
}

// release releases file sources.
func (a *aggregator) release(fs []*fileSource) {
	for _, f := range fs {
		f.release()
	}
}

func (a *aggregator) samplePeaks() {
	for v := a.res.Size(); ; {
		cur := a.peakReserved.Load()
		if v <= cur || a.peakReserved.CompareAndSwap(cur, v) {
			return
		}
	}
}
