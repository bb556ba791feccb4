package cdatacheck

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/cdatamodel"
)

// fakeRelease stands for a release callback: validation only checks that
// it is set, and never calls it.
const fakeRelease = 0x5eed0001

// FuzzValidateImport lays out the C Data batch its input describes
// (cdatamodel: structs, strings and buffers each followed by a no-access
// page, pointers valid, NULL, at no-access memory or misaligned) and
// checks that ValidateImport refuses exactly what the C Data specification
// forbids: its verdict must be cdatamodel.Judge's, a second validator that
// reads the layout through the arena's own record of what is readable.
// Reaching the end means no read faulted either. The seed corpus is Arrow
// Java's and arrow-go's exports (testdata/cdata/*.bin) and the regression
// inputs in testdata/fuzz.
func FuzzValidateImport(f *testing.F) {
	for _, seed := range cdataSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		b := cdatamodel.Decode(in)
		arena, err := cdatamodel.Materialize(b, fakeRelease, fakeRelease)
		if err != nil {
			t.Skip(err) // more memory than one input may take
		}
		defer arena.Close()
		got := ValidateImport(arena.ArrayAddr, arena.SchemaAddr)
		want := arena.Judge()
		if (got == nil) != (want == nil) {
			t.Fatalf("ValidateImport: %v\nthe specification: %v", got, want)
		}
	})
}

// cdataSeeds returns the encoded batches of testdata/cdata, Arrow Java's
// exports (written by the plugin's CDataCorpusTest) and arrow-go's.
func cdataSeeds(t testing.TB) [][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", "cdata", "*.bin"))
	require.NoError(t, err)
	require.NotEmpty(t, names, "the seed corpus testdata/cdata is empty")
	out := make([][]byte, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n)
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}

// TestSeedCorpusIsAcceptedAsExported checks that every seed batch, as its
// producer exported it, is valid by both verdicts: the corpus starts from
// what real producers send, so the fuzzer's mutations are forgeries of it.
func TestSeedCorpusIsAcceptedAsExported(t *testing.T) {
	for _, seed := range cdataSeeds(t) {
		arena, err := cdatamodel.Materialize(cdatamodel.Decode(seed), fakeRelease, fakeRelease)
		require.NoError(t, err)
		require.NoError(t, arena.Judge())
		require.NoError(t, ValidateImport(arena.ArrayAddr, arena.SchemaAddr))
		require.NoError(t, arena.Close())
	}
}

// le64 is v as 8 little-endian bytes (test data).
func le64(v ...int64) []byte {
	var out []byte
	for _, x := range v {
		out = binary.LittleEndian.AppendUint64(out, uint64(x))
	}
	return out
}
