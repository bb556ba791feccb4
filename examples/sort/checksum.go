package extsort

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Fingerprint summarises a multiset of rows independently of their order:
// two row sequences that are permutations of each other have equal
// fingerprints, and a lost, duplicated or altered row changes it (with
// overwhelming probability). The zero Fingerprint is that of no rows. It is
// a value type, not safe for concurrent mutation.
type Fingerprint struct {
	Rows    int64  // number of rows
	KeySum  int64  // wrapping sum of keys
	HashSum uint64 // wrapping sum of mix(key, payload)
	HashXor uint64 // xor of mix(key, payload)
}

// Add folds one row into the fingerprint.
func (f *Fingerprint) Add(key, payload int64) {
	h := mixRow(key, payload)
	f.Rows++
	f.KeySum += key
	f.HashSum += h
	f.HashXor ^= h
}

// AddBatch folds every row of a batch with Schema's columns. It returns an
// error if the batch does not have that shape.
func (f *Fingerprint) AddBatch(b arrow.RecordBatch) error {
	keys, payloads, err := columns(b)
	if err != nil {
		return err
	}
	for i, k := range keys {
		f.Add(k, payloads[i])
	}
	return nil
}

// mixRow hashes a row with two rounds of SplitMix64's finaliser, so that
// equal keys with different payloads hash apart.
func mixRow(key, payload int64) uint64 {
	return splitmix(splitmix(uint64(key)) ^ uint64(payload))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Verifier checks a sort's output as it streams by: every row must be ≥ the
// one before it in (key, payload) order, across batch boundaries, and the
// rows' Fingerprint must equal the input's. It is not safe for concurrent
// use; the zero Verifier is ready and has seen no rows.
type Verifier struct {
	fp       Fingerprint
	last     pair
	seen     bool
	disorder int64 // rows smaller than their predecessor
	first    int64 // index of the first such row, valid when disorder > 0
}

// AddBatch checks and folds one output batch. It returns an error if the
// batch does not have Schema's shape; disorder is reported by Check.
func (v *Verifier) AddBatch(b arrow.RecordBatch) error {
	keys, payloads, err := columns(b)
	if err != nil {
		return err
	}
	for i, k := range keys {
		p := pair{k, payloads[i]}
		if v.seen && lessPair(p, v.last) {
			if v.disorder == 0 {
				v.first = v.fp.Rows
			}
			v.disorder++
		}
		v.last, v.seen = p, true
		v.fp.Add(p.key, p.payload)
	}
	return nil
}

// Fingerprint is the fingerprint of the rows seen so far.
func (v *Verifier) Fingerprint() Fingerprint { return v.fp }

// Check returns nil if every row seen was in order and the rows' fingerprint
// equals want, else an error saying which check failed.
func (v *Verifier) Check(want Fingerprint) error {
	if v.disorder > 0 {
		return fmt.Errorf("extsort: output not sorted: %d rows out of order, first at row %d", v.disorder, v.first)
	}
	if v.fp != want {
		return fmt.Errorf("extsort: output rows differ from input: got %+v, want %+v", v.fp, want)
	}
	return nil
}

// columns returns the key and payload values of a batch with Schema's shape.
func columns(b arrow.RecordBatch) (keys, payloads []int64, err error) {
	if b.NumCols() != 2 {
		return nil, nil, fmt.Errorf("extsort: batch has %d columns, want 2 (%s, %s)", b.NumCols(), KeyColumn, PayloadColumn)
	}
	k, ok1 := b.Column(0).(*array.Int64)
	p, ok2 := b.Column(1).(*array.Int64)
	if !ok1 || !ok2 {
		return nil, nil, fmt.Errorf("extsort: batch columns are %s and %s, want int64 and int64", b.Column(0).DataType(), b.Column(1).DataType())
	}
	if k.NullN() > 0 || p.NullN() > 0 {
		return nil, nil, fmt.Errorf("extsort: batch has %d null keys and %d null payloads; nulls are not supported", k.NullN(), p.NullN())
	}
	return k.Int64Values(), p.Int64Values(), nil
}
