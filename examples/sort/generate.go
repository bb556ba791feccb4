package extsort

import (
	"fmt"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Generator produces a deterministic stream of Schema batches: the same
// seed, key range and batch sizes give the same rows. Keys are uniform in
// [0, KeyRange) so duplicates occur when KeyRange is small; payloads are
// uniform over int64. It also keeps the Fingerprint of everything it
// produced, which a Verifier compares against the sorted output. A
// Generator is not safe for concurrent use; build it with NewGenerator.
type Generator struct {
	rng      *rand.Rand
	keyRange int64
	fp       Fingerprint
}

// NewGenerator returns a generator seeded with seed. keyRange ≤ 0 means
// keys over all of int64. It never fails.
func NewGenerator(seed uint64, keyRange int64) *Generator {
	return &Generator{rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)), keyRange: keyRange}
}

// Next builds a batch of rows rows with mem (nil means
// memory.DefaultAllocator). The caller releases it. It panics if rows is
// negative (a caller bug).
func (g *Generator) Next(mem memory.Allocator, rows int) arrow.RecordBatch {
	if rows < 0 {
		panic(fmt.Sprintf("extsort: Generator.Next(%d): negative row count", rows))
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	kb := array.NewInt64Builder(mem)
	defer kb.Release()
	pb := array.NewInt64Builder(mem)
	defer pb.Release()
	kb.Reserve(rows)
	pb.Reserve(rows)
	for range rows {
		k := int64(g.rng.Uint64())
		if g.keyRange > 0 {
			k = g.rng.Int64N(g.keyRange)
		}
		p := int64(g.rng.Uint64())
		kb.UnsafeAppend(k)
		pb.UnsafeAppend(p)
		g.fp.Add(k, p)
	}
	ka := kb.NewArray()
	defer ka.Release()
	pa := pb.NewArray()
	defer pa.Release()
	return array.NewRecordBatch(schema, []arrow.Array{ka, pa}, int64(rows))
}

// Fingerprint is the fingerprint of every row produced so far.
func (g *Generator) Fingerprint() Fingerprint { return g.fp }
