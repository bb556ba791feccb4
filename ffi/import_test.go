package ffi_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/ffi/ffitest"
	"github.com/nativepool/nativepool/ffi/internal/ctest"
	"github.com/nativepool/nativepool/internal/fakeupstream"
	"github.com/nativepool/nativepool/pool"
)

// produce exports a batch of n int64 values made with mem into C structs,
// as a C Data producer (the JVM, in production) hands it over. The caller
// frees the structs.
func produce(t *testing.T, mem memory.Allocator, first, n int64) (*cdata.CArrowArray, *cdata.CArrowSchema) {
	t.Helper()
	rb := int64Batch(mem, first, n)
	defer rb.Release()
	arr, sc := ctest.NewArray(), ctest.NewSchema()
	cdata.ExportArrowRecordBatch(rb, arr, sc)
	return arr, sc
}

func TestImportLeavesTheChargeWithTheProducerUntilGoReleases(t *testing.T) {
	producer, pres := newAlloc(t, "jvm", 1<<20)
	defer ffitest.AssertNoLeak(t, producer)
	importer, ires := newAlloc(t, "op", 1<<20) // ProducerCharges by default
	defer ffitest.AssertNoLeak(t, importer)

	arr, sc := produce(t, producer, 5, 300)
	defer ctest.Free(arr)
	defer ctest.Free(sc)
	bytes := producer.Allocated()
	require.Positive(t, bytes)

	rb, err := importer.ImportRecordBatch(arr, sc)
	require.NoError(t, err)
	assert.True(t, ctest.Released(arr), "moved into Go")
	assert.Equal(t, sumOf(5, 300), sumInt64(rb.Column(0).(*array.Int64)))
	// Go sees the buffers as the C Data Interface describes them: 300
	// int64 values and a 38-byte validity bitmap. The producer's capacity
	// (rounded up to 64 bytes) is the producer's to count.
	const described = 300*8 + 38
	s := importer.Snapshot()
	assert.Equal(t, 1, s.ImportsLive)
	assert.Equal(t, int64(described), s.Imported)
	n, err := ffi.ImportedBytes(rb)
	require.NoError(t, err)
	assert.Equal(t, int64(described), n)
	assert.Zero(t, ires.Size(), "the producer pays")
	assert.Equal(t, bytes, pres.Size(), "…until Go releases")
	assert.Equal(t, bytes, pres.Size()+ires.Size(), "charged once")

	col := rb.Column(0)
	col.Retain() // a reference that outlives the batch
	rb.Release()
	assert.Equal(t, bytes, pres.Size(), "the column still pins the producer's buffers")
	assert.Equal(t, 1, importer.Snapshot().ImportsLive)
	col.Release()
	assert.Zero(t, pres.Size(), "the last Go reference ran the producer's release")
	assert.Zero(t, importer.Snapshot().ImportsLive)
	assert.Zero(t, importer.Snapshot().Imported)
}

func TestImporterChargesPolicyChargesImportedBytesOnceUntilGoReleases(t *testing.T) {
	// A producer that accounts nothing: plain libc memory.
	mem := mallocator.NewMallocator()
	defer mem.AssertSize(t, 0)
	importer, ires := newAlloc(t, "op", 1<<20, ffi.WithImportPolicy(ffi.ImporterCharges))
	defer ffitest.AssertNoLeak(t, importer)

	arr, sc := produce(t, mem, 0, 1000)
	defer ctest.Free(arr)
	defer ctest.Free(sc)
	rb, err := importer.ImportRecordBatch(arr, sc)
	require.NoError(t, err)
	bytes, err := ffi.ImportedBytes(rb)
	require.NoError(t, err)
	require.Positive(t, bytes)
	assert.Equal(t, bytes, ires.Size())
	s := importer.Snapshot()
	assert.Equal(t, bytes, s.ImportCharged)
	assert.Zero(t, s.Allocated, "imports are not allocations")
	assert.Zero(t, s.Forced)

	rb.Release()
	assert.Zero(t, ires.Size())
	assert.Zero(t, importer.Snapshot().ImportCharged)
}

func TestImporterChargesGoesPastThePoolLimitAndCountsForcedBytes(t *testing.T) {
	mem := mallocator.NewMallocator()
	defer mem.AssertSize(t, 0)
	importer, ires := newAlloc(t, "op", 100, ffi.WithImportPolicy(ffi.ImporterCharges))
	defer ffitest.AssertNoLeak(t, importer)

	arr, sc := produce(t, mem, 0, 1000)
	defer ctest.Free(arr)
	defer ctest.Free(sc)
	rb, err := importer.ImportRecordBatch(arr, sc)
	require.NoError(t, err, "memory that exists is charged, not refused")
	bytes, _ := ffi.ImportedBytes(rb)
	assert.Equal(t, bytes, ires.Size())
	assert.Greater(t, ires.Size(), int64(100), "past the limit")
	assert.Equal(t, bytes, importer.Snapshot().Forced)

	err = ffi.Catch(func() error { importer.Allocate(1); return nil })
	assert.ErrorIs(t, err, pool.ErrResourcesExhausted, "new allocations are refused until it is released")
	rb.Release()
	assert.Zero(t, ires.Size())
}

func TestImportedBatchReleasedTwicePanicsAndReleasesOnce(t *testing.T) {
	producer, pres := newAlloc(t, "jvm", 1<<20)
	defer ffitest.AssertNoLeak(t, producer)
	importer, ires := newAlloc(t, "op", 1<<20, ffi.WithImportPolicy(ffi.ImporterCharges))
	defer ffitest.AssertNoLeak(t, importer)
	arr, sc := produce(t, producer, 0, 10)
	defer ctest.Free(arr)
	defer ctest.Free(sc)
	rb, err := importer.ImportRecordBatch(arr, sc)
	require.NoError(t, err)
	bytes, _ := ffi.ImportedBytes(rb)

	rb.Retain()
	rb.Release()
	rb.Release()
	assert.Zero(t, pres.Size())
	assert.Zero(t, ires.Size())
	assert.PanicsWithValue(t, fmt.Sprintf("ffi: Release of an imported record batch (%d bytes, imported for %s): released more times than retained",
		bytes, ires.Consumer()), rb.Release)
	assert.Zero(t, ires.Size(), "nothing released twice")
	assert.Zero(t, pres.Size())
}

func TestImportRejectsReleasedArraysClosedAllocatorsAndNil(t *testing.T) {
	mem := mallocator.NewMallocator()
	defer mem.AssertSize(t, 0)
	importer, ires := newAlloc(t, "op", 1<<20)
	arr, sc := produce(t, mem, 0, 10)
	defer ctest.Free(arr)
	defer ctest.Free(sc)
	rb, err := importer.ImportRecordBatch(arr, sc)
	require.NoError(t, err)
	defer rb.Release()

	_, err = importer.ImportRecordBatchWithSchema(arr, int64Schema)
	assert.EqualError(t, err, fmt.Sprintf("ffi: ImportRecordBatchWithSchema for %s: ArrowArray is released (imported or released already)", ires.Consumer()))
	_, err = importer.ImportRecordBatchWithSchema(nil, int64Schema)
	assert.EqualError(t, err, "ffi: ImportRecordBatchWithSchema: nil ArrowArray")

	log := &captureLog{}
	closed, cres := newAlloc(t, "closed", 1<<20, ffi.WithLogger(log.logger()))
	require.NoError(t, closed.Close())
	arr2, sc2 := produce(t, mem, 0, 10)
	defer ctest.Free(arr2)
	defer ctest.Free(sc2)
	_, err = closed.ImportRecordBatch(arr2, sc2)
	assert.ErrorIs(t, err, pool.ErrClosed)
	assert.EqualError(t, err, fmt.Sprintf("ffi: ImportRecordBatch: ffi: allocator of %s: closed", cres.Consumer()))
	assert.False(t, ctest.Released(arr2), "left to the caller, as arrow-go does on error")
	ctest.Release(arr2)
	cdata.ReleaseCArrowSchema(sc2)
}

func TestImportErrorSettlesWhenTheCallerReleases(t *testing.T) {
	producer, pres := newAlloc(t, "jvm", 1<<20)
	defer ffitest.AssertNoLeak(t, producer)
	importer, _ := newAlloc(t, "op", 1<<20)
	defer ffitest.AssertNoLeak(t, importer)
	arr, sc := produce(t, producer, 0, 10)
	defer ctest.Free(arr)
	defer ctest.Free(sc)
	cdata.ReleaseCArrowSchema(sc)

	wrong := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	_, err := importer.ImportRecordBatchWithSchema(arr, wrong)
	require.Error(t, err)
	ctest.Release(arr) // a no-op if arrow-go released it already
	assert.Zero(t, pres.Size())
	assert.Zero(t, importer.Snapshot().ImportsLive)
}

func TestImportOfABatchWithoutBuffersChargesNothing(t *testing.T) {
	importer, ires := newAlloc(t, "op", 1<<20, ffi.WithImportPolicy(ffi.ImporterCharges))
	defer ffitest.AssertNoLeak(t, importer)
	sc := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.Null, Nullable: true}}, nil)
	col := array.NewNull(4)
	rb := array.NewRecordBatch(sc, []arrow.Array{col}, 4)
	col.Release()
	arr, csc := ctest.NewArray(), ctest.NewSchema()
	defer ctest.Free(arr)
	defer ctest.Free(csc)
	cdata.ExportArrowRecordBatch(rb, arr, csc)
	rb.Release()

	got, err := importer.ImportRecordBatch(arr, csc)
	require.NoError(t, err)
	assert.Equal(t, int64(4), got.NumRows())
	assert.Zero(t, ires.Size())
	assert.Zero(t, importer.Snapshot().ImportsLive, "released during the import")
	got.Release()
}

// A forced charge that upstream fails (a Java exception for pools bridged
// to Spark, such as a task kill) fails the import with that failure and
// leaves nothing charged: the pool records the Grow as overcommit, and the
// importer hands it straight back.
func TestImporterChargesFailsTheImportWhenUpstreamFailsTheForcedGrow(t *testing.T) {
	mem := mallocator.NewMallocator()
	defer mem.AssertSize(t, 0)
	up := fakeupstream.New()
	p := pool.NewGreedyUnified(up, pool.WithChunkSize(0))
	ires := pool.NewConsumer("op").Register(p)
	importer := ffi.NewAllocator(nil, ires, ffi.WithImportPolicy(ffi.ImporterCharges))
	defer ffitest.AssertNoLeak(t, importer)
	killed := errors.New("InterruptedException: task killed")
	up.Reply(fakeupstream.Grant(0), fakeupstream.Fail(killed)) // TryGrow refused, then Grow's acquire fails

	arr, sc := produce(t, mem, 0, 1000)
	defer ctest.Free(arr)
	defer ctest.Free(sc)
	_, err := importer.ImportRecordBatch(arr, sc)

	require.ErrorIs(t, err, killed)
	assert.Zero(t, ires.Size(), "nothing stays charged")
	assert.Zero(t, p.Reserved())
	assert.Zero(t, importer.Snapshot().Forced)
	ires.Close()
	assert.Zero(t, up.Held())
}
