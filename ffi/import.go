package ffi

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/cdata"
)

// ImportRecordBatch imports arr, described by sc, as a record batch,
// zero-copy, like arrow-go's cdata.ImportCRecordBatch, and keeps the books of
// the crossing until the producer's release callback runs — which arrow-go
// does when the last Go reference to any of the batch's buffers is released:
//
//   - with ProducerCharges (the default) the producer keeps its charge until
//     then; this allocator counts the bytes in Snapshot.Imported and reports
//     the batch at Close if it is still held;
//   - with ImporterCharges the bytes are also charged to this allocator's
//     reservation until then, past the pool's limit if need be (they exist
//     already; Snapshot.Forced counts what went past).
//
// The returned batch panics if it is released more often than retained
// (a double release), before anything is released twice. sc is released,
// as by arrow-go. If err is not nil, arr must still be released by the
// caller (cdata.ReleaseCArrowArray, a no-op on a released struct), as with
// arrow-go; with a nil error arr is left released (moved).
//
// It returns an error wrapping pool.ErrClosed, touching nothing, if the
// allocator is closed; an error if arr is nil or already released; an error
// wrapping ErrOutOfMemory if C memory for the wrapper is exhausted; or
// arrow-go's import error.
func (a *Allocator) ImportRecordBatch(arr *cdata.CArrowArray, sc *cdata.CArrowSchema) (arrow.RecordBatch, error) {
	return a.importBatch("ImportRecordBatch", arr, func() (arrow.RecordBatch, error) {
		return cdata.ImportCRecordBatch(arr, sc)
	})
}

// ImportRecordBatchWithSchema is ImportRecordBatch for a known schema (a
// batch of a stream, for example); sc is not consumed.
func (a *Allocator) ImportRecordBatchWithSchema(arr *cdata.CArrowArray, sc *arrow.Schema) (arrow.RecordBatch, error) {
	return a.importBatch("ImportRecordBatchWithSchema", arr, func() (arrow.RecordBatch, error) {
		return cdata.ImportCRecordBatchWithSchema(arr, sc)
	})
}

func (a *Allocator) importBatch(op string, arr *cdata.CArrowArray, imp func() (arrow.RecordBatch, error)) (arrow.RecordBatch, error) {
	if a.charged.Load() < 0 {
		return nil, fmt.Errorf("ffi: %s: %w", op, a.closedErr())
	}
	if a.acct != nil {
		return nil, fmt.Errorf("ffi: %s: %w", op, ErrAccountCharged)
	}
	if arr == nil {
		return nil, fmt.Errorf("ffi: %s: nil ArrowArray", op)
	}
	if arrayReleased(toCArray(arr)) {
		return nil, fmt.Errorf("ffi: %s for %s: ArrowArray is released (imported or released already)", op, a.consumer)
	}
	x := &xfer{a: a, kind: kindImport}
	h := cgo.NewHandle(x)
	if !wrapArray(toCArray(arr), uintptr(h)) {
		h.Delete()
		return nil, fmt.Errorf("ffi: %s: wrapping the release callback: %w", op, ErrOutOfMemory)
	}
	// From here the wrapper owns x: whoever releases arr (arrow-go after the
	// last buffer, on success; arrow-go or the caller, on error) settles it.
	rb, err := imp()
	if err != nil {
		return nil, err
	}
	x.bytes = dataBytes(rb)
	if a.policy == ImporterCharges && x.bytes > 0 {
		if err := a.reserveForced(x.bytes); err != nil {
			rb.Release()
			return nil, fmt.Errorf("ffi: %s: %w", op, err)
		}
		x.charged = x.bytes
		a.importCharged.Add(x.charged)
	}
	if x.state.CompareAndSwap(xferPending, xferLive) {
		a.xfers.add(x)
	} else if x.charged > 0 {
		// arrow-go released the producer's array during the import (a batch
		// with no buffers): nothing is held, give the charge back.
		a.importCharged.Add(-x.charged)
		a.unreserve(x.charged)
	}
	ib := &importedBatch{RecordBatch: rb, x: x}
	ib.refs.Store(1)
	return ib, nil
}

// importedBatch is a record batch imported by this package: arrow-go's
// batch with a reference count of its own, so that a release past the last
// one panics with a clear message before arrow-go's count goes negative
// (arrow-go checks that only under its assert build tag).
type importedBatch struct {
	arrow.RecordBatch
	x    *xfer
	refs atomic.Int64
}

// Retain adds a reference.
func (b *importedBatch) Retain() {
	b.refs.Add(1)
	b.RecordBatch.Retain()
}

// Release drops a reference; the last one releases the buffers (and, once
// every other reference to them is gone, the producer's array). It panics,
// releasing nothing, if every reference was released already.
func (b *importedBatch) Release() {
	if b.refs.Add(-1) < 0 {
		b.refs.Add(1)
		panic(fmt.Sprintf("ffi: Release of an imported record batch (%d bytes, imported for %s): released more times than retained",
			b.x.bytes, b.x.a.consumer))
	}
	b.RecordBatch.Release()
}

var errNotImported = errors.New("ffi: not a record batch imported by this package")

// ImportedBytes returns the bytes an imported batch brought across the C
// Data Interface, or an error if rb was not returned by ImportRecordBatch.
func ImportedBytes(rb arrow.RecordBatch) (int64, error) {
	ib, ok := rb.(*importedBatch)
	if !ok {
		return 0, errNotImported
	}
	return ib.x.bytes, nil
}

var _ arrow.RecordBatch = (*importedBatch)(nil)
