package arrowruntime

import (
	"testing"
	"unsafe"

	"github.com/nativepool/nativepool/internal/bridge"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// unmappedAddr is an address no process maps on linux/amd64 in practice
// (16 TiB, between the heap and the mmap area); noAccessPage returns one
// that is certainly mapped without access.
const unmappedAddr = uintptr(1) << 44

func noAccessPage(t *testing.T, prot int) uintptr {
	t.Helper()
	b, err := unix.Mmap(-1, 0, 4096, prot, unix.MAP_PRIVATE|unix.MAP_ANON)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Munmap(b) })
	return uintptr(unsafe.Pointer(&b[0]))
}

// rawSchema and rawArray are struct ArrowSchema and struct ArrowArray
// (ffi/abi.h) as Go structs, so that a test can forge one field of a
// genuine export.
type rawSchema struct {
	format, name, metadata uintptr
	flags, nChildren       int64
	children, dictionary   uintptr
	release, privateData   uintptr
}

type rawArray struct {
	length, nullCount, offset, nBuffers, nChildren int64
	buffers, children, dictionary                  uintptr
	release, privateData                           uintptr
}

func rawOf(arr *cdata.CArrowArray) *rawArray { return (*rawArray)(unsafe.Pointer(arr)) }

// cptr turns an address held in a C struct into a pointer (C memory, never
// moved by Go; the reinterpretation keeps vet's uintptr rule quiet).
func cptr(addr uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&addr)) }
func rawSchemaOf(sc *cdata.CArrowSchema) *rawSchema {
	return (*rawSchema)(unsafe.Pointer(sc))
}

var twoColumnSchema = arrow.NewSchema([]arrow.Field{
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// exportTwoColumns exports rows rows of (int64, string) from p into fresh C
// structs, with a null in each column.
func (p *producer) exportTwoColumns(t testing.TB, rows int) (*cdata.CArrowArray, *cdata.CArrowSchema) {
	t.Helper()
	b := array.NewRecordBuilder(p.mem, twoColumnSchema)
	defer b.Release()
	for i := range rows {
		if i == 1 {
			b.Field(0).AppendNull()
			b.Field(1).AppendNull()
			continue
		}
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("row-" + string(rune('a'+i%26)))
	}
	rb := b.NewRecordBatch()
	defer rb.Release()
	arr, sc := cStructs(t)
	cdata.ExportArrowRecordBatch(rb, arr, sc)
	return arr, sc
}

// child returns the i-th child of arr.
func child(arr *cdata.CArrowArray, i int) *rawArray {
	kids := unsafe.Slice((**rawArray)(cptr(rawOf(arr).children)), rawOf(arr).nChildren)
	return kids[i]
}

// TestImportOfForgedCDataIsIllegalArgumentAndTouchesNothing forges one field
// of a genuine export at a time: each import is refused with
// IllegalArgumentException before anything is dereferenced (an unmapped
// address would otherwise be a fatal fault), nothing is charged or kept, and
// with the field restored the same struct imports.
func TestImportOfForgedCDataIsIllegalArgumentAndTouchesNothing(t *testing.T) {
	none := noAccessPage(t, unix.PROT_NONE)
	cases := []struct {
		name   string
		forge  func(arr *cdata.CArrowArray, sc *cdata.CArrowSchema) func()
		errMsg string
	}{
		{"buffers pointer unmapped", func(arr *cdata.CArrowArray, _ *cdata.CArrowSchema) func() {
			c := child(arr, 0)
			old := c.buffers
			c.buffers = unmappedAddr
			return func() { c.buffers = old }
		}, "buffers: 0x100000000000 (16 bytes): address not readable"},
		{"data buffer without access", func(arr *cdata.CArrowArray, _ *cdata.CArrowSchema) func() {
			bufs := unsafe.Slice((*uintptr)(cptr(child(arr, 0).buffers)), 2)
			old := bufs[1]
			bufs[1] = none
			return func() { bufs[1] = old }
		}, "values (80 bytes at"},
		{"children pointer misaligned", func(arr *cdata.CArrowArray, _ *cdata.CArrowSchema) func() {
			old := rawOf(arr).children
			rawOf(arr).children = old + 4
			return func() { rawOf(arr).children = old }
		}, "not 8-byte aligned"},
		{"length beyond the buffers", func(arr *cdata.CArrowArray, _ *cdata.CArrowSchema) func() {
			old := rawOf(arr).length
			rawOf(arr).length = 1 << 40
			return func() { rawOf(arr).length = old }
		}, "has length 10, 1099511627776 needed"},
		{"negative length", func(arr *cdata.CArrowArray, _ *cdata.CArrowSchema) func() {
			c := child(arr, 1)
			old := c.length
			c.length = -3
			return func() { c.length = old }
		}, "negative length -3 or offset 0"},
		{"negative offset", func(arr *cdata.CArrowArray, _ *cdata.CArrowSchema) func() {
			old := rawOf(arr).offset
			rawOf(arr).offset = -1
			return func() { rawOf(arr).offset = old }
		}, "negative length 10 or offset -1"},
		{"columns of unequal row counts", func(arr *cdata.CArrowArray, _ *cdata.CArrowSchema) func() {
			c := child(arr, 0)
			old := c.length
			c.length = 12
			return func() { c.length = old }
		}, "column 0 has 12 rows, the batch 10 (offset 0)"},
		{"null_count beyond length", func(arr *cdata.CArrowArray, _ *cdata.CArrowSchema) func() {
			c := child(arr, 0)
			old := c.nullCount
			c.nullCount = 11
			return func() { c.nullCount = old }
		}, "null_count 11 outside [-1, 10]"},
		{"nulls without a validity buffer", func(arr *cdata.CArrowArray, _ *cdata.CArrowSchema) func() {
			bufs := unsafe.Slice((*uintptr)(cptr(child(arr, 0).buffers)), 2)
			old := bufs[0]
			bufs[0] = 0
			return func() { bufs[0] = old }
		}, "null_count 1 without a validity buffer"},
		{"n_buffers against the type", func(arr *cdata.CArrowArray, _ *cdata.CArrowSchema) func() {
			c := child(arr, 1)
			old := c.nBuffers
			c.nBuffers = 2
			return func() { c.nBuffers = old }
		}, `(format "u"): n_buffers 2, the format needs 3`},
		{"n_children against the schema", func(arr *cdata.CArrowArray, _ *cdata.CArrowSchema) func() {
			old := rawOf(arr).nChildren
			rawOf(arr).nChildren = 1
			return func() { rawOf(arr).nChildren = old }
		}, "n_children 1, the schema has 2"},
		{"decreasing string offsets", func(arr *cdata.CArrowArray, _ *cdata.CArrowSchema) func() {
			bufs := unsafe.Slice((*uintptr)(cptr(child(arr, 1).buffers)), 3)
			offs := unsafe.Slice((*int32)(cptr(bufs[1])), 11)
			old := offs[5]
			offs[5] = 1 << 30
			return func() { offs[5] = old }
		}, "of slot 6 is negative or decreasing"},
		{"string offsets beyond the data", func(arr *cdata.CArrowArray, _ *cdata.CArrowSchema) func() {
			bufs := unsafe.Slice((*uintptr)(cptr(child(arr, 1).buffers)), 3)
			offs := unsafe.Slice((*int32)(cptr(bufs[1])), 11)
			oldBuf, oldOff := bufs[2], offs[10]
			bufs[2] = none - 64 // the data ends where the no-access page starts
			offs[10] = 1 << 20
			return func() { bufs[2], offs[10] = oldBuf, oldOff }
		}, "address not readable"},
		{"released array", func(arr *cdata.CArrowArray, _ *cdata.CArrowSchema) func() {
			c := child(arr, 0)
			old := c.release
			c.release = 0
			return func() { c.release = old }
		}, "released (release callback is NULL)"},
		{"schema format unmapped", func(_ *cdata.CArrowArray, sc *cdata.CArrowSchema) func() {
			old := rawSchemaOf(sc).format
			rawSchemaOf(sc).format = unmappedAddr
			return func() { rawSchemaOf(sc).format = old }
		}, "ArrowSchema schema format: 0x100000000000"},
		{"schema children unmapped", func(_ *cdata.CArrowArray, sc *cdata.CArrowSchema) func() {
			old := rawSchemaOf(sc).children
			rawSchemaOf(sc).children = none
			return func() { rawSchemaOf(sc).children = old }
		}, "ArrowSchema schema children: 0x"},
		{"schema n_children forged", func(_ *cdata.CArrowArray, sc *cdata.CArrowSchema) func() {
			old := rawSchemaOf(sc).nChildren
			rawSchemaOf(sc).nChildren = 1 << 40
			return func() { rawSchemaOf(sc).nChildren = old }
		}, "n_children 1099511627776 outside [0, 65536]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newArrowFixture(t, 1<<30)
			p := newProducer()
			res := mustReserve(t, f.b, f.pool, "forged", false, nil)
			arr, sc := p.exportTwoColumns(t, 10)
			restore := tc.forge(arr, sc)
			_, err := importBatch(f.b, res, arr, sc)
			require.Error(t, err)
			assert.Equal(t, bridge.ThrowIllegalArgument, bridge.Classify(err), err.Error())
			assert.Contains(t, err.Error(), tc.errMsg)
			assert.Regexp(t, `^nativepool: importBatch for forged#\d+: `, err.Error())
			s := f.stats(t, res)
			assert.Equal(t, int64(0), s[bridge.ArrowStatBatches])
			assert.Equal(t, int64(0), s[bridge.ArrowStatImportsLive])
			assert.Equal(t, int64(0), f.up.Held(), "nothing charged")
			assert.NotZero(t, rawOf(arr).release, "the caller's struct is untouched")

			restore()
			h, err := importBatch(f.b, res, arr, sc)
			require.NoError(t, err, "the genuine struct imports")
			require.NoError(t, f.b.ReleaseBatch(h))
			assert.Equal(t, 0, p.mem.CurrentAlloc(), "nothing leaked")
			require.NoError(t, f.b.ClosePool(f.pool))
			f.up.requireSane(t)
		})
	}
}

// TestImportOfUnreadableOrGarbageAddressesIsIllegalArgument: addresses that
// are not structs at all. Before validation the first two were a fatal
// "unexpected fault address", which no recover catches.
func TestImportOfUnreadableOrGarbageAddressesIsIllegalArgument(t *testing.T) {
	f := newArrowFixture(t, 1<<30)
	res := mustReserve(t, f.b, f.pool, "garbage", false, nil)
	none := noAccessPage(t, unix.PROT_NONE)
	p := newProducer()
	arr, sc := p.exportTwoColumns(t, 3)
	garbage := make([]uint64, 16)
	for i := range garbage {
		garbage[i] = 0x9e3779b97f4a7c15 * uint64(i+1)
	}
	gp := uintptr(unsafe.Pointer(&garbage[0]))
	cases := []struct {
		name      string
		arr, sc   uintptr
		errSuffix string
	}{
		{"unmapped array", unmappedAddr, uintptr(unsafe.Pointer(sc)), "ArrowArray batch: 0x100000000000 (80 bytes): address not readable"},
		{"no-access schema", uintptr(unsafe.Pointer(arr)), none, "(72 bytes): address not readable"},
		{"misaligned array", uintptr(unsafe.Pointer(arr)) + 1, uintptr(unsafe.Pointer(sc)), "not 8-byte aligned"},
		{"garbage schema", uintptr(unsafe.Pointer(arr)), gp, "address not readable"},
		{"garbage array", gp, uintptr(unsafe.Pointer(sc)), "negative length"},
	}
	for _, tc := range cases {
		_, err := ImportBatchAt(f.b, res, tc.arr, tc.sc)
		require.Error(t, err, tc.name)
		assert.Equal(t, bridge.ThrowIllegalArgument, bridge.Classify(err), tc.name)
		assert.Contains(t, err.Error(), tc.errSuffix, tc.name)
	}
	assert.Equal(t, int64(0), f.stats(t, res)[bridge.ArrowStatBatches])
	cdata.ReleaseCArrowArray(arr)
	cdata.ReleaseCArrowSchema(sc)
	assert.Equal(t, 0, p.mem.CurrentAlloc())
	require.NoError(t, f.b.ClosePool(f.pool))
	f.up.requireSane(t)
}

// TestExportIntoBadTargetsIsIllegalArgumentAndWritesNothing: exportBatch0
// writes the addresses it is given, so they must be aligned, readable,
// writable and not hold a live struct.
func TestExportIntoBadTargetsIsIllegalArgumentAndWritesNothing(t *testing.T) {
	f := newArrowFixture(t, 1<<30)
	p := newProducer()
	res := mustReserve(t, f.b, f.pool, "exporter", false, nil)
	arr, sc := p.export(t, 0, 10)
	h, err := importBatch(f.b, res, arr, sc)
	require.NoError(t, err)
	live, liveSchema := p.export(t, 0, 1)
	readOnly := noAccessPage(t, unix.PROT_READ)
	out, outSchema := cStructs(t)
	cases := []struct {
		name    string
		arr, sc uintptr
		msg     string
	}{
		{"unmapped", unmappedAddr, uintptr(unsafe.Pointer(outSchema)), "address not readable"},
		{"misaligned", uintptr(unsafe.Pointer(out)) + 4, uintptr(unsafe.Pointer(outSchema)), "not 8-byte aligned"},
		{"read-only", readOnly, uintptr(unsafe.Pointer(outSchema)), "not writable"},
		{"a live struct", uintptr(unsafe.Pointer(live)), uintptr(unsafe.Pointer(outSchema)), "a live struct (release callback set)"},
		{"a live schema", uintptr(unsafe.Pointer(out)), uintptr(unsafe.Pointer(liveSchema)), "a live struct (release callback set)"},
	}
	for _, tc := range cases {
		err := ExportBatchAt(f.b, h, tc.arr, tc.sc)
		require.Error(t, err, tc.name)
		assert.Equal(t, bridge.ThrowIllegalArgument, bridge.Classify(err), tc.name)
		assert.Contains(t, err.Error(), tc.msg, tc.name)
		assert.Zero(t, rawOf(out).release, tc.name)
		assert.Zero(t, rawSchemaOf(outSchema).release, tc.name)
	}
	assert.Equal(t, int64(0), f.stats(t, res)[bridge.ArrowStatExportsLive])
	require.NoError(t, exportBatch(f.b, h, out, outSchema), "a good target still works")
	assert.Equal(t, int64(45), sumExported(t, out, outSchema))
	require.NoError(t, f.b.ReleaseBatch(h))
	cdata.ReleaseCArrowArray(live)
	cdata.ReleaseCArrowSchema(liveSchema)
	assert.Equal(t, 0, p.mem.CurrentAlloc())
	require.NoError(t, f.b.ClosePool(f.pool))
	f.up.requireSane(t)
}
