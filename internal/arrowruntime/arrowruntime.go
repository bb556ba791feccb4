package arrowruntime

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"unsafe"

	"github.com/nativepool/nativepool/internal/bridge"
	"github.com/nativepool/nativepool/internal/cdatacheck"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/pool"
)

// FFI is the ArrowRuntime of the library: ffi's allocator and its
// resident-set sample.
var FFI = bridge.ArrowRuntime{
	NewAllocator: func(res *pool.Reservation, sites bool, logger *slog.Logger) bridge.ArrowAllocator {
		opts := []ffi.Option{ffi.WithLogger(logger)}
		if sites {
			opts = append(opts, ffi.WithAllocationSites(true))
		}
		return ffiAllocator{ffi.NewAllocator(nil, res, opts...)}
	},
	MeasureDrift: func(reserved, allocated int64) (bridge.Drift, error) {
		d, err := ffi.MeasureDrift(reserved, allocated)
		return bridge.Drift{RSS: d.RSS, GoRuntime: d.GoRuntime, RSSOther: d.RSSOther}, err
	},
}

// Wrap returns a as the registry's ArrowAllocator: what
// bridge.Bridge.TrackAllocator takes for an engine's own allocator.
func Wrap(a *ffi.Allocator) bridge.ArrowAllocator { return ffiAllocator{a} }

// ffiAllocator is an *ffi.Allocator as the registry's ArrowAllocator.
type ffiAllocator struct{ *ffi.Allocator }

// Snapshot implements ArrowAllocator.
func (a ffiAllocator) Snapshot() bridge.ArrowSnapshot {
	sn := a.Allocator.Snapshot()
	return bridge.ArrowSnapshot{
		Allocated: sn.Allocated, Reserved: sn.Reserved, Forced: sn.Forced, Peak: sn.Peak, Refusals: sn.Refusals,
		LiveBuffers: sn.LiveBuffers, Imported: sn.Imported, Exported: sn.Exported,
		ImportsLive: sn.ImportsLive, ExportsLive: sn.ExportsLive,
	}
}

// Close implements ArrowAllocator.
func (a ffiAllocator) Close() *bridge.ArrowLeak {
	var leak *ffi.LeakError
	if err := a.Allocator.Close(); errors.As(err, &leak) {
		return &bridge.ArrowLeak{Bytes: leak.Bytes + leak.ImportedBytes, Report: leak.Report(), Exports: leak.Exports, Site: leak.TopSite()}
	}
	return nil
}

// LiveBySite implements bridge.ArrowSiteLister.
func (a ffiAllocator) LiveBySite() []bridge.LiveOwner {
	sites := a.Allocator.LiveSites()
	out := make([]bridge.LiveOwner, len(sites))
	for i, s := range sites {
		out[i] = bridge.LiveOwner{Site: s.Site, Bytes: s.Bytes, Buffers: int64(s.Buffers)}
	}
	return out
}

// ImportBatchAt imports the C Data batch at arrAddr (described by the
// schema at scAddr) into Go, zero-copy, tracked by the allocator of
// reservation handle res (Bridge.ImportBatch), and returns its batch
// handle. On success the array has been moved and the schema released; on
// error the caller still owns whatever they hold and must release them (a
// no-op on a released struct). The addresses are raw, as importBatch0 gets
// them from Java: they become Go pointers only once validation has
// accepted them (a misaligned pointer is invalid Go even before it is
// dereferenced).
//
// Before anything dereferences the addresses, cdatacheck.ValidateImport reads
// them and all they point to without faulting: an unreadable or misaligned
// address, a released struct, n_buffers or n_children that do not match the
// schema, bad lengths, offsets or null counts, or columns of unequal row
// counts wrap bridge.ErrInvalidArgument, with nothing read further, nothing
// written and nothing charged. So does a zero address, or an array arrow-go
// cannot import.
func ImportBatchAt(b *bridge.Bridge, res int64, arrAddr, scAddr uintptr) (int64, error) {
	check := func(consumer string) error {
		if arrAddr == 0 || scAddr == 0 {
			return fmt.Errorf("nativepool: importBatch for %s: null ArrowArray or ArrowSchema address: %w", consumer, bridge.ErrInvalidArgument)
		}
		// Nothing below may touch memory validation has not read.
		if err := cdatacheck.ValidateImport(arrAddr, scAddr); err != nil {
			return fmt.Errorf("nativepool: importBatch for %s: %w: %w", consumer, err, bridge.ErrInvalidArgument)
		}
		return nil
	}
	return b.ImportBatch(res, check, func(a bridge.ArrowAllocator) (arrow.RecordBatch, error) {
		arr, sc := cdata.ArrayFromPtr(arrAddr), cdata.SchemaFromPtr(scAddr)
		fa := a.(ffiAllocator)
		// A fault in arrow-go's reads (a forgery validation cannot see: mapped
		// memory that changed under it) panics instead of killing the process.
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		rb, err := fa.ImportRecordBatch(arr, sc)
		if err != nil {
			if errors.Is(err, pool.ErrClosed) || errors.Is(err, ffi.ErrOutOfMemory) {
				return nil, fmt.Errorf("nativepool: importBatch: %w", err)
			}
			return nil, fmt.Errorf("nativepool: importBatch for %s: %w: %w", fa.Consumer(), err, bridge.ErrInvalidArgument)
		}
		return rb, nil
	})
}

// ExportBatchAt exports a batch into the zero-initialised C structs at
// outAddr and outSchemaAddr, zero-copy (Bridge.ExportBatch,
// ffi.Allocator.ExportRecordBatch). The addresses are raw, as exportBatch0
// gets them from Java. Both must be non-zero, 8-byte aligned, readable, writable and
// not hold a live struct (cdatacheck.ValidateExportTarget); otherwise the
// error wraps bridge.ErrInvalidArgument and nothing is written.
func ExportBatchAt(b *bridge.Bridge, batch int64, outAddr, outSchemaAddr uintptr) error {
	check := func() error {
		if outAddr == 0 || outSchemaAddr == 0 {
			return fmt.Errorf("nativepool: exportBatch: null ArrowArray or ArrowSchema address: %w", bridge.ErrInvalidArgument)
		}
		if err := cdatacheck.ValidateExportTarget("ArrowArray", outAddr, int(unsafe.Sizeof(cdata.CArrowArray{}))); err != nil {
			return fmt.Errorf("nativepool: exportBatch: %w: %w", err, bridge.ErrInvalidArgument)
		}
		if err := cdatacheck.ValidateExportTarget("ArrowSchema", outSchemaAddr, int(unsafe.Sizeof(cdata.CArrowSchema{}))); err != nil {
			return fmt.Errorf("nativepool: exportBatch: %w: %w", err, bridge.ErrInvalidArgument)
		}
		return nil
	}
	return b.ExportBatch(batch, check, func(rb arrow.RecordBatch, a bridge.ArrowAllocator) error {
		out, outSchema := cdata.ArrayFromPtr(outAddr), cdata.SchemaFromPtr(outSchemaAddr)
		return a.(ffiAllocator).ExportRecordBatch(rb, out, outSchema)
	})
}

// CopyBatch deep-copies a batch into C memory of the allocator of
// reservation handle res (Bridge.CopyBatch). With allocation sites on, the
// copy's buffers are recorded with caller, the Java caller of copyBatch0
// ("" when Java did not capture one): every Go frame of the copy is
// nativepool's or arrow-go's, so a leak of the copy names the Java method
// that asked for it (ffi.Allocator.WithCaller). A refusal also wraps an
// *ffi.AllocationError naming the consumer.
func CopyBatch(b *bridge.Bridge, res, batch int64, caller string) (int64, error) {
	return b.CopyBatch(res, batch, func(a bridge.ArrowAllocator, src arrow.RecordBatch) (arrow.RecordBatch, error) {
		return copyRecordBatch(a.(ffiAllocator).WithCaller(caller), src)
	})
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
