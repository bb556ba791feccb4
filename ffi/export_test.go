package ffi_test

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/ffi/ffitest"
	"github.com/nativepool/nativepool/ffi/internal/ctest"
	"github.com/nativepool/nativepool/pool"
)

// The C consumer in internal/ctest plays the JVM: it moves the exported
// struct into its own memory, reads the data, and releases it later, on a
// thread the Go runtime has never seen.

func TestExportedBatchStaysChargedUntilTheConsumerReleasesIt(t *testing.T) {
	a, res := newAlloc(t, "op", 1<<20)
	defer ffitest.AssertNoLeak(t, a)
	rb := int64Batch(a, 10, 500)
	charged := a.Allocated()
	require.Positive(t, charged)

	out, sc := ctest.NewArray(), ctest.NewSchema()
	defer ctest.Free(out)
	defer ctest.Free(sc)
	require.NoError(t, a.ExportRecordBatch(rb, out, sc))
	rb.Release() // the Go operator is done with the batch
	held := ctest.Hold(out)
	defer ctest.Free(held)

	assert.Equal(t, charged, a.Allocated(), "the consumer still holds the buffers")
	assert.Equal(t, charged, res.Size())
	s := a.Snapshot()
	assert.Equal(t, 1, s.ExportsLive)
	assert.Equal(t, charged, s.Exported)
	assert.Equal(t, sumOf(10, 500), ctest.SumInt64(held, 0), "the consumer reads the Go buffers")

	require.Zero(t, ctest.ReleaseOnNewThread(held))
	assert.True(t, ctest.Released(held))
	assert.Zero(t, a.Allocated())
	assert.Zero(t, res.Size())
	assert.Zero(t, a.Snapshot().ExportsLive)
	assert.Zero(t, a.Snapshot().Exported)
	cdata.ReleaseCArrowSchema(sc)
}

func TestExportedBatchReleasedTwiceByTheConsumerReleasesOnce(t *testing.T) {
	a, res := newAlloc(t, "op", 1<<20)
	defer ffitest.AssertNoLeak(t, a)
	rb := int64Batch(a, 0, 100)
	out := ctest.NewArray()
	defer ctest.Free(out)
	require.NoError(t, a.ExportRecordBatch(rb, out, nil))
	rb.Release()

	ctest.ReleaseTwice(out)
	assert.Zero(t, res.Size())
	assert.Zero(t, a.Snapshot().LateFrees)
	assert.Zero(t, a.Snapshot().ExportsLive)
}

func TestExportSharesBuffersWithSlicesAndCountsThemOnce(t *testing.T) {
	a, res := newAlloc(t, "op", 1<<20)
	defer ffitest.AssertNoLeak(t, a)
	rb := int64Batch(a, 0, 1000)
	sl := rb.NewSlice(100, 200)
	rb.Release()
	wide := array.NewRecordBatch(
		arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "y", Type: arrow.PrimitiveTypes.Int64}}, nil),
		[]arrow.Array{sl.Column(0), sl.Column(0)}, sl.NumRows())
	sl.Release()

	out := ctest.NewArray()
	defer ctest.Free(out)
	require.NoError(t, a.ExportRecordBatch(wide, out, nil))
	wide.Release()
	assert.Equal(t, a.Allocated(), a.Snapshot().Exported, "shared buffers counted once")
	assert.Equal(t, sumOf(100, 100), ctest.SumInt64(out, 1), "offsets survive the export")
	ctest.Release(out)
	assert.Zero(t, res.Size())
}

func TestExportAfterCloseReturnsErrClosedAndWritesNothing(t *testing.T) {
	producer := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rb := int64Batch(producer, 0, 10)
	defer rb.Release()
	a, res := newAlloc(t, "op", 1<<20)
	require.NoError(t, a.Close())

	out := ctest.NewArray()
	defer ctest.Free(out)
	err := a.ExportRecordBatch(rb, out, nil)
	require.ErrorIs(t, err, pool.ErrClosed)
	assert.Equal(t, fmt.Sprintf("ffi: ExportRecordBatch: ffi: allocator of %s: closed", res.Consumer()), err.Error())
	assert.True(t, ctest.Released(out), "nothing written")

	stream := ctest.NewStream()
	defer ctest.Free(stream)
	rdr, err := array.NewRecordReader(int64Schema, []arrow.RecordBatch{rb})
	require.NoError(t, err)
	defer rdr.Release()
	err = a.ExportRecordReader(rdr, stream)
	require.ErrorIs(t, err, pool.ErrClosed)
	assert.Equal(t, fmt.Sprintf("ffi: ExportRecordReader: ffi: allocator of %s: closed", res.Consumer()), err.Error())
}

func TestCloseReportsUnreleasedExportAndTheLateReleaseLeavesTheReservationAlone(t *testing.T) {
	log := &captureLog{}
	a, res := newAlloc(t, "op", 1<<20, ffi.WithLogger(log.logger()))
	rb := int64Batch(a, 0, 100)
	out := ctest.NewArray()
	defer ctest.Free(out)
	require.NoError(t, a.ExportRecordBatch(rb, out, nil))
	rb.Release()
	bytes := a.Allocated()

	err := a.Close()
	var leak *ffi.LeakError
	require.ErrorAs(t, err, &leak)
	assert.Equal(t, 1, leak.Exports)
	assert.Equal(t, bytes, leak.ExportedBytes)
	assert.Equal(t, fmt.Sprintf("ffi: %s leaked 2 buffers (%s), 1 exported batches (%s) and 0 exported streams never released by the consumer; "+
		"allocation sites not recorded (use WithAllocationSites(true))",
		res.Consumer(), pool.HumanReadableSize(bytes), pool.HumanReadableSize(bytes)), err.Error())
	assert.Zero(t, res.Size(), "Close gave the charge back")
	assert.Contains(t, log.String(), "ffi: leak at Close; charge released")

	require.Zero(t, ctest.ReleaseOnNewThread(out)) // the JVM lets go after the task ended
	assert.Zero(t, res.Size())
	assert.Zero(t, a.Allocated(), "the memory itself was freed")
	assert.Equal(t, int64(2), a.Snapshot().LateFrees)
}

func TestExportedStreamChargesEachBatchUntilTheConsumerReleasesIt(t *testing.T) {
	a, res := newAlloc(t, "op", 1<<20)
	defer ffitest.AssertNoLeak(t, a)
	var batches []arrow.RecordBatch
	for i := range int64(3) {
		batches = append(batches, int64Batch(a, i*100, 100))
	}
	rdr, err := array.NewRecordReader(int64Schema, batches)
	require.NoError(t, err)
	for _, b := range batches {
		b.Release() // the reader holds them
	}
	stream := ctest.NewStream()
	defer ctest.Free(stream)
	require.NoError(t, a.ExportRecordReader(rdr, stream))
	rdr.Release() // the stream holds the reader
	assert.Equal(t, 1, a.Snapshot().StreamsLive)

	arrs, end, errno := ctest.Drain(stream, 10)
	require.Zero(t, errno)
	require.True(t, end)
	require.Len(t, arrs, 3)
	assert.Equal(t, 3, a.Snapshot().ExportsLive)
	for i, arr := range arrs {
		assert.Equal(t, sumOf(int64(i)*100, 100), ctest.SumInt64(arr, 0))
	}

	ctest.ReleaseStream(stream) // the reader goes; the batches stay with the consumer
	assert.Zero(t, a.Snapshot().StreamsLive)
	perBatch := a.Allocated() / 3
	require.Positive(t, perBatch)
	for i, arr := range arrs {
		require.Zero(t, ctest.ReleaseOnNewThread(arr))
		ctest.Free(arr)
		assert.Equal(t, int64(2-i)*perBatch, res.Size(), "after releasing batch %d", i)
	}
	assert.Zero(t, a.Snapshot().ExportsLive)
}

func TestExportedStreamEndsWithAnErrorOnceTheAllocatorIsClosed(t *testing.T) {
	producer := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer producer.AssertSize(t, 0)
	rb := int64Batch(producer, 0, 10)
	rdr, err := array.NewRecordReader(int64Schema, []arrow.RecordBatch{rb})
	require.NoError(t, err)
	rb.Release()
	log := &captureLog{}
	a, res := newAlloc(t, "op", 1<<20, ffi.WithLogger(log.logger()))
	stream := ctest.NewStream()
	defer ctest.Free(stream)
	require.NoError(t, a.ExportRecordReader(rdr, stream))
	rdr.Release()

	err = a.Close()
	var leak *ffi.LeakError
	require.ErrorAs(t, err, &leak)
	assert.Equal(t, 1, leak.Streams)

	arrs, end, errno := ctest.Drain(stream, 1)
	assert.Empty(t, arrs)
	assert.False(t, end)
	assert.Equal(t, 5, errno, "EIO")
	assert.Equal(t, fmt.Sprintf("ffi: stream exported by %s: allocator closed", res.Consumer()), ctest.StreamError(stream))
	ctest.ReleaseStream(stream)
	assert.Zero(t, a.Snapshot().StreamsLive)
}

// TestPanicInAReleaseCallbackIsLoggedNotUnwoundIntoC exports a buffer whose
// Free panics (it claims an allocator that did not make it) and releases it
// from a C thread: the process survives, the panic is logged.
func TestPanicInAReleaseCallbackIsLoggedNotUnwoundIntoC(t *testing.T) {
	log := &captureLog{}
	a, _ := newAlloc(t, "op", 1<<20, ffi.WithLogger(log.logger()))
	donor, _ := newAlloc(t, "donor", 1<<20)
	raw := donor.Allocate(64)
	defer donor.Free(raw)
	buf := memory.NewBufferWithAllocator(raw, a) // a did not allocate raw
	data := array.NewData(arrow.PrimitiveTypes.Int64, 8, []*memory.Buffer{nil, buf}, nil, 0, 0)
	buf.Release()
	col := array.MakeFromData(data)
	data.Release()
	rb := array.NewRecordBatch(int64Schema, []arrow.Array{col}, 8)
	col.Release()

	out := ctest.NewArray()
	defer ctest.Free(out)
	require.NoError(t, a.ExportRecordBatch(rb, out, nil))
	rb.Release()
	require.Zero(t, ctest.ReleaseOnNewThread(out))
	assert.Contains(t, log.String(), "ffi: panic in release callback")
	assert.Contains(t, log.String(), "not a live buffer of this allocator")
	assert.Zero(t, a.Snapshot().ExportsLive, "the export is settled anyway")
}
