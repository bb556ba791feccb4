package cdatamodel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The bounds cdatacheck states for what a struct may claim (its
// validate.go): the specification sets none, an importer must.
const (
	boundDepth    = 64
	boundChildren = 1 << 16
	boundBuffers  = 1 << 16
	boundString   = 1 << 12
	boundMetadata = 1 << 24
	boundEnd      = 1 << 53 // offset + length
)

// Judge decides from the C Data Interface specification whether a consumer
// may import the Arena's batch (SchemaAddr, ArrayAddr): nil when it may,
// else the first rule broken. It reads memory only through Read, so an
// unreadable address is a broken rule, never a fault. Beyond the
// specification it applies the bounds above and, as importBatch0 needs, a
// struct ("+s") at the top whose columns have the batch's row count.
//
// What it does not judge, as no validator without the producer's help can:
// the contents of values (UTF-8, decimal precision); it does judge that a
// valid slot's dictionary index names an entry of the dictionary.
// Views, list views and union slots are checked for every slot from offset
// to offset+length, null or not, as Arrow Java and arrow-go write them.
func (a *Arena) Judge() error {
	sc, err := a.schema(a.SchemaAddr, 0)
	if err != nil {
		return err
	}
	if sc.format != "+s" {
		return fmt.Errorf("top-level format %q is not a struct", sc.format)
	}
	top, err := a.array(a.ArrayAddr, sc, 0)
	if err != nil {
		return err
	}
	for i, c := range top.kids {
		if c.length != top.offset+top.length {
			return fmt.Errorf("column %d: %d rows, the batch %d after offset %d", i, c.length, top.length, top.offset)
		}
	}
	return nil
}

// node is a judged schema.
type node struct {
	format   string
	kind     kind
	width    int64
	typeIDs  []int64 // unions
	children []*node
	dict     *node
}

type kind int

const (
	kNull kind = iota
	kBool
	kFixed
	kBinary
	kView
	kList
	kListView
	kFixedList
	kStruct
	kMap
	kSparseUnion
	kDenseUnion
	kRunEnd
)

func (a *Arena) u64(addr uintptr, i int) (uint64, bool) {
	b, ok := a.Read(addr+uintptr(8*i), 8)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b), true
}

// structAt reads the 10 words of a struct at addr.
func (a *Arena) structAt(what string, addr uintptr) ([10]uint64, error) {
	var w [10]uint64
	if addr == 0 || addr%8 != 0 {
		return w, fmt.Errorf("%s at 0x%x: null or misaligned", what, addr)
	}
	b, ok := a.Read(addr, 80)
	if !ok {
		return w, fmt.Errorf("%s at 0x%x: unreadable", what, addr)
	}
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return w, nil
}

// cstring reads a NUL-terminated string of at most boundString bytes.
func (a *Arena) cstring(what string, addr uintptr) (string, error) {
	if addr == 0 {
		return "", fmt.Errorf("%s: NULL", what)
	}
	var sb strings.Builder
	for i := uintptr(0); i < boundString; i++ {
		b, ok := a.Read(addr+i, 1)
		if !ok {
			return "", fmt.Errorf("%s: unreadable before its NUL", what)
		}
		if b[0] == 0 {
			return sb.String(), nil
		}
		sb.WriteByte(b[0])
	}
	return "", fmt.Errorf("%s: longer than %d bytes", what, boundString)
}

// pointers reads the n pointers of an array of them at addr.
func (a *Arena) pointers(what string, addr uintptr, n int64) ([]uintptr, error) {
	if n == 0 {
		return nil, nil
	}
	if addr == 0 || addr%8 != 0 {
		return nil, fmt.Errorf("%s: null or misaligned with %d entries", what, n)
	}
	b, ok := a.Read(addr, 8*n)
	if !ok {
		return nil, fmt.Errorf("%s: %d entries unreadable", what, n)
	}
	out := make([]uintptr, n)
	for i := range out {
		out[i] = uintptr(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out, nil
}

func (a *Arena) schema(addr uintptr, depth int) (*node, error) {
	if depth > boundDepth {
		return nil, errors.New("schema nested too deep")
	}
	w, err := a.structAt("ArrowSchema", addr)
	if err != nil {
		return nil, err
	}
	format, name, meta, nKids, kids, dict, release := w[0], w[1], w[2], int64(w[4]), w[5], w[6], w[7]
	if release == 0 {
		return nil, errors.New("ArrowSchema released")
	}
	n := &node{}
	if n.format, err = a.cstring("format", uintptr(format)); err != nil {
		return nil, err
	}
	if name != 0 {
		if _, err := a.cstring("name", uintptr(name)); err != nil {
			return nil, err
		}
	}
	if meta != 0 {
		if err := a.metadata(uintptr(meta)); err != nil {
			return nil, err
		}
	}
	if nKids < 0 || nKids > boundChildren {
		return nil, fmt.Errorf("n_children %d", nKids)
	}
	ptrs, err := a.pointers("schema children", uintptr(kids), nKids)
	if err != nil {
		return nil, err
	}
	for _, p := range ptrs {
		c, err := a.schema(p, depth+1)
		if err != nil {
			return nil, err
		}
		n.children = append(n.children, c)
	}
	if dict != 0 {
		if n.dict, err = a.schema(uintptr(dict), depth+1); err != nil {
			return nil, err
		}
	}
	if err := n.parseFormat(); err != nil {
		return nil, err
	}
	return n, nil
}

// metadata checks the specification's encoding: int32 pair count, then
// for each key and value an int32 length and its bytes.
func (a *Arena) metadata(addr uintptr) error {
	i32 := func(at uintptr) (int64, bool) {
		b, ok := a.Read(at, 4)
		if !ok {
			return 0, false
		}
		return int64(int32(binary.LittleEndian.Uint32(b))), true
	}
	n, ok := i32(addr)
	if !ok || n < 0 {
		return errors.New("metadata: unreadable or negative count")
	}
	at, total := addr+4, int64(4)
	for range 2 * n {
		l, ok := i32(at)
		if !ok || l < 0 {
			return errors.New("metadata: unreadable or negative length")
		}
		total += 4 + l
		if total > boundMetadata {
			return errors.New("metadata: too long")
		}
		if _, ok := a.Read(at+4, l); !ok {
			return errors.New("metadata: bytes unreadable")
		}
		at += 4 + uintptr(l)
	}
	return nil
}

// parseFormat sets the node's kind from its format string (the
// specification's table), and checks its children.
func (n *node) parseFormat() error {
	f := n.format
	fixed := map[string]int64{
		"c": 1, "C": 1, "s": 2, "S": 2, "e": 2, "i": 4, "I": 4, "f": 4, "l": 8, "L": 8, "g": 8,
		"tdD": 4, "tdm": 8, "tts": 4, "ttm": 4, "ttu": 8, "ttn": 8,
		"tDs": 8, "tDm": 8, "tDu": 8, "tDn": 8, "tiM": 4, "tiD": 8, "tin": 16,
	}
	wantKids := 0
	switch w, ok := fixed[f]; {
	case ok:
		n.kind, n.width = kFixed, w
	case f == "n":
		n.kind = kNull
	case f == "b":
		n.kind = kBool
	case f == "u" || f == "z":
		n.kind, n.width = kBinary, 4
	case f == "U" || f == "Z":
		n.kind, n.width = kBinary, 8
	case f == "vu" || f == "vz":
		n.kind = kView
	case f == "+l":
		n.kind, n.width, wantKids = kList, 4, 1
	case f == "+L":
		n.kind, n.width, wantKids = kList, 8, 1
	case f == "+vl":
		n.kind, n.width, wantKids = kListView, 4, 1
	case f == "+vL":
		n.kind, n.width, wantKids = kListView, 8, 1
	case f == "+m":
		n.kind, n.width, wantKids = kMap, 4, 1
	case f == "+s":
		n.kind, wantKids = kStruct, len(n.children)
	case f == "+r":
		n.kind, wantKids = kRunEnd, 2
	case len(f) >= 4 && f[:2] == "ts" && strings.ContainsRune("smun", rune(f[2])) && f[3] == ':':
		n.kind, n.width = kFixed, 8
	case strings.HasPrefix(f, "w:"):
		w, err := strconv.ParseInt(f[2:], 10, 32)
		if err != nil || w <= 0 {
			return fmt.Errorf("format %q", f)
		}
		n.kind, n.width = kFixed, w
	case strings.HasPrefix(f, "+w:"):
		w, err := strconv.ParseInt(f[3:], 10, 32)
		if err != nil || w <= 0 { // the importer's bound: sizes from 1
			return fmt.Errorf("format %q", f)
		}
		n.kind, n.width, wantKids = kFixedList, w, 1
	case strings.HasPrefix(f, "d:"):
		p := strings.Split(f[2:], ",")
		if len(p) < 2 || len(p) > 3 {
			return fmt.Errorf("format %q", f)
		}
		for _, s := range p[:2] {
			if _, err := strconv.ParseInt(s, 10, 32); err != nil {
				return fmt.Errorf("format %q", f)
			}
		}
		bits := int64(128)
		if len(p) == 3 {
			b, err := strconv.ParseInt(p[2], 10, 32)
			if err != nil || (b != 32 && b != 64 && b != 128 && b != 256) {
				return fmt.Errorf("format %q", f)
			}
			bits = b
		}
		n.kind, n.width = kFixed, bits/8
	case strings.HasPrefix(f, "+us:") || strings.HasPrefix(f, "+ud:"):
		n.kind = kSparseUnion
		if f[2] == 'd' {
			n.kind = kDenseUnion
		}
		seen := map[int64]bool{}
		if f[4:] != "" {
			for _, s := range strings.Split(f[4:], ",") {
				id, err := strconv.ParseInt(s, 10, 8)
				if err != nil || id < 0 || seen[id] {
					return fmt.Errorf("format %q: type id %q", f, s)
				}
				seen[id] = true
				n.typeIDs = append(n.typeIDs, id)
			}
		}
		wantKids = len(n.typeIDs)
	default:
		return fmt.Errorf("unknown format %q", f)
	}
	if len(n.children) != wantKids {
		return fmt.Errorf("format %q with %d children", f, len(n.children))
	}
	if n.dict != nil && !strings.Contains("cCsSiIlL", f) || n.dict != nil && len(f) != 1 {
		return fmt.Errorf("dictionary with index format %q", f)
	}
	switch n.kind {
	case kMap:
		if c := n.children[0]; c.kind != kStruct || len(c.children) != 2 {
			return errors.New("map: the child is not a struct of two")
		}
	case kRunEnd:
		if c := n.children[0].format; c != "s" && c != "i" && c != "l" {
			return fmt.Errorf("run-end: run ends of format %q", c)
		}
	}
	return nil
}

// judged is an array as judged: what its parent checks of it.
type judged struct {
	length, offset int64
	kids           []judged
}

// layout returns the buffers an array of n's kind has.
func (n *node) buffers() (lo, hi int64) {
	switch n.kind {
	case kNull, kRunEnd:
		return 0, 0
	case kBool, kFixed, kList, kMap:
		return 2, 2
	case kBinary, kListView:
		return 3, 3
	case kView:
		return 3, boundBuffers
	case kFixedList, kStruct:
		return 1, 1
	case kSparseUnion:
		return 1, 2 // 2: the legacy layout with a validity buffer first
	case kDenseUnion:
		return 2, 3
	}
	return 0, 0
}

func (a *Arena) array(addr uintptr, n *node, depth int) (judged, error) {
	var j judged
	if depth > boundDepth {
		return j, errors.New("array nested too deep")
	}
	w, err := a.structAt("ArrowArray", addr)
	if err != nil {
		return j, err
	}
	length, nulls, offset := int64(w[0]), int64(w[1]), int64(w[2])
	nBufs, nKids, bufsAt, kidsAt, dictAt, release := int64(w[3]), int64(w[4]), w[5], w[6], w[7], w[8]
	j.length, j.offset = length, offset
	if release == 0 {
		return j, errors.New("ArrowArray released")
	}
	if length < 0 || offset < 0 || offset+length < 0 || offset+length > boundEnd {
		return j, fmt.Errorf("length %d, offset %d", length, offset)
	}
	end := offset + length
	if nulls < -1 || nulls > length {
		return j, fmt.Errorf("null_count %d of %d", nulls, length)
	}
	if lo, hi := n.buffers(); nBufs < lo || nBufs > hi {
		return j, fmt.Errorf("%q: n_buffers %d", n.format, nBufs)
	}
	if nKids != int64(len(n.children)) {
		return j, fmt.Errorf("n_children %d, the schema %d", nKids, len(n.children))
	}
	bufs, err := a.pointers("buffers", uintptr(bufsAt), nBufs)
	if err != nil {
		return j, err
	}
	kidPtrs, err := a.pointers("children", uintptr(kidsAt), nKids)
	if err != nil {
		return j, err
	}
	if (n.dict == nil) != (dictAt == 0) {
		return j, errors.New("dictionary presence differs from the schema's")
	}
	dictLen := int64(-1)
	if n.dict != nil {
		d, err := a.array(uintptr(dictAt), n.dict, depth+1)
		if err != nil {
			return j, err
		}
		dictLen = d.length
	}
	for i, p := range kidPtrs {
		c, err := a.array(p, n.children[i], depth+1)
		if err != nil {
			return j, err
		}
		j.kids = append(j.kids, c)
	}
	// need reads count bytes of buffer i.
	need := func(i int, count int64) ([]byte, error) {
		if count == 0 {
			return nil, nil
		}
		if bufs[i] == 0 {
			return nil, fmt.Errorf("%q: buffer %d NULL, %d bytes needed", n.format, i, count)
		}
		b, ok := a.Read(bufs[i], count)
		if !ok {
			return nil, fmt.Errorf("%q: buffer %d: %d bytes unreadable", n.format, i, count)
		}
		return b, nil
	}
	hasValidity := n.kind != kNull && n.kind != kRunEnd && n.kind != kSparseUnion && n.kind != kDenseUnion
	if hasValidity {
		if bufs[0] == 0 && nulls != 0 && length > 0 {
			return j, fmt.Errorf("%q: no validity buffer, null_count %d", n.format, nulls)
		}
		if bufs[0] != 0 {
			if _, err := need(0, (end+7)/8); err != nil {
				return j, err
			}
		}
	} else if n.kind != kNull && nulls != 0 {
		return j, fmt.Errorf("%q: null_count %d of a type without validity", n.format, nulls)
	}
	kidLen := func(i int) int64 { return j.kids[i].length }
	switch n.kind {
	case kBool:
		_, err = need(1, (end+7)/8)
	case kFixed:
		if end > (1<<62)/n.width {
			return j, errors.New("values overflow")
		}
		_, err = need(1, end*n.width)
	case kBinary, kList, kMap:
		var last int64
		if last, err = a.offsets(bufs[1], offset, length, n.width); err == nil {
			if n.kind == kBinary {
				_, err = need(2, last)
			} else if kidLen(0) < last {
				err = fmt.Errorf("%q: child has %d, offsets reach %d", n.format, kidLen(0), last)
			}
		}
	case kListView:
		err = a.listViews(need, offset, end, n.width, kidLen(0))
	case kView:
		err = a.views(need, bufs, offset, end)
	case kFixedList:
		if n.width > 0 && end > boundEnd/n.width {
			return j, errors.New("fixed-size list overflows")
		}
		if kidLen(0) < end*n.width {
			err = fmt.Errorf("fixed-size list child %d short of %d", kidLen(0), end*n.width)
		}
	case kStruct:
		for i := range j.kids {
			if kidLen(i) < end {
				return j, fmt.Errorf("struct child %d: %d short of %d", i, kidLen(i), end)
			}
		}
	case kSparseUnion, kDenseUnion:
		err = a.union(n, need, bufs, offset, end, kidLen)
	case kRunEnd:
		err = a.runEnds(kidPtrs[0], n.children[0], j.kids, end, length)
	}
	if err == nil && dictLen >= 0 {
		err = indices(n, need, bufs, nulls, offset, end, dictLen)
	}
	return j, err
}

// indices checks that every valid slot of a dictionary-encoded array holds
// an index of one of the dictionary's entries (a null slot's is never
// read).
func indices(n *node, need func(int, int64) ([]byte, error), bufs []uintptr, nulls, offset, end, dictLen int64) error {
	vals, err := need(1, end*n.width)
	if err != nil {
		return err
	}
	var bits []byte
	if bufs[0] != 0 && nulls != 0 {
		if bits, err = need(0, (end+7)/8); err != nil {
			return err
		}
	}
	for i := offset; i < end; i++ {
		if bits != nil && bits[i/8]>>(i%8)&1 == 0 {
			continue
		}
		v := word(vals, i, n.width)
		if strings.Contains("CSIL", n.format) && n.width < 8 {
			v &= 1<<(8*n.width) - 1
		}
		if v < 0 || v >= dictLen {
			return fmt.Errorf("slot %d: dictionary index %d of %d entries", i, v, dictLen)
		}
	}
	return nil
}

// offsets checks slots offset…offset+length of an offsets buffer and
// returns the last.
func (a *Arena) offsets(at uintptr, offset, length, width int64) (int64, error) {
	if length == 0 && at == 0 {
		return 0, nil
	}
	if at == 0 {
		return 0, errors.New("offsets NULL")
	}
	b, ok := a.Read(at, (offset+length+1)*width)
	if !ok {
		return 0, errors.New("offsets unreadable")
	}
	prev := int64(-1)
	for i := offset; i <= offset+length; i++ {
		v := word(b, i, width)
		if v < 0 || v < prev {
			return 0, fmt.Errorf("offset %d of slot %d", v, i)
		}
		prev = v
	}
	return prev, nil
}

func word(b []byte, i, width int64) int64 {
	switch width {
	case 1:
		return int64(int8(b[i]))
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(b[2*i:])))
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return int64(binary.LittleEndian.Uint64(b[8*i:]))
}

func (a *Arena) listViews(need func(int, int64) ([]byte, error), offset, end, width, child int64) error {
	offs, err := need(1, end*width)
	if err != nil {
		return err
	}
	sizes, err := need(2, end*width)
	if err != nil {
		return err
	}
	for i := offset; i < end; i++ {
		o, s := word(offs, i, width), word(sizes, i, width)
		if o < 0 || s < 0 || o > child || s > child-o {
			return fmt.Errorf("list view slot %d: offset %d size %d, child %d", i, o, s, child)
		}
	}
	return nil
}

func (a *Arena) views(need func(int, int64) ([]byte, error), bufs []uintptr, offset, end int64) error {
	views, err := need(1, 16*end)
	if err != nil {
		return err
	}
	nData := int64(len(bufs)) - 3
	raw, err := need(len(bufs)-1, 8*nData)
	if err != nil {
		return err
	}
	sizes := make([]int64, nData)
	for i := range sizes {
		sizes[i] = word(raw, int64(i), 8)
		if sizes[i] < 0 {
			return fmt.Errorf("view data buffer %d size %d", i, sizes[i])
		}
		if _, err := need(2+i, sizes[i]); err != nil {
			return err
		}
	}
	for i := offset; i < end; i++ {
		v := views[16*i:]
		l := int64(int32(binary.LittleEndian.Uint32(v)))
		if l < 0 {
			return fmt.Errorf("view %d length %d", i, l)
		}
		if l <= 12 {
			continue
		}
		buf, off := int64(int32(binary.LittleEndian.Uint32(v[8:]))), int64(int32(binary.LittleEndian.Uint32(v[12:])))
		if buf < 0 || buf >= nData || off < 0 || off+l > sizes[buf] {
			return fmt.Errorf("view %d: buffer %d offset %d length %d", i, buf, off, l)
		}
	}
	return nil
}

func (a *Arena) union(n *node, need func(int, int64) ([]byte, error), bufs []uintptr, offset, end int64, kidLen func(int) int64) error {
	ids := len(bufs) - 1 // the type ids: the last buffer of a sparse union
	if n.kind == kDenseUnion {
		ids = len(bufs) - 2
	}
	types, err := need(ids, end)
	if err != nil {
		return err
	}
	child := map[int64]int{}
	for i, id := range n.typeIDs {
		child[id] = i
	}
	var offs []byte
	if n.kind == kDenseUnion {
		if offs, err = need(ids+1, 4*end); err != nil {
			return err
		}
	}
	for i := offset; i < end; i++ {
		c, ok := child[int64(int8(types[i]))]
		if !ok {
			return fmt.Errorf("union slot %d: type id %d not declared", i, int8(types[i]))
		}
		if n.kind == kSparseUnion {
			continue
		}
		if o := word(offs, i, 4); o < 0 || o >= kidLen(c) {
			return fmt.Errorf("dense union slot %d: offset %d, child %d has %d", i, o, c, kidLen(c))
		}
	}
	if n.kind == kSparseUnion {
		for i := range n.typeIDs {
			if kidLen(i) < end {
				return fmt.Errorf("sparse union child %d: %d short of %d", i, kidLen(i), end)
			}
		}
	}
	return nil
}

// runEnds checks a run-end encoded array: run ends positive and strictly
// increasing, the last at least offset+length, the values as long as the
// run ends.
func (a *Arena) runEnds(at uintptr, re *node, kids []judged, end, length int64) error {
	runs, values := kids[0], kids[1]
	if values.length < runs.length {
		return fmt.Errorf("run-end: %d values for %d runs", values.length, runs.length)
	}
	if length == 0 {
		return nil
	}
	if runs.length == 0 {
		return errors.New("run-end: no runs")
	}
	w, _ := a.structAt("run ends", at)
	bufs, _ := a.pointers("run ends buffers", uintptr(w[5]), int64(w[3]))
	if int64(w[1]) != 0 {
		return errors.New("run-end: nulls among the run ends")
	}
	b, ok := a.Read(bufs[1], (runs.offset+runs.length)*re.width)
	if !ok {
		return errors.New("run ends unreadable")
	}
	prev := int64(0)
	for i := runs.offset; i < runs.offset+runs.length; i++ {
		v := word(b, i, re.width)
		if v <= prev {
			return fmt.Errorf("run end %d of run %d", v, i)
		}
		prev = v
	}
	if prev < end {
		return fmt.Errorf("run-end: last run ends at %d, before %d", prev, end)
	}
	return nil
}
