package ffi

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
)

// ExportRecordBatch exports rb through the C Data Interface into out (and
// its schema into outSchema, unless nil), zero-copy, like arrow-go's
// cdata.ExportArrowRecordBatch, and keeps the books of the crossing until
// the consumer calls out's release callback:
//
//   - the buffers stay live, and so stay charged to whichever allocator made
//     them, until that release, even after the Go operator has released rb
//     (arrow-go retains the data until then);
//   - Snapshot counts the batch and its bytes as exported until then, and
//     Close reports it as leaked if the consumer never releases it.
//
// out's release callback is wrapped (bridge.h): it runs arrow-go's release,
// then tells this allocator, on the consumer's thread. The consumer may move
// out as the specification allows. out and outSchema MUST BE ZERO
// INITIALIZED (arrow-go's rule). Buffers should come from C memory (a nil
// inner allocator): C may not keep Go pointers.
//
// It returns an error wrapping pool.ErrClosed, writing nothing, if the
// allocator is closed; and an error wrapping ErrOutOfMemory, having released
// what it wrote, if C memory for the wrapper is exhausted.
func (a *Allocator) ExportRecordBatch(rb arrow.RecordBatch, out *cdata.CArrowArray, outSchema *cdata.CArrowSchema) error {
	if a.charged.Load() < 0 {
		return fmt.Errorf("ffi: ExportRecordBatch: %w", a.closedErr())
	}
	if a.acct != nil {
		return fmt.Errorf("ffi: ExportRecordBatch: %w", ErrAccountCharged)
	}
	x := &xfer{a: a, kind: kindExport, bytes: dataBytes(rb)}
	cdata.ExportArrowRecordBatch(rb, out, outSchema)
	if err := a.publish(x, toCArray(out)); err != nil {
		if outSchema != nil {
			cdata.ReleaseCArrowSchema(outSchema)
		}
		return fmt.Errorf("ffi: ExportRecordBatch: %w", err)
	}
	return nil
}

// publish puts a live crossing in the crossing map and wraps arr's release. On
// failure it releases arr and forgets the crossing.
func (a *Allocator) publish(x *xfer, arr *cArray) error {
	x.state.Store(xferLive)
	a.xfers.add(x)
	h := cgo.NewHandle(x)
	if !wrapArray(arr, uintptr(h)) {
		h.Delete()
		x.state.Store(xferReleased)
		a.xfers.remove(x)
		releaseArray(arr)
		return fmt.Errorf("wrapping the release callback: %w", ErrOutOfMemory)
	}
	return nil
}

// ExportRecordReader exports rdr as a C stream into out, like arrow-go's
// cdata.ExportRecordReader (the stream holds a reference to rdr until the
// consumer releases the stream), with every batch the consumer takes
// exported as by ExportRecordBatch: charged until the consumer releases
// that batch, counted in Snapshot, reported at Close. The stream itself is
// counted in Snapshot.StreamsLive until released.
//
// After Close the stream ends with an error: get_next returns EIO and
// get_last_error says the allocator is closed. out MUST BE ZERO INITIALIZED.
// It returns an error wrapping pool.ErrClosed, writing nothing, if the
// allocator is closed; an error wrapping ErrOutOfMemory, having released the
// stream, if C memory for the wrapper is exhausted.
func (a *Allocator) ExportRecordReader(rdr array.RecordReader, out *cdata.CArrowArrayStream) error {
	if a.charged.Load() < 0 {
		return fmt.Errorf("ffi: ExportRecordReader: %w", a.closedErr())
	}
	if a.acct != nil {
		return fmt.Errorf("ffi: ExportRecordReader: %w", ErrAccountCharged)
	}
	x := &xfer{a: a, kind: kindStream}
	cdata.ExportRecordReader(&accountingReader{RecordReader: rdr, x: x}, out)
	x.state.Store(xferLive)
	a.xfers.add(x)
	h := cgo.NewHandle(x)
	if !wrapStream(toCStream(out), uintptr(h)) {
		h.Delete()
		x.state.Store(xferReleased)
		a.xfers.remove(x)
		releaseStream(toCStream(out))
		return fmt.Errorf("ffi: ExportRecordReader: wrapping the release callback: %w", ErrOutOfMemory)
	}
	return nil
}

// wrapStreamBatch books a batch that stream s has just written to out
// (npffiStreamNext) and wraps out's release. It returns an errno for the
// consumer: 0, or ENOMEM with out released.
func (a *Allocator) wrapStreamBatch(s *xfer, out *cArray) int {
	x := &xfer{a: a, kind: kindExport, bytes: s.next}
	s.next = 0
	if err := a.publish(x, out); err != nil {
		a.logger.Error("ffi: stream batch not exported", "consumer", a.consumer, "err", err)
		return int(syscall.ENOMEM)
	}
	return 0
}

// accountingReader is the RecordReader arrow-go's stream exporter sees: it
// notes the size of each batch it hands out, for the wrapper of that batch,
// and ends the stream once the allocator is closed.
type accountingReader struct {
	array.RecordReader
	x   *xfer
	err error
}

func (r *accountingReader) Next() bool {
	if r.x.a.charged.Load() < 0 {
		r.err = errors.New("ffi: stream exported by " + r.x.a.consumer + ": allocator closed")
		return false
	}
	return r.RecordReader.Next()
}

func (r *accountingReader) RecordBatch() arrow.RecordBatch {
	rb := r.RecordReader.RecordBatch()
	if rb != nil {
		r.x.next = dataBytes(rb)
	}
	return rb
}

// Record is the deprecated name of RecordBatch.
func (r *accountingReader) Record() arrow.RecordBatch { return r.RecordBatch() }

func (r *accountingReader) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.RecordReader.Err()
}

var _ array.RecordReader = (*accountingReader)(nil)
