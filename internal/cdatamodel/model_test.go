package cdatamodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// int64Batch is a batch of one nullable int64 column of three rows, the
// second null, as a producer exports it.
func int64Batch() Batch {
	name := String{Bytes: []byte("v")}
	values := make([]byte, 24)
	values[0], values[16] = 1, 3
	return Batch{
		Schema: &Schema{Format: String{Bytes: []byte("+s")}, Children: Children[*Schema]{Nodes: []*Schema{
			{Format: String{Bytes: []byte("l")}, Name: &name, Flags: 2},
		}}},
		Array: &Array{Length: 3, Buffers: []Buffer{{Mode: PtrNull}}, Children: Children[*Array]{Nodes: []*Array{
			{Length: 3, NullCount: 1, Buffers: []Buffer{{Data: []byte{0b101}}, {Data: values}}},
		}}},
	}
}

func TestDecodeReadsWhatEncodeWrites(t *testing.T) {
	b := int64Batch()
	got := Decode(Encode(b))
	assert.Equal(t, Encode(b), Encode(got))
	assert.Equal(t, "l", string(got.Schema.Children.Nodes[0].Format.Bytes))
	assert.Equal(t, int64(1), got.Array.Children.Nodes[0].NullCount)
}

func TestDecodeTakesEveryInput(t *testing.T) {
	for _, in := range [][]byte{nil, {0xff}, {3, 9, 0xff, 0xff, 0xff}, make([]byte, 100)} {
		b := Decode(in)
		require.NotNil(t, b.Schema)
		require.NotNil(t, b.Array)
	}
}

// TestAMaterializedBatchIsReadableToItsEndAndNoFurther checks the arena's
// promise: each object's bytes are readable, the byte after it is not.
func TestAMaterializedBatchIsReadableToItsEndAndNoFurther(t *testing.T) {
	a, err := Materialize(int64Batch(), 1, 1)
	require.NoError(t, err)
	defer a.Close()
	require.NoError(t, a.Judge())
	_, ok := a.Read(a.SchemaAddr, 80)
	assert.True(t, ok)
	_, ok = a.Read(a.SchemaAddr, 81)
	assert.False(t, ok, "a struct ends where a no-access page begins")
	_, ok = a.Read(a.base, 1)
	assert.False(t, ok, "the first page is the no-access target")
}

func TestJudgeRefusesWhatTheSpecificationForbids(t *testing.T) {
	cases := map[string]func(b *Batch){
		"a released array":              func(b *Batch) { b.Array.Released = true },
		"nulls without a validity":      func(b *Batch) { b.Array.Children.Nodes[0].Buffers[0] = Buffer{Mode: PtrNull} },
		"values shorter than the rows":  func(b *Batch) { b.Array.Children.Nodes[0].Buffers[1].Data = make([]byte, 16) },
		"a misaligned schema":           func(b *Batch) { b.Schema.Children.Nodes[0].Mode = PtrMisaligned },
		"an unknown format":             func(b *Batch) { b.Schema.Children.Nodes[0].Format.Bytes = []byte("x") },
		"a column of another row count": func(b *Batch) { b.Array.Children.Nodes[0].Length = 2 },
	}
	for name, forge := range cases {
		b := int64Batch()
		forge(&b)
		a, err := Materialize(b, 1, 1)
		require.NoError(t, err)
		assert.Error(t, a.Judge(), name)
		require.NoError(t, a.Close())
	}
}
