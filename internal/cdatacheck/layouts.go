package cdatacheck

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// The checks of the layouts whose buffers hold positions into other
// buffers or children (views, list views, unions, run ends): an importer
// trusts those positions, so a forged one is a read out of bounds.
// validateArray calls them once the buffers' pointers and the children are
// validated.

// checkSchemaShape checks what a format says of its children and
// dictionary beyond their count: a dictionary's indices are integers, a
// map's child is a struct of key and value, run ends are 16, 32 or 64-bit
// integers.
func checkSchemaShape(n *schemaNode) error {
	if n.dictionary != nil && (len(n.format) != 1 || !strings.Contains("cCsSiIlL", n.format)) {
		return fmt.Errorf("dictionary indices of format %q, not an integer", n.format)
	}
	switch n.layout.kind {
	case kindList:
		if n.format == "+m" && (n.children[0].format != "+s" || len(n.children[0].children) != 2) {
			return fmt.Errorf("a map's child has format %q and %d children, not a struct of key and value", n.children[0].format, len(n.children[0].children))
		}
	case kindRunEnd:
		if f := n.children[0].format; f != "s" && f != "i" && f != "l" {
			return fmt.Errorf("run ends of format %q, not int16, int32 or int64", f)
		}
	}
	return nil
}

// unionTypeIDs parses the type codes of a union format ("+us:0,1,2"):
// distinct integers in [0, 127], one per child.
func unionTypeIDs(f string) ([]int8, error) {
	var ids []int8
	if f[4:] == "" {
		return nil, nil
	}
	seen := map[int64]bool{}
	for _, s := range strings.Split(f[4:], ",") {
		id, err := strconv.ParseInt(s, 10, 8)
		if err != nil || id < 0 || seen[id] {
			return nil, fmt.Errorf("bad union type id %q in %q", s, f)
		}
		seen[id] = true
		ids = append(ids, int8(id))
	}
	return ids, nil
}

// readSlots reads slots offset…end-1 of a buffer of width-byte integers,
// after checking the buffer holds end of them.
func readSlots(what string, addr uintptr, offset, end, width int64) ([]int64, error) {
	if err := probeRange(what, addr, end*width); err != nil {
		return nil, err
	}
	n := end - offset
	if n <= 0 {
		return nil, nil
	}
	raw := make([]byte, n*width)
	if err := readMem(addr+uintptr(offset*width), raw); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out := make([]int64, n)
	for i := range out {
		switch width {
		case 1:
			out[i] = int64(int8(raw[i]))
		case 2:
			out[i] = int64(int16(binary.LittleEndian.Uint16(raw[2*i:])))
		case 4:
			out[i] = int64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
		default:
			out[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	}
	return out, nil
}

// checkViews checks a binary or string view array: views of 16 bytes per
// slot, then the variadic data buffers, then a buffer of their sizes
// (int64 each); a view of more than 12 bytes must lie within the data
// buffer it names.
func checkViews(where string, bufs []uintptr, offset, end int64) error {
	nData := int64(len(bufs)) - 3
	sizes, err := readSlots(where+" data buffer sizes", bufs[len(bufs)-1], 0, nData, 8)
	if err != nil {
		return err
	}
	for i, sz := range sizes {
		if sz < 0 {
			return fmt.Errorf("%s: data buffer %d has size %d", where, i, sz)
		}
		if err := probeRange(fmt.Sprintf("%s data buffer %d", where, i), bufs[2+i], sz); err != nil {
			return err
		}
	}
	if err := probeRange(where+" views", bufs[1], end*16); err != nil {
		return err
	}
	if end == offset {
		return nil
	}
	raw := make([]byte, (end-offset)*16)
	if err := readMem(bufs[1]+uintptr(offset*16), raw); err != nil {
		return fmt.Errorf("%s views: %w", where, err)
	}
	for i := range end - offset {
		v := raw[16*i:]
		l := int64(int32(binary.LittleEndian.Uint32(v)))
		if l < 0 {
			return fmt.Errorf("%s: view of slot %d has length %d", where, offset+i, l)
		}
		if l <= 12 {
			continue // inline
		}
		buf := int64(int32(binary.LittleEndian.Uint32(v[8:])))
		off := int64(int32(binary.LittleEndian.Uint32(v[12:])))
		if buf < 0 || buf >= nData || off < 0 || off+l > sizes[buf] {
			return fmt.Errorf("%s: view of slot %d (buffer %d, offset %d, length %d) is outside the data buffers", where, offset+i, buf, off, l)
		}
	}
	return nil
}

// checkListViews checks a list view array: per slot an offset and a size
// (width bytes each) within the child's length.
func checkListViews(where string, bufs []uintptr, offset, end, width, child int64) error {
	offs, err := readSlots(where+" offsets", bufs[1], offset, end, width)
	if err != nil {
		return err
	}
	sizes, err := readSlots(where+" sizes", bufs[2], offset, end, width)
	if err != nil {
		return err
	}
	for i, o := range offs {
		if s := sizes[i]; o < 0 || s < 0 || o > child || s > child-o {
			return fmt.Errorf("%s: slot %d (offset %d, size %d) is outside the child's %d", where, offset+int64(i), o, s, child)
		}
	}
	return nil
}

// checkUnion checks a union array: each slot's type id is one the format
// declares, and a dense union's offset lies within the child it selects.
func checkUnion(where string, l layout, bufs []uintptr, offset, end int64, kidLens []int64) error {
	at := len(bufs) - 1 // the type ids: last of a sparse union's buffers
	if l.kind == kindDenseUnion {
		at = len(bufs) - 2
	}
	types, err := readSlots(where+" type ids", bufs[at], offset, end, 1)
	if err != nil {
		return err
	}
	child := map[int64]int{}
	for i, id := range l.typeIDs {
		child[int64(id)] = i
	}
	var offs []int64
	if l.kind == kindDenseUnion {
		if offs, err = readSlots(where+" offsets", bufs[at+1], offset, end, 4); err != nil {
			return err
		}
	}
	for i, id := range types {
		c, ok := child[id]
		if !ok {
			return fmt.Errorf("%s: slot %d has type id %d, which the format does not declare", where, offset+int64(i), id)
		}
		if offs != nil && (offs[i] < 0 || offs[i] >= kidLens[c]) {
			return fmt.Errorf("%s: slot %d has offset %d, child %d has length %d", where, offset+int64(i), offs[i], c, kidLens[c])
		}
	}
	return nil
}

// checkIndices checks a dictionary-encoded array's indices (format is
// their integer type): every valid slot's index lies within the
// dictionary's dictLen entries, as the columnar format requires; a null
// slot's index is not read by consumers and may be anything. The values
// buffer was probed by the fixed-width check.
func checkIndices(where, format string, bufs []uintptr, offset, end, nullCount, dictLen int64) error {
	width := map[string]int64{"c": 1, "C": 1, "s": 2, "S": 2, "i": 4, "I": 4, "l": 8, "L": 8}[format]
	idx, err := readSlots(where+" indices", bufs[1], offset, end, width)
	if err != nil {
		return err
	}
	var valid []byte // the validity bits of slots offset…end-1, when there are nulls
	if bufs[0] != 0 && nullCount != 0 && end > offset {
		first, last := offset/8, (end-1)/8
		valid = make([]byte, last-first+1)
		if err := readMem(bufs[0]+uintptr(first), valid); err != nil {
			return fmt.Errorf("%s validity buffer: %w", where, err)
		}
	}
	unsigned := format == "C" || format == "S" || format == "I" || format == "L"
	for i, v := range idx {
		slot := offset + int64(i)
		if valid != nil && valid[slot/8-offset/8]&(1<<(slot%8)) == 0 {
			continue // null
		}
		if unsigned && width < 8 {
			v &= 1<<(8*width) - 1 // read sign-extended: the unsigned value
		}
		if v < 0 || v >= dictLen {
			return fmt.Errorf("%s: slot %d has dictionary index %d, the dictionary has %d entries", where, slot, v, dictLen)
		}
	}
	return nil
}

// checkRunEnds checks a run-end encoded array of length rows ending at
// end: its run ends (the first child, at runsAddr, of integers width bytes
// wide) have no nulls, are positive and strictly increasing, and the last
// reaches end; the values (the second child) are at least as many as the
// runs.
func checkRunEnds(where string, runsAddr uintptr, width int64, kidLens []int64, length, end int64) error {
	if kidLens[1] < kidLens[0] {
		return fmt.Errorf("%s: %d values for %d runs", where, kidLens[1], kidLens[0])
	}
	if length == 0 {
		return nil
	}
	if kidLens[0] == 0 {
		return fmt.Errorf("%s: %d rows and no runs", where, length)
	}
	r, err := readStruct[rawArray](where+" run ends", runsAddr)
	if err != nil {
		return err
	}
	if r.nullCount != 0 {
		return fmt.Errorf("%s: run ends with null_count %d", where, r.nullCount)
	}
	bufs, err := readPointers(where+" run ends buffers", r.buffers, r.nBuffers)
	if err != nil {
		return err
	}
	ends, err := readSlots(where+" run ends", bufs[1], r.offset, r.offset+r.length, width)
	if err != nil {
		return err
	}
	prev := int64(0)
	for i, e := range ends {
		if e <= prev {
			return fmt.Errorf("%s: run %d ends at %d, not after %d", where, i, e, prev)
		}
		prev = e
	}
	if prev < end {
		return fmt.Errorf("%s: the last run ends at %d, before row %d", where, prev, end)
	}
	return nil
}
