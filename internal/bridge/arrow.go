package bridge

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nativepool/nativepool/pool"
)

// The Arrow batch registry (jni/API.md, "Arrow batches"): the pure-Go core
// of importBatch0, exportBatch0, copyBatch0, releaseBatch0, arrowStats0,
// processArrowStats0, configureArrow0 and closeArrow0. What needs cgo (the
// C Data structs, their validation, ffi's allocator) is handed in: the
// allocator through ArrowRuntime, and the import, export and copy
// themselves as functions of ImportBatch, ExportBatch and CopyBatch.
//
// Every reservation handle gets one ArrowAllocator, made on first use
// (arrowSlot) and closed — its leak report logged, its charge given back —
// before the reservation or the task's pool closes, or by closeArrow0. The
// allocator charges a reservation of its own (arrowSlot.res), a sibling of
// the handle's reservation in the same registration (pool.Reservation's
// NewEmpty): the bytes count for the same consumer in the pool (its share,
// its spill order, TrackConsumers), but the handle's reservation holds only
// what Java grew through it, so Java's memory.Reservation.size() and Go's
// Size() are one figure, kept once, by Go. The charge follows ffi's rule
// (ffi/doc.go): the producer pays while the buffers live, the importer only
// tracks.
//
//   - importBatch0 (Java → Go): ffi.ProducerCharges. The Java allocator that
//     made the buffers keeps its charge until Go releases the batch (its
//     release callback fires the Java listener's onRelease); Go counts the
//     bytes in Snapshot.Imported and reports them if still held at close.
//   - copyBatch0: a deep copy into buffers the reservation's allocator makes
//     (C memory), Go-charged to its Arrow reservation until the last reference
//     (the batch handle, and any export of it) is released.
//   - exportBatch0 (Go → Java): the Go charge stays until Java releases the
//     exported struct, even after the batch handle is released.
//
// Batch handles live in a generation-checked table (tagBatch) like pools and
// reservations: a second release, or any use of a released batch, is an
// ErrStaleHandle (IllegalStateException), and nothing is released twice.
// Closing an allocator releases the batch handles it still owns (after the
// leak report has named them), so a batch left unreleased at task end is
// both reported and freed.

// ArrowAllocator is a reservation's Arrow allocator as the registry sees
// it. The library's is an *ffi.Allocator (internal/arrowruntime); tests use
// fakes.
type ArrowAllocator interface {
	// Snapshot returns the allocator's figures.
	Snapshot() ArrowSnapshot
	// Close reports what the allocator still holds (nil if nothing) and
	// gives its charge back to its reservation. Called once, with no call
	// using the allocator.
	Close() *ArrowLeak
}

// ArrowSnapshot is an allocator's figures (ffi.Snapshot's, as arrowStats0
// reports them).
type ArrowSnapshot struct {
	Allocated, Reserved, Forced, Peak, Refusals int64
	LiveBuffers                                 int
	Imported, Exported                          int64
	ImportsLive, ExportsLive                    int
}

// ArrowLeak is what an allocator still held at its close.
type ArrowLeak struct {
	// Bytes is what it held: its own live buffers and the imported bytes.
	Bytes int64
	// Report names the consumer, what is held and, when recorded, the
	// allocation sites (ffi.LeakError.Report).
	Report string
	// Exports is the number of exported batches Java had not released.
	Exports int
	// Site is the allocating function of the most bytes
	// (ffi.LeakError.TopSite), or "" when sites are not recorded.
	Site string
}

// Drift is one sample of the process's resident set against what the Go
// runtime holds and the Arrow allocators made (ffi.Drift); -1 each when
// it cannot be read.
type Drift struct{ RSS, GoRuntime, RSSOther int64 }

// ArrowRuntime is what the registry needs from the cgo side: a new
// allocator charging res (recording allocation sites if sites is set), and
// a sample of the process's resident set. The zero value fails every Arrow
// call with an error (a Bridge without Arrow support).
type ArrowRuntime struct {
	NewAllocator func(res *pool.Reservation, sites bool, logger *slog.Logger) ArrowAllocator
	MeasureDrift func(reserved, allocated int64) (Drift, error)
}

// ArrowSettings are the process-wide Arrow options of configureArrow0. They
// apply to allocators made after they are set. The zero value records no
// allocation sites.
type ArrowSettings struct {
	// AllocationSites makes new allocators record the stack of every
	// allocation (ffi.WithAllocationSites), so leak reports name the
	// allocating function. It costs a stack walk per allocation.
	AllocationSites bool
}

// arrowState is the Bridge's Arrow part: the batch handle table, the
// settings and the open allocators (their leaks are counted by the leak
// book, leaks.go). Its zero value is ready (the table is made on first
// use). Safe for concurrent use.
//
// Lock order: a reservation's arrowSlot.mu, then arrowState.mu; a batch's
// batchHandle.mu is never held with either. No lock is held while a batch is
// released (releasing an imported batch calls the Java producer back) or
// while an allocator closes (that shrinks the reservation: an upcall).
type arrowState struct {
	runtime ArrowRuntime
	once    sync.Once
	batches *HandleTable[*batchHandle]
	sites   atomic.Bool

	mu struct {
		sync.Mutex
		// live are the open allocators, by reservation handle.
		live map[*reservationHandle]ArrowAllocator
		// lingering are closed allocators whose memory is not all freed yet:
		// exports Java has not released (into an allocator the task's end
		// does not close), or imports a re-export still pins. They stay
		// here, counted by ProcessArrowStats with their owner, until the
		// last of it is freed (lingerSweep).
		lingering map[*reservationHandle]ArrowAllocator
		// engine are allocators an engine made itself and tracks
		// (TrackAllocator), by their entry; the engine closes them.
		engine map[*ownedAllocator]struct{}
	}
}

func (s *arrowState) table() *HandleTable[*batchHandle] {
	s.once.Do(func() { s.batches = NewHandleTable[*batchHandle](tagBatch) })
	return s.batches
}

func (s *arrowState) addLive(rh *reservationHandle, a ArrowAllocator) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.live == nil {
		s.mu.live = make(map[*reservationHandle]ArrowAllocator)
	}
	s.mu.live[rh] = a
}

// TrackAllocator counts an allocator an engine made itself (not through a
// reservation handle's Arrow calls) in the process's Arrow figures
// (ProcessArrowStats: ALLOCATED, LIVE_ALLOCATORS, EXPORTED, IMPORTED) and in
// LiveNative under consumer, until the returned untrack is called (once,
// before or after the engine closes it; later calls do nothing). The Bridge
// never closes it: its leak checks stay the engine's. Without it, the
// memory of an engine's own allocators shows in no part of the executor
// memory ledger, only in its unexplained remainder.
func (b *Bridge) TrackAllocator(consumer string, a ArrowAllocator) (untrack func()) {
	e := &ownedAllocator{consumer: consumer, a: a}
	s := &b.arrow
	s.mu.Lock()
	if s.mu.engine == nil {
		s.mu.engine = make(map[*ownedAllocator]struct{})
	}
	s.mu.engine[e] = struct{}{}
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.mu.engine, e)
			s.mu.Unlock()
		})
	}
}

// ownedAllocator is an allocator with the consumer it is counted under.
type ownedAllocator struct {
	consumer string
	a        ArrowAllocator
}

// allocators returns the allocators whose memory is live: the open ones of
// reservation handles, the engines' tracked ones and, with lingering, the
// closed ones whose memory outlived their task.
func (s *arrowState) allocators(lingering bool) []ownedAllocator {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ownedAllocator, 0, len(s.mu.live)+len(s.mu.engine)+len(s.mu.lingering))
	for rh, a := range s.mu.live {
		out = append(out, ownedAllocator{rh.r.Consumer().Name(), a})
	}
	for e := range s.mu.engine {
		out = append(out, ownedAllocator{e.consumer, e.a})
	}
	if lingering {
		for rh, a := range s.mu.lingering {
			out = append(out, ownedAllocator{rh.r.Consumer().Name(), a})
		}
	}
	return out
}

func (s *arrowState) removeLive(rh *reservationHandle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mu.live, rh)
}

// arrowSlot is a reservation handle's Arrow allocator. The allocator is made
// on first use and closed once; calls that use it are counted (users), and a
// close that arrives while some are in flight is finished by the last of
// them (pending), because ffi.Allocator.Close must not race with Allocate. A
// Go lock is never held across those calls: they reach Spark (TryGrow).
// The zero value is an open slot without an allocator.
type arrowSlot struct {
	mu    sync.Mutex
	alloc ArrowAllocator // nil until first use
	// res is what alloc charges: a sibling of the handle's reservation
	// (NewEmpty), made with alloc and closed right after alloc closes
	// (finishArrowClose), when alloc has given its charge back.
	res     *pool.Reservation
	closed  bool // no new use; set once
	pending bool // closed while in use: the last user finishes the close
	users   int
	batches map[int64]*batchHandle // live batch handles this allocator owns
}

// batchHandle is one batch handle's record. rb is nil once released.
type batchHandle struct {
	mu    sync.Mutex
	rb    arrow.RecordBatch
	owner *reservationHandle
	alloc ArrowAllocator
}

// take removes the batch from its record, so that exactly one caller
// releases it.
func (bh *batchHandle) take() arrow.RecordBatch {
	bh.mu.Lock()
	defer bh.mu.Unlock()
	rb := bh.rb
	bh.rb = nil
	return rb
}

// arrowClosedErr is the error of a use of a closed allocator.
func arrowClosedErr(op string, rh *reservationHandle) error {
	return fmt.Errorf("nativepool: %s: the Arrow allocator of %s: %w", op, rh.r.Consumer(), pool.ErrClosed)
}

// enterArrow starts a call that uses rh's allocator, making it if needed.
// Every successful enterArrow must be paired with exitArrow. It fails with
// pool.ErrClosed if the allocator or the reservation is closed.
func (b *Bridge) enterArrow(op string, rh *reservationHandle) (ArrowAllocator, error) {
	// An Arrow call charges the reservation (it may wait in Spark): it is an
	// acquiring call, which the pool's close waits for (callgate.go).
	if !rh.tp.calls.enterAcquire() {
		return nil, arrowClosedErr(op, rh)
	}
	s := &rh.arrow
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		rh.tp.calls.exit()
		return nil, arrowClosedErr(op, rh)
	}
	if s.alloc == nil {
		if rh.r.Closed() {
			rh.tp.calls.exit()
			return nil, arrowClosedErr(op, rh)
		}
		if b.arrow.runtime.NewAllocator == nil {
			rh.tp.calls.exit()
			return nil, fmt.Errorf("nativepool: %s for %s: this bridge has no Arrow runtime", op, rh.r.Consumer())
		}
		res := newArrowReservation(rh.r)
		if res == nil {
			rh.tp.calls.exit()
			return nil, arrowClosedErr(op, rh)
		}
		s.res = res
		s.alloc = b.arrow.runtime.NewAllocator(res, b.arrow.sites.Load(), rh.tp.logger)
		b.arrow.addLive(rh, s.alloc)
	}
	s.users++
	return s.alloc, nil
}

// newArrowReservation returns a new empty reservation of r's registration
// for an Arrow allocator, or nil if r was closed meanwhile (NewEmpty's panic
// on a closed reservation).
func newArrowReservation(r *pool.Reservation) (res *pool.Reservation) {
	defer func() {
		if recover() != nil {
			res = nil
		}
	}()
	return r.NewEmpty()
}

// exitArrow ends a call begun by enterArrow; the last user of a slot closed
// meanwhile finishes the close.
func (b *Bridge) exitArrow(rh *reservationHandle) {
	s := &rh.arrow
	s.mu.Lock()
	s.users--
	finish := s.users == 0 && s.pending
	if finish {
		s.pending = false
	}
	s.mu.Unlock()
	if finish {
		b.finishArrowClose(rh)
	}
	rh.tp.calls.exit()
}

// registerBatch gives rb a batch handle owned by rh's allocator. The caller
// is inside enterArrow. If the allocator was closed meanwhile, rb is
// released and the error wraps pool.ErrClosed.
func (b *Bridge) registerBatch(op string, rh *reservationHandle, a ArrowAllocator, rb arrow.RecordBatch) (int64, error) {
	s := &rh.arrow
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		rb.Release()
		return 0, arrowClosedErr(op, rh)
	}
	bh := &batchHandle{rb: rb, owner: rh, alloc: a}
	h, err := b.arrow.table().Insert(bh)
	if err != nil {
		s.mu.Unlock()
		rb.Release()
		return 0, err
	}
	if s.batches == nil {
		s.batches = make(map[int64]*batchHandle)
	}
	s.batches[h] = bh
	s.mu.Unlock()
	return h, nil
}

// ImportBatch registers a batch imported into the allocator of reservation
// handle res, zero-copy (ffi.ProducerCharges: the producer keeps its charge
// until the batch is released), and returns its batch handle. check runs
// first, with the consumer's name for its messages (the C Data validation:
// nothing may touch the structs before it accepts them); then imp imports
// with the allocator, inside the call (enterArrow).
//
// Errors: a bad handle wraps ErrInvalidHandle; what check or imp return is
// returned as it is; a closed reservation or allocator wraps pool.ErrClosed
// (ErrStaleHandle for a closed handle).
func (b *Bridge) ImportBatch(res int64, check func(consumer string) error, imp func(ArrowAllocator) (arrow.RecordBatch, error)) (int64, error) {
	rh, err := b.reservation(res)
	if err != nil {
		return 0, err
	}
	if err := check(rh.r.Consumer().String()); err != nil {
		return 0, err
	}
	a, err := b.enterArrow("importBatch", rh)
	if err != nil {
		return 0, err
	}
	defer b.exitArrow(rh)
	rb, err := imp(a)
	if err != nil {
		return 0, err
	}
	return b.registerBatch("importBatch", rh, a, rb)
}

// ExportBatch exports a batch with exp, zero-copy, from the allocator that
// made or imported it, which keeps its buffers charged until the consumer
// releases the export, even after the batch handle is released. check runs
// first (the target structs' validation); exp runs inside the call, with
// the batch locked against a concurrent release.
//
// Errors: a released batch wraps ErrStaleHandle; a closed allocator
// pool.ErrClosed; what check or exp return is returned as it is.
func (b *Bridge) ExportBatch(batch int64, check func() error, exp func(arrow.RecordBatch, ArrowAllocator) error) error {
	bh, err := b.arrow.table().Get(batch)
	if err != nil {
		return err
	}
	if err := check(); err != nil {
		return err
	}
	if _, err := b.enterArrow("exportBatch", bh.owner); err != nil {
		return err
	}
	defer b.exitArrow(bh.owner)
	bh.mu.Lock()
	defer bh.mu.Unlock()
	if bh.rb == nil {
		return fmt.Errorf("nativepool: batch handle 0x%x is closed: %w", uint64(batch), ErrStaleHandle)
	}
	if err := exp(bh.rb, bh.alloc); err != nil {
		return fmt.Errorf("nativepool: exportBatch: %w", err)
	}
	return nil
}

// CopyBatch deep-copies a batch with cp into buffers made by the allocator
// of reservation handle res (charged to res's Arrow reservation, a sibling
// of res in the same registration, until the copy's last reference is
// released) and returns the copy's handle. res's own reservation is not
// charged: its Size stays what Java grew.
//
// Errors: the pool's refusal wraps pool.ErrResourcesExhausted; nothing
// stays charged, and the source batch is unchanged. A released batch wraps
// ErrStaleHandle; a closed reservation or allocator pool.ErrClosed; an
// upcall failure is a *JavaException.
func (b *Bridge) CopyBatch(res, batch int64, cp func(ArrowAllocator, arrow.RecordBatch) (arrow.RecordBatch, error)) (int64, error) {
	rh, err := b.reservation(res)
	if err != nil {
		return 0, err
	}
	bh, err := b.arrow.table().Get(batch)
	if err != nil {
		return 0, err
	}
	a, err := b.enterArrow("copyBatch", rh)
	if err != nil {
		return 0, err
	}
	defer b.exitArrow(rh)
	bh.mu.Lock()
	src := bh.rb
	if src != nil {
		src.Retain()
	}
	bh.mu.Unlock()
	if src == nil {
		return 0, fmt.Errorf("nativepool: batch handle 0x%x is closed: %w", uint64(batch), ErrStaleHandle)
	}
	defer src.Release()
	out, err := cp(a, src)
	if err != nil {
		return 0, fmt.Errorf("nativepool: copyBatch into %s: %w", rh.r.Consumer(), err)
	}
	return b.registerBatch("copyBatch", rh, a, out)
}

// ReleaseBatch releases a batch handle: the buffers are freed (an imported
// batch's producer is called back) once no export still references them. A
// second release, or a release of a batch its allocator's close already
// released, wraps ErrStaleHandle and releases nothing.
func (b *Bridge) ReleaseBatch(batch int64) error {
	bh, err := b.arrow.table().Remove(batch)
	if err != nil {
		return err
	}
	s := &bh.owner.arrow
	s.mu.Lock()
	delete(s.batches, batch)
	s.mu.Unlock()
	if rb := bh.take(); rb != nil {
		rb.Release()
	}
	return nil
}

// ConfigureArrow replaces the process-wide Arrow settings; allocators made
// afterwards use them.
func (b *Bridge) ConfigureArrow(s ArrowSettings) { b.arrow.sites.Store(s.AllocationSites) }

// ArrowSettings returns the current process-wide Arrow settings.
func (b *Bridge) ArrowSettings() ArrowSettings {
	return ArrowSettings{AllocationSites: b.arrow.sites.Load()}
}

// CloseArrow closes the Arrow allocator of reservation handle res now (see
// closeArrow) and returns its leak report (ArrowLeak.Report): the
// consumer, what is held, and with allocation sites the allocating functions
// and their stacks — or "" if nothing leaked or the allocator was closed
// already. Later imports and copies into res fail with pool.ErrClosed. It
// fails with ErrStaleHandle for a closed handle, and with an error wrapping
// pool.ErrClosed, closing nothing, if a call is using the allocator.
func (b *Bridge) CloseArrow(res int64) (string, error) {
	rh, err := b.reservation(res)
	if err != nil {
		return "", err
	}
	s := &rh.arrow
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return "", nil
	}
	if s.users > 0 {
		n := s.users
		s.mu.Unlock()
		return "", fmt.Errorf("nativepool: closeArrow: the Arrow allocator of %s is in use by %d call(s); close refused: %w", rh.r.Consumer(), n, pool.ErrClosed)
	}
	s.closed = true
	s.mu.Unlock()
	if leak := b.finishArrowClose(rh); leak != nil {
		return leak.Report, nil
	}
	return "", nil
}

// closeArrow closes rh's Arrow allocator before its reservation closes
// (Bridge.closeReservation): at once, or, if a call is using it, when that
// call ends. Idempotent.
func (b *Bridge) closeArrow(rh *reservationHandle) {
	s := &rh.arrow
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	if s.users > 0 {
		s.pending = true
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	b.finishArrowClose(rh)
}

// closeArrowOfPool closes the Arrow allocators of every reservation of tp,
// before the task's pool closes (taskPool.Close).
func (b *Bridge) closeArrowOfPool(tp *taskPool) {
	b.arrow.mu.Lock()
	var of []*reservationHandle
	for rh := range b.arrow.mu.live {
		if rh.tp == tp {
			of = append(of, rh)
		}
	}
	b.arrow.mu.Unlock()
	for _, rh := range of {
		b.closeArrow(rh)
	}
}

// finishArrowClose closes rh's allocator (marked closed, no user left): the
// allocator reports what it still holds (ffi logs it at error level, naming
// the consumer and, when recorded, the allocation sites) and gives its charge
// back to its Arrow reservation, which then closes; then the batch handles it still owns are released,
// which frees their memory (late frees, charge already returned) and calls
// the producers of imported batches back. What is still held after that
// (exports Java has not released) lingers: counted by ProcessArrowStats
// (ArrowPStatLingering) with its owner until freed, and in LeakedResident.
// The leak is recorded (RecordLeak, kind LeakArrow or LeakExport) with what
// lingers as its resident bytes. It returns the leak, or nil.
func (b *Bridge) finishArrowClose(rh *reservationHandle) *ArrowLeak {
	s := &rh.arrow
	s.mu.Lock()
	a, res, batches := s.alloc, s.res, s.batches
	s.batches = nil
	s.mu.Unlock()
	var leak *ArrowLeak
	if a != nil {
		b.arrow.removeLive(rh)
		if leak = a.Close(); leak != nil {
		}
		// The allocator gave its charge back; its later frees (batches
		// released below, lingering exports) charge nothing.
		res.Close()
	}
	released := 0
	for h, bh := range batches {
		if _, err := b.arrow.table().Remove(h); err != nil {
			continue // a concurrent releaseBatch0 has it
		}
		if rb := bh.take(); rb != nil {
			rb.Release()
			released++
		}
	}
	if released > 0 {
		b.logger.Warn("nativepool: Arrow batches never released; released at allocator close",
			"consumer", rh.r.Consumer().String(), "task", rh.tp.taskID, "batches", released)
	}
	var resident int64
	if a != nil {
		if sn := a.Snapshot(); holds(sn) {
			// Java still reads these (an export into an allocator the task's
			// end does not close): freeing them would be a use after free.
			b.arrow.linger(rh, a)
			resident = sn.Allocated + sn.Imported
			b.logger.Warn("nativepool: Arrow memory outlives its task; kept on the books until freed",
				"consumer", rh.r.Consumer().String(), "task", rh.tp.taskID,
				"bytes", sn.Allocated, "exports", sn.ExportsLive, "imported_bytes", sn.Imported)
		}
	}
	if leak != nil {
		kind := LeakArrow
		if leak.Exports > 0 {
			kind = LeakExport
		}
		b.record(Leak{TaskAttemptID: rh.tp.taskID, Consumer: rh.r.Consumer().Name(), Kind: kind,
			Bytes: leak.Bytes, Site: leak.Site, Resident: resident}, true)
	}
	return leak
}
