package jni

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/pool"
)

// Arrow batches across the bridge (jni/API.md, "Arrow batches"): the pure-Go
// core of importBatch0, exportBatch0, copyBatch0, releaseBatch0,
// arrowStats0, processArrowStats0, configureArrow0 and closeArrow0. The
// exports are in arrow_exports.go.
//
// Every reservation handle gets one ffi.Allocator, made on first use
// (arrowSlot) and closed — its leak report logged, its charge given back —
// before the reservation or the task's pool closes, or by closeArrow0. The
// allocator charges a reservation of its own (arrowSlot.res), a sibling of
// the handle's reservation in the same registration (pool.Reservation's
// NewEmpty): the bytes count for the same consumer in the pool (its share,
// its spill order, TrackConsumers), but the handle's reservation holds only
// what Java grew through it, so Java's NativeReservation.size() and Go's
// Size() are one ledger (issue 10 item 4). The charge follows ffi's rule (ffi/doc.go): the producer pays
// while the buffers live, the importer only tracks.
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
// errStaleHandle (IllegalStateException), and nothing is released twice.
// Closing an allocator releases the batch handles it still owns (after the
// leak report has named them), so a batch left unreleased at task end is
// both reported and freed.

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
// settings, the open allocators and the cumulative leak counters. Its zero
// value is ready (the table is made on first use). Safe for concurrent use.
//
// Lock order: a reservation's arrowSlot.mu, then arrowState.mu; a batch's
// batchHandle.mu is never held with either. No lock is held while a batch is
// released (releasing an imported batch calls the Java producer back) or
// while an allocator closes (that shrinks the reservation: an upcall).
type arrowState struct {
	once    sync.Once
	batches *handleTable[*batchHandle]
	sites   atomic.Bool

	mu struct {
		sync.Mutex
		// live are the open allocators, by reservation handle.
		live map[*reservationHandle]*ffi.Allocator
		// lingering are closed allocators whose memory is not all freed yet:
		// exports Java has not released (into an allocator the task's end
		// does not close), or imports a re-export still pins. They stay
		// here, counted by ProcessArrowStats with their owner, until the
		// last of it is freed (lingerSweep).
		lingering map[*reservationHandle]*ffi.Allocator
	}
	leaks       atomic.Int64
	leakedBytes atomic.Int64
}

func (s *arrowState) table() *handleTable[*batchHandle] {
	s.once.Do(func() { s.batches = newHandleTable[*batchHandle](tagBatch) })
	return s.batches
}

func (s *arrowState) addLive(rh *reservationHandle, a *ffi.Allocator) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.live == nil {
		s.mu.live = make(map[*reservationHandle]*ffi.Allocator)
	}
	s.mu.live[rh] = a
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
	alloc *ffi.Allocator // nil until first use
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
	alloc *ffi.Allocator
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
func (b *Bridge) enterArrow(op string, rh *reservationHandle) (*ffi.Allocator, error) {
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
		opts := []ffi.Option{ffi.WithLogger(b.logger)}
		if b.arrow.sites.Load() {
			opts = append(opts, ffi.WithAllocationSites(true))
		}
		res := newArrowReservation(rh.r)
		if res == nil {
			rh.tp.calls.exit()
			return nil, arrowClosedErr(op, rh)
		}
		s.res = res
		s.alloc = ffi.NewAllocator(nil, res, opts...)
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
func (b *Bridge) registerBatch(op string, rh *reservationHandle, a *ffi.Allocator, rb arrow.RecordBatch) (int64, error) {
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

// ImportBatch imports the C Data batch arr (described by sc) into Go,
// zero-copy, tracked by the allocator of reservation handle res: the
// producer keeps its charge until the batch is released (ffi.ProducerCharges).
// It returns a batch handle. On success arr has been moved and sc released;
// on error the caller still owns whatever arr and sc hold and must release
// them (a no-op on a released struct).
//
// Before anything dereferences arr or sc, validateImport reads them and all
// they point to without faulting (arrow_validate.go): an unreadable or
// misaligned address, a released struct, n_buffers or n_children that do
// not match the schema, bad lengths, offsets or null counts, or columns of
// unequal row counts wrap errInvalidArgument, with nothing read further,
// nothing written and nothing charged.
//
// Errors: a bad handle, a zero address, or an array arrow-go cannot import
// (released already, malformed) wrap errInvalidHandle or errInvalidArgument;
// a closed reservation or allocator wraps pool.ErrClosed (errStaleHandle for
// a closed handle).
func (b *Bridge) ImportBatch(res int64, arr *cdata.CArrowArray, sc *cdata.CArrowSchema) (int64, error) {
	return b.ImportBatchAt(res, uintptr(unsafe.Pointer(arr)), uintptr(unsafe.Pointer(sc)))
}

// ImportBatchAt is ImportBatch for raw addresses, as importBatch0 gets them
// from Java: they become Go pointers only once validation has accepted them
// (a misaligned pointer is invalid Go even before it is dereferenced).
func (b *Bridge) ImportBatchAt(res int64, arrAddr, scAddr uintptr) (int64, error) {
	rh, err := b.reservation(res)
	if err != nil {
		return 0, err
	}
	if arrAddr == 0 || scAddr == 0 {
		return 0, fmt.Errorf("nativepool: importBatch for %s: null ArrowArray or ArrowSchema address: %w", rh.r.Consumer(), errInvalidArgument)
	}
	// Nothing below may touch memory validation has not read (arrow_validate.go).
	if err := validateImport(arrAddr, scAddr); err != nil {
		return 0, fmt.Errorf("nativepool: importBatch for %s: %w: %w", rh.r.Consumer(), err, errInvalidArgument)
	}
	arr, sc := cdata.ArrayFromPtr(arrAddr), cdata.SchemaFromPtr(scAddr)
	a, err := b.enterArrow("importBatch", rh)
	if err != nil {
		return 0, err
	}
	defer b.exitArrow(rh)
	// A fault in arrow-go's reads (a forgery validation cannot see: mapped
	// memory that changed under it) panics instead of killing the process.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	rb, err := a.ImportRecordBatch(arr, sc)
	if err != nil {
		if errors.Is(err, pool.ErrClosed) || errors.Is(err, ffi.ErrOutOfMemory) {
			return 0, fmt.Errorf("nativepool: importBatch: %w", err)
		}
		return 0, fmt.Errorf("nativepool: importBatch for %s: %w: %w", rh.r.Consumer(), err, errInvalidArgument)
	}
	return b.registerBatch("importBatch", rh, a, rb)
}

// ExportBatch exports a batch into the zero-initialised C structs out and
// outSchema, zero-copy: the buffers stay charged to the allocator that made
// them until the consumer releases out, even after the batch handle is
// released (ffi.Allocator.ExportRecordBatch).
//
// Errors: a released batch wraps errStaleHandle; a closed allocator
// pool.ErrClosed; a zero address errInvalidArgument. Nothing is written then.
func (b *Bridge) ExportBatch(batch int64, out *cdata.CArrowArray, outSchema *cdata.CArrowSchema) error {
	return b.ExportBatchAt(batch, uintptr(unsafe.Pointer(out)), uintptr(unsafe.Pointer(outSchema)))
}

// ExportBatchAt is ExportBatch for raw addresses, as exportBatch0 gets them
// from Java. Both must be 8-byte aligned, readable, writable and not hold a
// live struct (validateExportTarget); otherwise the error wraps
// errInvalidArgument and nothing is written.
func (b *Bridge) ExportBatchAt(batch int64, outAddr, outSchemaAddr uintptr) error {
	bh, err := b.arrow.table().Get(batch)
	if err != nil {
		return err
	}
	if outAddr == 0 || outSchemaAddr == 0 {
		return fmt.Errorf("nativepool: exportBatch: null ArrowArray or ArrowSchema address: %w", errInvalidArgument)
	}
	if err := validateExportTarget("ArrowArray", outAddr, int(unsafe.Sizeof(cdata.CArrowArray{}))); err != nil {
		return fmt.Errorf("nativepool: exportBatch: %w: %w", err, errInvalidArgument)
	}
	if err := validateExportTarget("ArrowSchema", outSchemaAddr, int(unsafe.Sizeof(cdata.CArrowSchema{}))); err != nil {
		return fmt.Errorf("nativepool: exportBatch: %w: %w", err, errInvalidArgument)
	}
	out, outSchema := cdata.ArrayFromPtr(outAddr), cdata.SchemaFromPtr(outSchemaAddr)
	if _, err := b.enterArrow("exportBatch", bh.owner); err != nil {
		return err
	}
	defer b.exitArrow(bh.owner)
	bh.mu.Lock()
	defer bh.mu.Unlock()
	if bh.rb == nil {
		return fmt.Errorf("nativepool: batch handle 0x%x is closed: %w", uint64(batch), errStaleHandle)
	}
	if err := bh.alloc.ExportRecordBatch(bh.rb, out, outSchema); err != nil {
		return fmt.Errorf("nativepool: exportBatch: %w", err)
	}
	return nil
}

// CopyBatch deep-copies a batch into buffers made by the allocator of
// reservation handle res (C memory, charged to res's Arrow reservation, a
// sibling of res in the same registration, until the copy's last reference
// is released) and returns the copy's handle. res's own reservation is not
// charged: its Size stays what Java grew.
//
// Errors: the pool's refusal wraps pool.ErrResourcesExhausted (and an
// *ffi.AllocationError naming the consumer); nothing stays charged, and the
// source batch is unchanged. A released batch wraps errStaleHandle; a closed
// reservation or allocator pool.ErrClosed; an upcall failure is a
// *JavaException.
func (b *Bridge) CopyBatch(res, batch int64) (int64, error) {
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
		return 0, fmt.Errorf("nativepool: batch handle 0x%x is closed: %w", uint64(batch), errStaleHandle)
	}
	defer src.Release()
	cp, err := copyRecordBatch(a, src)
	if err != nil {
		return 0, fmt.Errorf("nativepool: copyBatch into %s: %w", rh.r.Consumer(), err)
	}
	return b.registerBatch("copyBatch", rh, a, cp)
}

// copyRecordBatch copies every column of src into new buffers from mem. A
// refusal of mem (a panic of *ffi.AllocationError, which arrow-go's
// Concatenate turns into a wrapping error) is returned after the columns
// already copied are released.
func copyRecordBatch(mem memory.Allocator, src arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, 0, src.NumCols())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	err := ffi.Catch(func() error {
		for _, col := range src.Columns() {
			c, err := array.Concatenate([]arrow.Array{col}, mem)
			if err != nil {
				return err
			}
			cols = append(cols, c)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return array.NewRecordBatch(src.Schema(), cols, src.NumRows()), nil
}

// ReleaseBatch releases a batch handle: the buffers are freed (an imported
// batch's producer is called back) once no export still references them. A
// second release, or a release of a batch its allocator's close already
// released, wraps errStaleHandle and releases nothing.
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
// closeArrow) and returns its leak report — ffi.LeakError.Report: the
// consumer, what is held, and with allocation sites the allocating functions
// and their stacks — or "" if nothing leaked or the allocator was closed
// already. Later imports and copies into res fail with pool.ErrClosed. It
// fails with errStaleHandle for a closed handle, and with an error wrapping
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
		return leak.Report(), nil
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
// (ArrowPStatLingering) with its owner until freed. It returns the leak, or
// nil.
func (b *Bridge) finishArrowClose(rh *reservationHandle) *ffi.LeakError {
	s := &rh.arrow
	s.mu.Lock()
	a, res, batches := s.alloc, s.res, s.batches
	s.batches = nil
	s.mu.Unlock()
	var leak *ffi.LeakError
	if a != nil {
		b.arrow.removeLive(rh)
		if err := a.Close(); errors.As(err, &leak) {
			b.arrow.leaks.Add(1)
			b.arrow.leakedBytes.Add(leak.Bytes + leak.ImportedBytes)
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
	if a != nil {
		if sn := a.Snapshot(); holds(sn) {
			// Java still reads these (an export into an allocator the task's
			// end does not close): freeing them would be a use after free.
			b.arrow.linger(rh, a)
			b.logger.Warn("nativepool: Arrow memory outlives its task; kept on the books until freed",
				"consumer", rh.r.Consumer().String(), "task", rh.tp.taskID,
				"bytes", sn.Allocated, "exports", sn.ExportsLive, "imported_bytes", sn.Imported)
		}
	}
	return leak
}
