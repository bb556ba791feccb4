package arrowruntime

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/bridge"
	"github.com/nativepool/nativepool/internal/cdatamodel"
	"github.com/nativepool/nativepool/internal/cdatamodel/crelease"
)

// seedDir holds the C Data seed corpus both fuzz targets of the door share:
// Arrow Java's exports (the plugin's CDataCorpusTest writes them) and
// arrow-go's (TestCDataSeedsAreArrowGoExports writes them).
var seedDir = filepath.Join("..", "cdatacheck", "testdata", "cdata")

// FuzzImportBatchAt drives the whole door importBatch0 is: the batch its
// input describes (cdatamodel) goes through ImportBatchAt into a real
// bridge with ffi's allocator. The properties:
//
//   - a batch the C Data specification forbids (cdatamodel.Judge) is
//     refused with IllegalArgumentException, and the caller's structs are
//     left as they were (not released); an imported one has its schema
//     released and its array moved, and the array's release callback runs
//     once, when the batch is released;
//   - an imported batch can be read whole: every column is written as
//     JSON, which reads every value (a fault would kill the process), and
//     copyBatch0's deep copy runs where arrow-go can concatenate the type;
//   - after the batches are released, nothing is charged or tracked, and Spark
//     (the fake upstream) holds nothing once the pool is closed.
//
// (arrow-go also calls the release callbacks of the schema's children,
// which the specification leaves to the parent's; the arena's callbacks
// only mark a struct released, so that does no harm here.)
func FuzzImportBatchAt(f *testing.F) {
	for _, seed := range seeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		b := cdatamodel.Decode(in)
		arena, err := cdatamodel.Materialize(b, crelease.Schema(), crelease.Array())
		if err != nil {
			t.Skip(err)
		}
		defer arena.Close()
		spec := arena.Judge()

		br, _ := newTestBridge(t)
		up := newFakeUpstream(1 << 30)
		ph := mustOpen(t, br, 77, bridge.KindGreedyUnified, 0, 0, up)
		res := mustReserve(t, br, ph, "fuzz", false, nil)
		_, arrays0 := crelease.Calls()
		live := func(addr uintptr, releaseAt uintptr) bool {
			w, ok := arena.Read(addr+releaseAt, 8)
			return ok && binary.LittleEndian.Uint64(w) != 0
		}
		schemaLive, arrayLive := live(arena.SchemaAddr, 56), live(arena.ArrayAddr, 64)

		h, err := ImportBatchAt(br, res, arena.ArrayAddr, arena.SchemaAddr)
		if err != nil {
			if c := bridge.Classify(err); c != bridge.ThrowIllegalArgument {
				t.Fatalf("a refused import is %v, not IllegalArgumentException: %v", c, err)
			}
			if live(arena.SchemaAddr, 56) != schemaLive || live(arena.ArrayAddr, 64) != arrayLive {
				t.Fatalf("a refused import released the caller's structs: %v", err)
			}
		} else {
			if spec != nil {
				t.Fatalf("imported a batch the specification forbids: %v", spec)
			}
			if live(arena.SchemaAddr, 56) || live(arena.ArrayAddr, 64) {
				t.Fatal("an import left the schema unreleased or the array not moved")
			}
			// Read every value of every column (a fault kills the test).
			_, err := br.CopyBatch(res, h, func(_ bridge.ArrowAllocator, src arrow.RecordBatch) (arrow.RecordBatch, error) {
				for _, c := range src.Columns() {
					if _, err := c.MarshalJSON(); err != nil {
						return nil, err
					}
				}
				return nil, errReadOnly
			})
			require.ErrorIs(t, err, errReadOnly)
			// The copy copyBatch0 makes, where arrow-go can concatenate the
			// type (not unions).
			if cp, err := CopyBatch(br, res, h, ""); err == nil {
				require.NoError(t, br.ReleaseBatch(cp))
			}
			require.NoError(t, br.ReleaseBatch(h))
			if _, a := crelease.Calls(); a != arrays0+1 {
				t.Fatalf("releasing the import called the array's release %d times", a-arrays0)
			}
		}
		s, err := br.ArrowStats(res)
		require.NoError(t, err)
		if s[bridge.ArrowStatAllocated] != 0 || s[bridge.ArrowStatBatches] != 0 || s[bridge.ArrowStatImportsLive] != 0 {
			t.Fatalf("left on the books: %v", s)
		}
		require.NoError(t, br.CloseReservation(res))
		require.NoError(t, br.ClosePool(ph))
		up.requireSane(t)
		if up.Held() != 0 {
			t.Fatalf("Spark still holds %d bytes after the pool closed", up.Held())
		}
	})
}

// errReadOnly ends a CopyBatch that only reads its source.
var errReadOnly = errors.New("read, not copied")

func seeds(t testing.TB) [][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(seedDir, "*.bin"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	var out [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}

// arrowGoSeeds are the batches arrow-go exports for the seed corpus, one
// per layout the C Data Interface has, as JSON arrow-go reads.
var arrowGoSeeds = []struct {
	name string
	typ  arrow.DataType
	json string
}{
	{"int64", arrow.PrimitiveTypes.Int64, `[1, null, 3]`},
	{"bool", arrow.FixedWidthTypes.Boolean, `[true, null, false, true]`},
	{"float64", arrow.PrimitiveTypes.Float64, `[1.5, null]`},
	{"decimal128", &arrow.Decimal128Type{Precision: 10, Scale: 2}, `["1.25", null, "-3.50"]`},
	{"date32", arrow.FixedWidthTypes.Date32, `[1, 19000, null]`},
	{"timestamp-tz", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, `["2024-01-01T00:00:00Z", null]`},
	{"fixed-size-binary", &arrow.FixedSizeBinaryType{ByteWidth: 3}, `["YWJj", null, "ZGVm"]`},
	{"utf8", arrow.BinaryTypes.String, `["a", null, "", "longer string"]`},
	{"large-utf8", arrow.BinaryTypes.LargeString, `["x", "yz", null]`},
	{"string-view", arrow.BinaryTypes.StringView, `["short", null, "a string longer than twelve bytes"]`},
	{"list", arrow.ListOf(arrow.PrimitiveTypes.Int32), `[[1, 2], null, [], [3]]`},
	{"large-list", arrow.LargeListOf(arrow.PrimitiveTypes.Int16), `[[1], [2, 3]]`},
	{"list-view", arrow.ListViewOf(arrow.PrimitiveTypes.Int32), `[[1, 2], null, [3]]`},
	{"fixed-size-list", arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int8), `[[1, 2], null, [3, 4]]`},
	{"struct", arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}), `[{"a": 1, "b": "x"}, null, {"a": null, "b": "y"}]`},
	{"map", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), `[[{"key": "k", "value": 1}], null]`},
	{"dictionary", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, `["a", "b", null, "a"]`},
	{"sparse-union", arrow.SparseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, []arrow.UnionTypeCode{0, 1}), `[[0, 5], [1, "x"], [0, null]]`},
	{"dense-union", arrow.DenseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, []arrow.UnionTypeCode{2, 7}), `[[2, 5], [7, "x"], [2, 6]]`},
	{"run-end", arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String), `["a", "a", "b", null, null]`},
	{"null", arrow.Null, `[null, null]`},
}

// exportCapture exports a batch of one column of typ read from js, with two
// leading rows sliced off when sliced, and captures it as a model Batch.
func exportCapture(t testing.TB, mem memory.Allocator, typ arrow.DataType, js string, sliced bool) cdatamodel.Batch {
	t.Helper()
	col, _, err := array.FromJSON(mem, typ, strings.NewReader(js))
	require.NoError(t, err, typ.String())
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "c", Type: typ, Nullable: true}}, nil)
	rb := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
	defer rb.Release()
	if sliced {
		s := rb.NewSlice(1, rb.NumRows())
		defer s.Release()
		rb = s
	}
	lens := map[uintptr]int{}
	var walk func(d arrow.ArrayData)
	walk = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil && b.Len() > 0 {
				lens[uintptr(unsafe.Pointer(&b.Bytes()[0]))] = b.Len()
			}
		}
		for _, c := range d.Children() {
			walk(c)
		}
		if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
			walk(dict)
		}
	}
	for _, c := range rb.Columns() {
		walk(c.Data())
	}
	arr, sc := cStructs(t)
	cdata.ExportArrowRecordBatch(rb, arr, sc)
	defer cdata.ReleaseCArrowArray(arr)
	defer cdata.ReleaseCArrowSchema(sc)
	b, err := cdatamodel.Capture(uintptr(unsafe.Pointer(sc)), uintptr(unsafe.Pointer(arr)), func(addr uintptr, i, n int) (int, bool) {
		if l, ok := lens[addr]; ok {
			return l, true
		}
		if _, view := typ.(arrow.BinaryViewDataType); view && i == n-1 {
			return 8 * (n - 3), true // the variadic buffers' sizes, made by the export
		}
		return 0, true // an empty buffer
	})
	require.NoError(t, err, typ.String())
	return b
}

// TestCDataSeedsAreArrowGoExports checks that the arrow-go part of the seed
// corpus is what arrow-go exports today, each batch whole and sliced; with
// NATIVEPOOL_WRITE_SEEDS=1 it writes them instead.
func TestCDataSeedsAreArrowGoExports(t *testing.T) {
	mem := memory.NewCheckedAllocator(mallocator.NewMallocator())
	defer mem.AssertSize(t, 0)
	write := os.Getenv("NATIVEPOOL_WRITE_SEEDS") == "1"
	for _, s := range arrowGoSeeds {
		for _, sliced := range []bool{false, true} {
			if sliced && (s.name == "struct" || s.name == "sparse-union") {
				// arrow-go exports a sliced struct or sparse union with its
				// children sliced too and the parent's offset kept: a child
				// then ends before offset+length, which the columnar format
				// forbids (Arrow C++'s validation refuses it too).
				continue
			}
			name := "arrowgo-" + s.name
			if sliced {
				name += "-sliced"
			}
			got := cdatamodel.Encode(exportCapture(t, mem, s.typ, s.json, sliced))
			path := filepath.Join(seedDir, name+".bin")
			if write {
				require.NoError(t, os.MkdirAll(seedDir, 0o755))
				require.NoError(t, os.WriteFile(path, got, 0o644))
				continue
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run with NATIVEPOOL_WRITE_SEEDS=1 to write the seed corpus")
			require.True(t, bytes.Equal(want, got), "%s differs from arrow-go's export today", path)
		}
	}
}
