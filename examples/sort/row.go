package extsort

import (
	"cmp"

	"github.com/apache/arrow-go/v18/arrow"
)

// Column names of Schema.
const (
	KeyColumn     = "key"
	PayloadColumn = "payload"
)

// schema is immutable (arrow schemas are); Schema hands it out.
var schema = arrow.NewSchema([]arrow.Field{
	{Name: KeyColumn, Type: arrow.PrimitiveTypes.Int64},
	{Name: PayloadColumn, Type: arrow.PrimitiveTypes.Int64},
}, nil)

// Schema is the schema the sorter accepts and produces: a non-null int64
// sort key and a non-null int64 payload that travels with it. The returned
// schema is shared and must not be modified.
func Schema() *arrow.Schema { return schema }

// pair is one row in the sorter's in-memory layout: rows are stored
// row-wise in one buffer so that a chunk sorts in place with no index.
type pair struct {
	key     int64
	payload int64
}

// pairBytes is the size of a pair in a buffer.
const pairBytes = 16

// comparePairs orders rows by key, then payload: a total order, so the
// output of a sort is fully determined by its input multiset.
func comparePairs(a, b pair) int {
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.payload, b.payload)
}

// lessPair reports whether a sorts before b.
func lessPair(a, b pair) bool {
	return a.key < b.key || (a.key == b.key && a.payload < b.payload)
}
