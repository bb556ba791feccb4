package extsort

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nativepool/nativepool/examples/internal/spillable"
	"github.com/nativepool/nativepool/examples/internal/spillfile"
	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/pool"
)

// DefaultBatchRows is the default number of rows per output and spill batch.
const DefaultBatchRows = 8192

// DefaultAccountQuantum is the sorter's default Options.AccountQuantum:
// 4 KiB, so the account keeps at most 8 KiB of slack. A spill request is
// answered with the slack first, and slack is reserved but not resident:
// a pod guard asking native memory to give way needs resident bytes, and
// a slack of a few KiB beside 128 KiB chunks (a batch each at
// DefaultBatchRows) makes every such request reach the chunks. A Push
// crosses to the pool once per chunk whatever the quantum.
const DefaultAccountQuantum = 4 << 10

// Options configure New. The zero Options are valid: every field has a
// default.
type Options struct {
	// Name is the consumer's name in the pool (refusal messages, reports).
	// Default "ExternalSorter", DataFusion's name for its sort consumer.
	Name string
	// BatchRows is the number of rows of each output batch and of each
	// batch written to a run file. Default DefaultBatchRows.
	BatchRows int
	// TempDir is where the sorter makes its private run directory. Default
	// os.TempDir().
	TempDir string
	// Inner is the allocator the accounted ffi.Allocator takes memory from.
	// nil (the default) means C memory from libc, which is what output
	// batches exported to the JVM through the C Data Interface need and what
	// makes RSS follow the books (freed Go memory stays resident until a GC).
	Inner memory.Allocator
	// AllocatorOptions are passed to ffi.NewAllocator (and to the chunks'
	// ffi.NewAccountAllocator), e.g. ffi.WithAllocationSites(true) for leak
	// reports with stacks. The allocator charges the reservation exactly (no
	// ffi chunking) unless told otherwise: a Spill must shrink the
	// reservation by what it frees.
	AllocatorOptions []ffi.Option
	// AccountQuantum is the quantum of the pool.Account the in-memory
	// chunks (one per Push) are charged through: Push asks the pool for
	// memory in steps of it, and the account keeps at most twice it
	// reserved beyond the chunks (Stats.Slack). Default
	// DefaultAccountQuantum.
	AccountQuantum int64
	// Logger receives a debug record per spill. Default slog.Default().
	Logger *slog.Logger
}

// Stats is a snapshot of a sorter's counters.
type Stats struct {
	RowsIn  int64 // rows accepted by Push
	RowsOut int64 // rows returned by Next

	SelfSpills int64 // spills the sorter started because the pool refused a buffer
	// SelfSpilledBytes is the memory those spills freed (Spark counts such
	// bytes as the task's memoryBytesSpilled).
	SelfSpilledBytes int64
	RequestedSpills  int64 // Spill calls (a pool's Reclaim, Spark's spill) that freed bytes
	SpillRequests    int64 // every Spill call, including those that found nothing to free
	SpilledRows      int64 // rows written to run files
	SpilledBytes     int64 // bytes of run files written
	Runs             int64 // run files written, by spills and by merge passes
	MergePasses      int64 // merges of several runs into one, when the pool could not hold a batch of every run
	// MaxFanIn is the most runs merged at once, by a merge pass or by the
	// final merge: bounded by the batches the pool granted (0 without runs).
	MaxFanIn int64
	// MergeLevels is the depth of the merge tree: how many times the
	// deepest row was read from a run file and merged (1 when one merge
	// of every run sufficed, 0 without runs). With a fan-in of k it is
	// ceil(log_k(runs)).
	MergeLevels int64

	Reserved     int64 // the sorter's reservations' current size (its account's included)
	PeakReserved int64 // their high-water mark, sampled after every accounted allocation
	// Allocated is the bytes in live buffers of the sorter's allocators:
	// the in-memory chunks and everything else (output batches included).
	Allocated     int64
	PeakAllocated int64 // high-water mark of Allocated, sampled with PeakReserved
	// Slack is what the chunks' account holds reserved in the pool beyond
	// the chunks (at most twice Options.AccountQuantum): counted in
	// Reserved and in the pool's figures, in no buffer.
	Slack int64
	// PeakSlack is the high-water mark of Slack, sampled with PeakReserved.
	PeakSlack int64
}

type phase int

const (
	accepting phase = iota // Push allowed
	merging                // Finish called; Next allowed
	closed                 // Close called
)

// Sorter is an external sort over Schema batches whose every buffer is
// charged to a pool. Push batches, call Finish, call Next until io.EOF,
// then Close.
//
// The driver methods (Push, Finish, Next, Close) must not run concurrently
// with each other (a second concurrent one panics); Spill and Stats are
// safe to call from any goroutine at any time, including from inside a
// driver method's pool calls on the same goroutine (see the package doc).
// The zero Sorter is not usable; build one with New.
type Sorter struct {
	opts     Options
	consumer *pool.Consumer
	res      *pool.Reservation
	alloc    *ffi.Allocator
	// acct charges the in-memory chunks (through chunkAlloc), on a
	// reservation of the same registration as res. Like the chunks, it is
	// used under mu only; a grow of it that crosses to the pool releases mu
	// meanwhile (pool.Account.WithLock), so the pool's spill request can
	// reach Spill.
	acct       *pool.Account
	chunkAlloc *ffi.Allocator
	spillDir   *spillfile.Dir // private run directory, removed by Close
	log        *slog.Logger

	// driver catches concurrent driver methods.
	driver spillable.Driver
	// spills runs Spill and the sorter's own spills under mu, and counts
	// them.
	spills *spillable.Spills

	// mu guards the sort state; every field below is read and written
	// under it only. It is never held across a call that can reach
	// Pool.TryGrow (every accounted allocation happens unlocked), because
	// TryGrow may call Upstream.Acquire, which may call Reclaim and so Spill
	// on this goroutine, or wait for a goroutine that is inside our Spill.
	// Under mu the sorter writes run files and frees memory (Shrink, which
	// reaches at most Upstream.Release, which never spills). Lock order: mu,
	// then the pool's locks; pools call Spill with none of theirs held.
	// mu also keeps the sticky failure (mu.Fail), which Next returns, and
	// knows its holder, so that Spill can refuse a re-entrant call.
	mu struct {
		spillable.Mutex
		phase  phase
		chunks []*chunk   // sorted in-memory chunks: appended by Push, taken by spills and Finish
		runs   []*runFile // run files before Finish: appended by spills, taken by Finish
		// scratch is the spill buffer: charged by New, freed by Finish
		// after its merge passes, by the merge-phase spill that empties
		// memory, or by Close (nil after).
		scratch *scratch
		merge   *merger // set by Finish; its heap is changed by Next and merge-phase spills
	}

	rowsIn, rowsOut                 atomic.Int64
	spilledRows, spilledBytes, runs atomic.Int64
	mergePasses, maxFanIn, levels   atomic.Int64
	peakReserved, peakAllocated     atomic.Int64
	peakSlack                       atomic.Int64
}

var _ pool.Spiller = (*Sorter)(nil)

// New registers a spillable consumer with p and returns a sorter whose
// buffers are charged to that consumer's reservation. It charges the spill
// buffer (2 × 8 × BatchRows bytes) at once and makes a private directory
// for run files. On error (the pool refuses the spill buffer, the directory
// cannot be made) nothing is left registered or created.
func New(p pool.Pool, opts Options) (*Sorter, error) {
	if opts.Name == "" {
		opts.Name = "ExternalSorter"
	}
	if opts.BatchRows <= 0 {
		opts.BatchRows = DefaultBatchRows
	}
	if opts.AccountQuantum <= 0 {
		opts.AccountQuantum = DefaultAccountQuantum
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	dir, err := spillfile.New(opts.TempDir, "extsort-*", ".arrow")
	if err != nil {
		return nil, fmt.Errorf("extsort: New: %w", err)
	}
	s := &Sorter{opts: opts, spillDir: dir, log: opts.Logger}
	s.consumer = pool.NewConsumer(opts.Name).WithSpiller(s)
	s.spills = spillable.NewSpills(&s.mu.Mutex, opts.Logger.With("consumer", s.consumer), "extsort")
	s.res = s.consumer.Register(p)
	allocOpts := append([]ffi.Option{ffi.WithLogger(opts.Logger)}, opts.AllocatorOptions...)
	s.alloc = ffi.NewAllocator(opts.Inner, s.res, allocOpts...)
	s.acct = pool.NewAccount(s.res.NewEmpty(), opts.AccountQuantum).WithLock(&s.mu.Mutex)
	s.chunkAlloc = ffi.NewAccountAllocator(opts.Inner, s.acct, allocOpts...)
	var sc *scratch
	if err := recoverRefusal(func() { sc = newScratch(s.alloc, opts.BatchRows) }); err != nil {
		s.chunkAlloc.Close()
		s.acct.Close()
		s.alloc.Close()
		s.res.Close()
		dir.RemoveAll()
		return nil, fmt.Errorf("extsort: New: spill buffer of %d rows: %w", opts.BatchRows, err)
	}
	s.mu.scratch = sc
	s.samplePeaks()
	return s, nil
}

// Consumer is the sorter's consumer in the pool.
func (s *Sorter) Consumer() *pool.Consumer { return s.consumer }

// Reservation is the consumer's first reservation, which Allocator
// charges: every buffer but the in-memory chunks, which the account
// charges on a reservation of its own (Allocators).
func (s *Sorter) Reservation() *pool.Reservation { return s.res }

// Allocator is the accounted allocator the sorter allocates with, except
// for the in-memory chunks; output batches are charged through it until
// released. Its Snapshot has the exact allocated bytes and their peak.
func (s *Sorter) Allocator() *ffi.Allocator { return s.alloc }

// Allocators are every allocator the sorter charges through: Allocator,
// and the chunks' (ffi.NewAccountAllocator over the sorter's account).
// Each charges its own Reservation, so allocated ≤ reserved holds for each
// at every instant.
func (s *Sorter) Allocators() []*ffi.Allocator { return []*ffi.Allocator{s.alloc, s.chunkAlloc} }

// Push copies the rows of b (Schema's shape, no nulls) into one accounted
// buffer and sorts them in place. b stays owned by the caller. If the pool
// refuses the buffer, Push spills what is buffered and retries; it returns
// an error wrapping pool.ErrResourcesExhausted when the batch does not fit
// even with nothing buffered (as DataFusion's ExternalSorter does), and
// then nothing was added. Push after Finish returns an error.
func (s *Sorter) Push(b arrow.RecordBatch) error {
	s.driver.Begin("extsort: Push")
	defer s.driver.End()
	keys, payloads, err := columns(b)
	if err != nil {
		return err
	}
	s.mu.Lock()
	ph := s.mu.phase
	s.mu.Unlock()
	if ph != accepting {
		return fmt.Errorf("extsort: Push after %s", ph)
	}
	if len(keys) == 0 {
		return nil
	}

	// Allocate under the lock, through the account: a grow that crosses to
	// the pool releases the lock meanwhile, so the pool may re-enter Spill
	// on this goroutine (or another's Spill may run). The chunk is not
	// published until it is sorted.
	var c *chunk
	err = s.retryAfterSpill(fmt.Sprintf("Push(%d rows)", len(keys)), func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		return recoverRefusal(func() { c = newChunk(s.chunkAlloc, len(keys)) })
	})
	if err != nil {
		return err
	}
	s.samplePeaks()
	for i, k := range keys {
		c.pairs[i] = pair{k, payloads[i]}
	}
	// pdqsort in place: no memory beyond the chunk itself.
	slices.SortFunc(c.pairs, comparePairs)

	s.mu.Lock()
	s.mu.chunks = append(s.mu.chunks, c)
	s.mu.Unlock()
	s.rowsIn.Add(int64(len(keys)))
	return nil
}

// Finish ends the input and prepares the merge. If the sorter has spilled,
// it first spills the in-memory chunks too (as DataFusion's ExternalSorter
// does once it has spilled), so that the merge reads only run files and
// needs one batch per run; it then loads the first batch of every run,
// merging groups of runs into longer ones (a multi-pass merge) whenever
// the pool refuses a batch, so any number of runs can be merged with
// memory for two batches plus the output; and it frees the spill buffer,
// which nothing needs any more. Without spills it allocates nothing.
// Calling it twice is an error. On error the sorter is failed: later Next
// calls return the error and Close still releases everything.
func (s *Sorter) Finish() error {
	s.driver.Begin("extsort: Finish")
	defer s.driver.End()
	s.mu.Lock()
	if s.mu.phase != accepting {
		s.mu.Unlock()
		return fmt.Errorf("extsort: Finish after %s", s.mu.phase)
	}
	spilled := len(s.mu.runs) > 0
	var err error
	if spilled {
		var freed int64
		freed, err = s.spillSlackFirstLocked(math.MaxInt64)
		s.spills.NoteSelf(freed)
	}
	m := &merger{}
	for _, c := range s.mu.chunks {
		src := &memSource{c: c}
		m.all = append(m.all, src)
		m.add(c.pairs[0], src)
		m.rows += int64(len(c.pairs))
	}
	var queue []*fileSource
	for _, r := range s.mu.runs {
		src := &fileSource{run: r}
		m.all = append(m.all, src)
		queue = append(queue, src)
		m.rows += r.rows
	}
	s.mu.chunks, s.mu.runs = nil, nil
	s.mu.merge = m
	s.mu.phase = merging
	s.mu.Unlock()
	if err != nil {
		return err // spillChunksLocked has failed the sorter
	}
	if !spilled {
		return nil
	}
	if err := s.openRuns(m, queue); err != nil {
		return s.mu.Fail(err)
	}
	s.mu.Lock()
	s.mu.scratch.release()
	s.mu.scratch = nil
	s.mu.Unlock()
	s.samplePeaks()
	return nil
}

// Next returns the next sorted batch of at most Options.BatchRows rows, or
// (nil, io.EOF) after the last. The batch's buffers are charged to the
// sorter's reservation until the caller releases the batch. If the pool
// refuses the output or a run's next batch, Next spills the in-memory rows
// and retries; if that frees nothing it returns an error wrapping
// pool.ErrResourcesExhausted, and the sorter stays failed (every later Next
// returns the same error; Close still releases everything).
func (s *Sorter) Next() (arrow.RecordBatch, error) {
	s.driver.Begin("extsort: Next")
	defer s.driver.End()
	s.mu.Lock()
	ph, err, m := s.mu.phase, s.mu.ErrLocked(), s.mu.merge
	var remaining int64
	if m != nil {
		remaining = m.rows
	}
	s.mu.Unlock()
	switch {
	case ph != merging:
		return nil, fmt.Errorf("extsort: Next %s", map[phase]string{accepting: "before Finish", closed: "after Close"}[ph])
	case err != nil:
		return nil, err
	case remaining == 0:
		return nil, io.EOF
	}
	rows := int(min(int64(s.opts.BatchRows), remaining))

	// Output buffers, allocated unlocked.
	var keyBuf, payloadBuf *memory.Buffer
	err = s.retryAfterSpill(fmt.Sprintf("Next(%d rows)", rows), func() error {
		return recoverRefusal(func() {
			if keyBuf == nil {
				keyBuf = memory.NewBufferWithAllocator(s.alloc.Allocate(rows*8), s.alloc)
			}
			payloadBuf = memory.NewBufferWithAllocator(s.alloc.Allocate(rows*8), s.alloc)
		})
	})
	if err != nil {
		if keyBuf != nil {
			keyBuf.Release()
		}
		return nil, s.mu.Fail(err)
	}
	s.samplePeaks()
	keys := arrow.Int64Traits.CastFromBytes(keyBuf.Bytes())[:rows]
	payloads := arrow.Int64Traits.CastFromBytes(payloadBuf.Bytes())[:rows]

	filled := 0
	for {
		s.mu.Lock()
		filled += m.emit(keys[filled:], payloads[filled:])
		if filled == rows {
			// A source that ran out on the last row stays pending for the
			// next call.
			s.mu.Unlock()
			break
		}
		pending := m.pending
		m.pending = nil
		s.mu.Unlock()
		if len(pending) == 0 {
			keyBuf.Release()
			payloadBuf.Release()
			return nil, s.mu.Fail(fmt.Errorf("extsort: internal error: merge ran dry after %d of %d rows", filled, rows))
		}
		// Load the next batch of each waiting run, unlocked: reading
		// allocates through the pool. A source whose load fails is kept in
		// m.all, so Close still releases it.
		for _, f := range pending {
			head, err := s.load(f)
			if err != nil {
				keyBuf.Release()
				payloadBuf.Release()
				return nil, s.mu.Fail(err)
			}
			s.mu.Lock()
			m.add(head, f)
			s.mu.Unlock()
		}
	}
	s.rowsOut.Add(int64(rows))
	rec := int64Record(keyBuf, payloadBuf, rows)
	keyBuf.Release()
	payloadBuf.Release()
	return rec, nil
}

// Spill implements pool.Spiller: the pool (a unified pool's Reclaim, which
// Spark's spill(size) reaches) asks the sorter to free memory. It gives
// its account's slack back first, and if that covers target, spills
// nothing. Otherwise, before Finish it merges the sorted in-memory chunks
// into one run file; during the merge it writes the unconsumed rows of
// each in-memory chunk to a run file and reads them back later. It frees
// every in-memory chunk then, whatever target is, and returns the bytes
// its reservations have shrunk by before Spill returns. It returns 0 when
// nothing is in memory (the merge's current batches and the spill buffer
// are working memory), after Close, and when called re-entrantly by the
// goroutine that holds the sorter's lock. On an I/O error it returns what
// it freed so far and the error; the rows stay correct (a chunk is freed
// only after its rows are on disk).
func (s *Sorter) Spill(target int64) (int64, error) {
	return s.spills.Requested(target, func() (int64, error) { return s.spillSlackFirstLocked(target) })
}

// spillSelf is the spill the sorter starts when the pool refuses a buffer:
// the account's slack, and every in-memory chunk.
func (s *Sorter) spillSelf() (int64, error) {
	return s.spills.Self(func() (int64, error) { return s.spillSlackFirstLocked(math.MaxInt64) })
}

// spillSlackFirstLocked gives the account's slack back and, if that falls
// short of target, spills (spillLocked); it returns the bytes the sorter's
// reservations shrank by: the account's (its slack and the chunks, all
// given back) and the spill buffer's. The caller holds s.mu.
func (s *Sorter) spillSlackFirstLocked(target int64) (int64, error) {
	var buffer int64
	freed, err := s.acct.Spill(target, func(int64) error {
		var err error
		buffer, err = s.spillLocked()
		return err
	})
	return freed + buffer, err
}

// spillLocked writes the in-memory rows to disk and frees them; the
// chunks' bytes go to the account (spillSlackFirstLocked counts them), and
// it returns the bytes of other buffers it freed (the spill buffer, once
// the merge needs it no more). The caller holds s.mu.
func (s *Sorter) spillLocked() (int64, error) {
	switch s.mu.phase {
	case accepting:
		return 0, s.spillChunksLocked()
	case merging:
		return s.spillMergeLocked()
	}
	return 0, nil
}

// spillChunksLocked merges every in-memory chunk into one run file and
// frees the chunks as their rows reach the scratch buffer (their bytes go
// to the account, which counts them). The caller holds s.mu.
func (s *Sorter) spillChunksLocked() error {
	if len(s.mu.chunks) == 0 {
		return nil
	}
	rw, err := s.createRunLocked()
	if err != nil {
		return err
	}
	m := &merger{}
	for _, c := range s.mu.chunks {
		m.all = append(m.all, &memSource{c: c})
		m.add(c.pairs[0], m.all[len(m.all)-1])
		m.rows += int64(len(c.pairs))
	}
	for m.rows > 0 {
		n := m.emit(rw.sc.keys, rw.sc.payloads)
		if err := rw.write(n); err != nil {
			// Chunks already consumed are gone with the partial run:
			// their rows exist nowhere else, so the sorter is failed.
			rw.abort()
			m.releaseAll()
			s.mu.chunks = nil
			return s.mu.FailLocked(err)
		}
	}
	run, err := rw.finish()
	s.mu.chunks = nil
	if err != nil {
		return s.mu.FailLocked(err)
	}
	s.mu.runs = append(s.mu.runs, run)
	s.countRun(run)
	return nil
}

// spillMergeLocked moves the unconsumed rows of each in-memory chunk of the
// merge to a run file of its own and swaps the source for a file source
// with the same current row, so the heap order is unchanged. The caller
// holds s.mu.
func (s *Sorter) spillMergeLocked() (int64, error) {
	m := s.mu.merge
	if s.mu.scratch == nil {
		return 0, nil // no in-memory source is left (see Finish)
	}
	released := false
	for i := range m.h {
		ms, ok := m.h[i].src.(*memSource)
		if !ok {
			continue
		}
		// The current row stays in the heap entry; the file holds the rows
		// after it.
		rest := ms.c.pairs[ms.pos+1:]
		fs := &fileSource{}
		if len(rest) > 0 {
			rw, err := s.createRunLocked()
			if err != nil {
				return 0, err
			}
			for len(rest) > 0 {
				n := min(len(rest), len(rw.sc.keys))
				for j, p := range rest[:n] {
					rw.sc.keys[j], rw.sc.payloads[j] = p.key, p.payload
				}
				if err := rw.write(n); err != nil {
					rw.abort()
					return 0, err // nothing freed for this chunk; the merge is intact
				}
				rest = rest[n:]
			}
			run, err := rw.finish()
			if err != nil {
				return 0, err
			}
			s.countRun(run)
			fs.run = run
		}
		released = ms.release() > 0 || released
		m.h[i].src = fs
		m.all = append(m.all, fs)
	}
	if !released {
		return 0, nil
	}
	// No in-memory source can appear after Finish, so the spill buffer has
	// done its last job: free it too (it is as large as an output batch).
	// (When Finish has spilled, no source was in memory to begin with and
	// the merge passes of openRuns still use the buffer.)
	freed := s.mu.scratch.charged()
	s.mu.scratch.release()
	s.mu.scratch = nil
	return freed, nil
}

func (s *Sorter) createRunLocked() (*runWriter, error) {
	return createRun(s.spillDir, s.mu.scratch)
}

func (s *Sorter) countRun(r *runFile) {
	s.runs.Add(1)
	s.spilledRows.Add(r.rows)
	s.spilledBytes.Add(r.bytes)
}

// retryAfterSpill runs alloc; while the pool refuses it, spills (self-
// initiated) and tries again, until a spill frees nothing. Call it without
// the lock.
func (s *Sorter) retryAfterSpill(op string, alloc func() error) error {
	for {
		err := alloc()
		if err == nil || !errors.Is(err, pool.ErrResourcesExhausted) {
			return err
		}
		freed, serr := s.spillSelf()
		if serr != nil {
			return fmt.Errorf("extsort: %s: spill after refusal: %w", op, serr)
		}
		if freed == 0 {
			return fmt.Errorf("extsort: %s: not enough memory even with nothing left to spill: %w", op, err)
		}
	}
}

// Close releases every buffer the sorter holds, removes its run files,
// closes the allocator and the reservation (unregistering the consumer).
// Output batches from Next that the caller has not released yet are leaks:
// Close returns the allocator's *ffi.LeakError naming the consumer and the
// bytes, and gives their charge back anyway (their later release is a late
// free that does not touch the pool: the closed allocator keeps them on its
// books until they are freed). A second Close returns nil.
func (s *Sorter) Close() error {
	s.driver.Begin("extsort: Close")
	defer s.driver.End()
	s.mu.Lock()
	if s.mu.phase == closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.phase = closed
	for _, c := range s.mu.chunks {
		c.release()
	}
	for _, r := range s.mu.runs {
		r.remove()
	}
	if s.mu.merge != nil {
		s.mu.merge.releaseAll()
	}
	s.mu.chunks, s.mu.runs, s.mu.merge = nil, nil, nil
	s.mu.scratch.release()
	s.mu.scratch = nil
	err := s.chunkAlloc.Close()
	s.acct.Close()
	s.mu.Unlock()
	err = errors.Join(err, s.alloc.Close())
	s.res.Close()
	if rmErr := s.spillDir.RemoveAll(); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("extsort: Close: %w", rmErr))
	}
	return err
}

// Stats returns a snapshot of the sorter's counters.
func (s *Sorter) Stats() Stats {
	spills := s.spills.Counts()
	return Stats{
		RowsIn:           s.rowsIn.Load(),
		RowsOut:          s.rowsOut.Load(),
		SelfSpills:       spills.Self,
		SelfSpilledBytes: spills.SelfBytes,
		RequestedSpills:  spills.Requested,
		SpillRequests:    spills.Requests,
		SpilledRows:      s.spilledRows.Load(),
		SpilledBytes:     s.spilledBytes.Load(),
		Runs:             s.runs.Load(),
		MergePasses:      s.mergePasses.Load(),
		MaxFanIn:         s.maxFanIn.Load(),
		MergeLevels:      s.levels.Load(),
		Reserved:         s.reserved(),
		PeakReserved:     s.peakReserved.Load(),
		Allocated:        s.allocated(),
		PeakAllocated:    s.peakAllocated.Load(),
		Slack:            s.slack(),
		PeakSlack:        s.peakSlack.Load(),
	}
}

// reserved is what the sorter's reservations hold (its account's
// included).
func (s *Sorter) reserved() int64 { return s.res.Size() + s.acct.Reservation().Size() }

// slack is what the chunks' account holds beyond the chunks. It is read
// from two atomics, not from the account (which only its lock's holder may
// read): exact between the sorter's operations.
func (s *Sorter) slack() int64 {
	return max(s.acct.Reservation().Size()-s.chunkAlloc.Allocated(), 0)
}

// allocated is the bytes in live buffers of both allocators.
func (s *Sorter) allocated() int64 { return s.alloc.Allocated() + s.chunkAlloc.Allocated() }

// samplePeaks updates the high-water marks after an allocation.
func (s *Sorter) samplePeaks() {
	storeMax(&s.peakReserved, s.reserved())
	storeMax(&s.peakAllocated, s.allocated())
	storeMax(&s.peakSlack, s.slack())
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

func (p phase) String() string {
	switch p {
	case accepting:
		return "accepting"
	case merging:
		return "Finish"
	default:
		return "Close"
	}
}
