package cdatamodel

import "encoding/binary"

// PtrMode is how a materialised pointer points at its object.
type PtrMode uint8

const (
	// PtrValid is the object's address.
	PtrValid PtrMode = iota
	// PtrNull is NULL.
	PtrNull
	// PtrNoAccess is the address of a page mapped without access.
	PtrNoAccess
	// PtrMisaligned is the object's address plus 4.
	PtrMisaligned
)

// Bounds of what Decode builds, so that one input stays a few megabytes of
// memory at most.
const (
	maxNodes    = 512     // schemas and arrays in one Batch
	maxDepth    = 80      // nesting; cdatacheck refuses more than 64
	maxEntries  = 16      // encoded children or buffers of one struct
	maxDataSize = 4 << 20 // bytes of all buffers and metadata
)

// Batch is an ArrowSchema and an ArrowArray tree, as importBatch0 gets them.
// The zero Batch has nil trees; Decode never returns one.
type Batch struct {
	Schema *Schema
	Array  *Array
}

// Schema describes one struct ArrowSchema and what it points to.
type Schema struct {
	Mode     PtrMode // how the parent (or the caller) points at this struct
	Released bool    // release is NULL
	Format   String
	Name     *String // nil: name is NULL
	// Metadata is the raw bytes the metadata pointer points at (nil: NULL).
	Metadata     []byte
	MetadataMode PtrMode
	Flags        int64
	Children     Children[*Schema]
	Dictionary   *Schema
}

// Array describes one struct ArrowArray and what it points to.
type Array struct {
	Mode                      PtrMode
	Released                  bool
	Length, NullCount, Offset int64
	Buffers                   []Buffer
	BuffersDelta              int64 // n_buffers is len(Buffers) + BuffersDelta
	BuffersMode               PtrMode
	Children                  Children[*Array]
	Dictionary                *Array
}

// String is a NUL-terminated string (the NUL is not in Bytes, which may
// hold others).
type String struct {
	Mode  PtrMode
	Bytes []byte
}

// Buffer is one entry of an array's buffers: NULL when Mode is PtrNull.
type Buffer struct {
	Mode PtrMode
	Data []byte
}

// Children is a struct's children pointer array: n_children is
// len(Nodes) + Delta.
type Children[T any] struct {
	Nodes []T
	Delta int64
	Mode  PtrMode
}

// decoder reads an input; a missing byte is 0.
type decoder struct {
	b             []byte
	nodes, budget int
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) mode() PtrMode { return PtrMode(d.byte() & 3) }

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes reads n bytes, fewer if the input or the data budget ends.
func (d *decoder) bytes(n uint64) []byte {
	n = min(n, uint64(len(d.b)), uint64(max(d.budget, 0)))
	out := append([]byte(nil), d.b[:n]...)
	d.b = d.b[n:]
	d.budget -= int(n)
	return out
}

func (d *decoder) str() String {
	m := d.mode()
	return String{Mode: m, Bytes: d.bytes(uint64(d.byte()))}
}

// Decode reads a Batch from b. Every b decodes, into at most maxNodes
// structs nested at most maxDepth deep.
func Decode(b []byte) Batch {
	d := &decoder{b: b, budget: maxDataSize}
	return Batch{Schema: d.schema(0), Array: d.array(0)}
}

func (d *decoder) schema(depth int) *Schema {
	d.nodes++
	s := &Schema{Mode: d.mode()}
	flags := d.byte()
	s.Released = flags&1 != 0
	s.Format = d.str()
	if flags&2 != 0 {
		n := d.str()
		s.Name = &n
	}
	if flags&4 != 0 {
		s.MetadataMode = d.mode()
		s.Metadata = d.bytes(d.uvarint())
		if s.Metadata == nil {
			s.Metadata = []byte{}
		}
	}
	s.Flags = d.varint()
	count := int(d.byte()) % (maxEntries + 1)
	s.Children.Delta = d.varint()
	s.Children.Mode = d.mode()
	for range count {
		if depth >= maxDepth || d.nodes >= maxNodes {
			break
		}
		s.Children.Nodes = append(s.Children.Nodes, d.schema(depth+1))
	}
	if flags&8 != 0 && depth < maxDepth && d.nodes < maxNodes {
		s.Dictionary = d.schema(depth + 1)
	}
	return s
}

func (d *decoder) array(depth int) *Array {
	d.nodes++
	a := &Array{Mode: d.mode()}
	flags := d.byte()
	a.Released = flags&1 != 0
	a.Length, a.NullCount, a.Offset = d.varint(), d.varint(), d.varint()
	count := int(d.byte()) % (maxEntries + 1)
	a.BuffersDelta = d.varint()
	a.BuffersMode = d.mode()
	for range count {
		m := d.mode()
		a.Buffers = append(a.Buffers, Buffer{Mode: m, Data: d.bytes(d.uvarint())})
	}
	count = int(d.byte()) % (maxEntries + 1)
	a.Children.Delta = d.varint()
	a.Children.Mode = d.mode()
	for range count {
		if depth >= maxDepth || d.nodes >= maxNodes {
			break
		}
		a.Children.Nodes = append(a.Children.Nodes, d.array(depth+1))
	}
	if flags&2 != 0 && depth < maxDepth && d.nodes < maxNodes {
		a.Dictionary = d.array(depth + 1)
	}
	return a
}

// encoder writes what decoder reads.
type encoder struct{ b []byte }

func (e *encoder) byte(c byte)      { e.b = append(e.b, c) }
func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }

func (e *encoder) str(s String) {
	e.byte(byte(s.Mode))
	e.byte(byte(len(s.Bytes)))
	e.b = append(e.b, s.Bytes...)
}

// flag is bit when ok, else 0.
func flag(ok bool, bit byte) byte {
	if ok {
		return bit
	}
	return 0
}

// Encode writes b as Decode reads it. Strings longer than 255 bytes, more
// than 16 children or buffers, and structures beyond Decode's bounds do
// not survive the round trip.
func Encode(b Batch) []byte {
	e := &encoder{}
	e.schema(b.Schema)
	e.array(b.Array)
	return e.b
}

func (e *encoder) schema(s *Schema) {
	e.byte(byte(s.Mode))
	e.byte(flag(s.Released, 1) | flag(s.Name != nil, 2) | flag(s.Metadata != nil, 4) | flag(s.Dictionary != nil, 8))
	e.str(s.Format)
	if s.Name != nil {
		e.str(*s.Name)
	}
	if s.Metadata != nil {
		e.byte(byte(s.MetadataMode))
		e.uvarint(uint64(len(s.Metadata)))
		e.b = append(e.b, s.Metadata...)
	}
	e.varint(s.Flags)
	e.byte(byte(len(s.Children.Nodes)))
	e.varint(s.Children.Delta)
	e.byte(byte(s.Children.Mode))
	for _, c := range s.Children.Nodes {
		e.schema(c)
	}
	if s.Dictionary != nil {
		e.schema(s.Dictionary)
	}
}

func (e *encoder) array(a *Array) {
	e.byte(byte(a.Mode))
	e.byte(flag(a.Released, 1) | flag(a.Dictionary != nil, 2))
	e.varint(a.Length)
	e.varint(a.NullCount)
	e.varint(a.Offset)
	e.byte(byte(len(a.Buffers)))
	e.varint(a.BuffersDelta)
	e.byte(byte(a.BuffersMode))
	for _, buf := range a.Buffers {
		e.byte(byte(buf.Mode))
		e.uvarint(uint64(len(buf.Data)))
		e.b = append(e.b, buf.Data...)
	}
	e.byte(byte(len(a.Children.Nodes)))
	e.varint(a.Children.Delta)
	e.byte(byte(a.Children.Mode))
	for _, c := range a.Children.Nodes {
		e.array(c)
	}
	if a.Dictionary != nil {
		e.array(a.Dictionary)
	}
}
