package cdatacheck

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Bounds on what a struct may claim, far above any real batch, so that a
// forged count cannot make validation itself run for ever.
const (
	maxValidateDepth    = 64      // nesting of children and dictionaries
	maxValidateChildren = 1 << 16 // per struct
	maxValidateBuffers  = 1 << 16 // per array (binary views are variadic)
	maxFormatLen        = 1 << 12 // bytes of a format or name string
	maxMetadataBytes    = 1 << 24 // bytes of a schema's metadata
)

// rawSchema is struct ArrowSchema (ffi/abi.h), read into Go memory.
type rawSchema struct {
	format, name, metadata uintptr
	flags, nChildren       int64
	children, dictionary   uintptr
	release, privateData   uintptr
}

// rawArray is struct ArrowArray (ffi/abi.h), read into Go memory.
type rawArray struct {
	length, nullCount, offset, nBuffers, nChildren int64
	buffers, children, dictionary                  uintptr
	release, privateData                           uintptr
}

// schemaNode is a validated ArrowSchema: what array validation needs.
type schemaNode struct {
	format     string
	layout     layout
	children   []*schemaNode
	dictionary *schemaNode
}

// validateSchema reads and checks the ArrowSchema at addr and everything it
// points to.
func validateSchema(path string, addr uintptr, depth int) (*schemaNode, error) {
	if depth > maxValidateDepth {
		return nil, fmt.Errorf("%s: nested deeper than %d", path, maxValidateDepth)
	}
	s, err := readStruct[rawSchema]("ArrowSchema "+path, addr)
	if err != nil {
		return nil, err
	}
	if s.release == 0 {
		return nil, fmt.Errorf("ArrowSchema %s at 0x%x: released (release callback is NULL)", path, addr)
	}
	if s.format == 0 {
		return nil, fmt.Errorf("ArrowSchema %s at 0x%x: NULL format", path, addr)
	}
	node := &schemaNode{}
	if node.format, err = readCString("ArrowSchema "+path+" format", s.format, maxFormatLen); err != nil {
		return nil, err
	}
	if s.name != 0 {
		if _, err := readCString("ArrowSchema "+path+" name", s.name, maxFormatLen); err != nil {
			return nil, err
		}
	}
	if s.metadata != 0 {
		if err := validateMetadata("ArrowSchema "+path+" metadata", s.metadata); err != nil {
			return nil, err
		}
	}
	if s.nChildren < 0 || s.nChildren > maxValidateChildren {
		return nil, fmt.Errorf("ArrowSchema %s: n_children %d outside [0, %d]", path, s.nChildren, maxValidateChildren)
	}
	kids, err := readPointers("ArrowSchema "+path+" children", s.children, s.nChildren)
	if err != nil {
		return nil, err
	}
	for i, k := range kids {
		c, err := validateSchema(fmt.Sprintf("%s.children[%d]", path, i), k, depth+1)
		if err != nil {
			return nil, err
		}
		node.children = append(node.children, c)
	}
	if s.dictionary != 0 {
		if node.dictionary, err = validateSchema(path+".dictionary", s.dictionary, depth+1); err != nil {
			return nil, err
		}
	}
	l, err := layoutOf(node.format)
	if err != nil {
		return nil, fmt.Errorf("ArrowSchema %s: %w", path, err)
	}
	node.layout = l
	if l.children >= 0 && len(node.children) != l.children {
		return nil, fmt.Errorf("ArrowSchema %s: format %q has %d children, n_children is %d", path, node.format, l.children, len(node.children))
	}
	if err := checkSchemaShape(node); err != nil {
		return nil, fmt.Errorf("ArrowSchema %s: %w", path, err)
	}
	return node, nil
}

// validateMetadata checks the metadata encoding of the C Data Interface: an
// int32 count, then for each pair an int32 length and bytes, twice.
func validateMetadata(what string, addr uintptr) error {
	readI32 := func(at uintptr) (int32, error) {
		var v int32
		err := readMem(at, unsafe.Slice((*byte)(unsafe.Pointer(&v)), 4))
		return v, err
	}
	n, err := readI32(addr)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n < 0 {
		return fmt.Errorf("%s: negative pair count %d", what, n)
	}
	p, total := addr+4, int64(4)
	// 2*n in int64: in int32 a count of 1<<30 or more overflows to a
	// negative bound, and the pairs would go unread.
	for i := int64(0); i < 2*int64(n); i++ {
		l, err := readI32(p)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if l < 0 {
			return fmt.Errorf("%s: negative length %d", what, l)
		}
		total += 4 + int64(l)
		if total > maxMetadataBytes {
			return fmt.Errorf("%s: more than %d bytes", what, maxMetadataBytes)
		}
		if err := probeRange(what, p+4, int64(l)); err != nil {
			return err
		}
		p += 4 + uintptr(l)
	}
	return nil
}

// layoutKind is how validation checks an array's buffers.
type layoutKind int

const (
	kindNull        layoutKind = iota // no buffers
	kindBits                          // validity + bit-packed values
	kindFixed                         // validity + width bytes per slot
	kindBinary                        // validity + offsets (width) + data
	kindList                          // validity + offsets (width) + one child
	kindFixedList                     // validity + one child of width slots per slot
	kindStruct                        // validity + children of the same length
	kindView                          // validity + 16-byte views + data buffers + their sizes
	kindListView                      // validity + offsets (width) + sizes (width) + one child
	kindSparseUnion                   // type ids + children of the same length
	kindDenseUnion                    // type ids + int32 offsets into the children
	kindRunEnd                        // no buffers; run ends + values children
)

// layout is what the format of a schema implies for an array.
type layout struct {
	kind       layoutKind
	width      int64 // bytes per value, offset width, or list size
	minBuffers int64
	maxBuffers int64  // -1: no upper bound (variadic)
	children   int    // -1: as many as the schema has
	typeIDs    []int8 // a union's type codes, child by child
}

// layoutOf maps an Arrow C Data format string to the buffers and children
// its arrays have (https://arrow.apache.org/docs/format/CDataInterface.html).
func layoutOf(f string) (layout, error) {
	fixed := func(w int64) layout { return layout{kind: kindFixed, width: w, minBuffers: 2, maxBuffers: 2} }
	switch f {
	case "n":
		return layout{kind: kindNull}, nil
	case "b":
		return layout{kind: kindBits, minBuffers: 2, maxBuffers: 2}, nil
	case "c", "C":
		return fixed(1), nil
	case "s", "S", "e":
		return fixed(2), nil
	case "i", "I", "f", "tdD", "tts", "ttm", "tiM":
		return fixed(4), nil
	case "l", "L", "g", "tdm", "ttu", "ttn", "tDs", "tDm", "tDu", "tDn", "tiD":
		return fixed(8), nil
	case "tin":
		return fixed(16), nil
	case "u", "z":
		return layout{kind: kindBinary, width: 4, minBuffers: 3, maxBuffers: 3}, nil
	case "U", "Z":
		return layout{kind: kindBinary, width: 8, minBuffers: 3, maxBuffers: 3}, nil
	case "vu", "vz":
		return layout{kind: kindView, minBuffers: 3, maxBuffers: -1}, nil
	case "+l", "+m":
		return layout{kind: kindList, width: 4, minBuffers: 2, maxBuffers: 2, children: 1}, nil
	case "+L":
		return layout{kind: kindList, width: 8, minBuffers: 2, maxBuffers: 2, children: 1}, nil
	case "+vl":
		return layout{kind: kindListView, width: 4, minBuffers: 3, maxBuffers: 3, children: 1}, nil
	case "+vL":
		return layout{kind: kindListView, width: 8, minBuffers: 3, maxBuffers: 3, children: 1}, nil
	case "+s":
		return layout{kind: kindStruct, minBuffers: 1, maxBuffers: 1, children: -1}, nil
	case "+r":
		return layout{kind: kindRunEnd, children: 2}, nil
	}
	switch {
	case strings.HasPrefix(f, "ts") && len(f) >= 4 && f[3] == ':' && strings.ContainsRune("smun", rune(f[2])):
		return fixed(8), nil
	case strings.HasPrefix(f, "w:"):
		n, err := strconv.ParseInt(f[2:], 10, 32)
		if err != nil || n <= 0 {
			return layout{}, fmt.Errorf("bad fixed-size binary format %q", f)
		}
		return fixed(n), nil
	case strings.HasPrefix(f, "d:"):
		parts := strings.Split(f[2:], ",")
		if len(parts) < 2 || len(parts) > 3 {
			return layout{}, fmt.Errorf("bad decimal format %q", f)
		}
		for _, p := range parts[:2] {
			if _, err := strconv.ParseInt(p, 10, 32); err != nil {
				return layout{}, fmt.Errorf("bad decimal precision or scale in %q", f)
			}
		}
		bits := int64(128)
		if len(parts) == 3 {
			b, err := strconv.ParseInt(parts[2], 10, 32)
			if err != nil || (b != 32 && b != 64 && b != 128 && b != 256) {
				return layout{}, fmt.Errorf("bad decimal bit width in %q", f)
			}
			bits = b
		}
		return fixed(bits / 8), nil
	case strings.HasPrefix(f, "+w:"):
		n, err := strconv.ParseInt(f[3:], 10, 32)
		if err != nil || n <= 0 { // arrow-go takes sizes from 1, and its refusal would release the schema
			return layout{}, fmt.Errorf("bad fixed-size list format %q", f)
		}
		return layout{kind: kindFixedList, width: n, minBuffers: 1, maxBuffers: 1, children: 1}, nil
	case strings.HasPrefix(f, "+us:"), strings.HasPrefix(f, "+ud:"):
		// One more buffer is the legacy layout with a validity buffer
		// first, which older Arrow C++ exports and arrow-go imports.
		ids, err := unionTypeIDs(f)
		if err != nil {
			return layout{}, err
		}
		if f[2] == 's' {
			return layout{kind: kindSparseUnion, minBuffers: 1, maxBuffers: 2, children: len(ids), typeIDs: ids}, nil
		}
		return layout{kind: kindDenseUnion, minBuffers: 2, maxBuffers: 3, children: len(ids), typeIDs: ids}, nil
	}
	return layout{}, fmt.Errorf("unknown or unsupported format %q", f)
}

// validateArray reads and checks the ArrowArray at addr against its
// validated schema sc, and everything the array points to. It returns the
// array's length.
func validateArray(path string, addr uintptr, sc *schemaNode, depth int) (int64, error) {
	if depth > maxValidateDepth {
		return 0, fmt.Errorf("ArrowArray %s: nested deeper than %d", path, maxValidateDepth)
	}
	a, err := readStruct[rawArray]("ArrowArray "+path, addr)
	if err != nil {
		return 0, err
	}
	where := fmt.Sprintf("ArrowArray %s (format %q)", path, sc.format)
	if a.release == 0 {
		return 0, fmt.Errorf("%s at 0x%x: released (release callback is NULL)", where, addr)
	}
	if a.length < 0 || a.offset < 0 {
		return 0, fmt.Errorf("%s: negative length %d or offset %d", where, a.length, a.offset)
	}
	end := a.offset + a.length
	if end < 0 || end > 1<<53 {
		return 0, fmt.Errorf("%s: offset %d + length %d is out of range", where, a.offset, a.length)
	}
	if a.nullCount < -1 || a.nullCount > a.length {
		return 0, fmt.Errorf("%s: null_count %d outside [-1, %d]", where, a.nullCount, a.length)
	}
	l := sc.layout
	if a.nBuffers < l.minBuffers || (l.maxBuffers >= 0 && a.nBuffers > l.maxBuffers) || a.nBuffers > maxValidateBuffers {
		return 0, fmt.Errorf("%s: n_buffers %d, the format needs %s", where, a.nBuffers, bufferRange(l))
	}
	if a.nChildren != int64(len(sc.children)) {
		return 0, fmt.Errorf("%s: n_children %d, the schema has %d", where, a.nChildren, len(sc.children))
	}
	bufs, err := readPointers(where+" buffers", a.buffers, a.nBuffers)
	if err != nil {
		return 0, err
	}
	kids, err := readPointers(where+" children", a.children, a.nChildren)
	if err != nil {
		return 0, err
	}
	dictLen := int64(-1) // the dictionary's length, when the array is dictionary-encoded
	switch {
	case sc.dictionary != nil && a.dictionary == 0:
		return 0, fmt.Errorf("%s: the schema is dictionary-encoded, the array has no dictionary", where)
	case sc.dictionary == nil && a.dictionary != 0:
		return 0, fmt.Errorf("%s: a dictionary the schema does not declare", where)
	case sc.dictionary != nil:
		if dictLen, err = validateArray(path+".dictionary", a.dictionary, sc.dictionary, depth+1); err != nil {
			return 0, err
		}
	}
	kidLens := make([]int64, len(kids))
	for i, k := range kids {
		if kidLens[i], err = validateArray(fmt.Sprintf("%s.children[%d]", path, i), k, sc.children[i], depth+1); err != nil {
			return 0, err
		}
	}
	switch l.kind {
	case kindNull:
	case kindSparseUnion, kindDenseUnion, kindRunEnd:
		// No validity buffer: a null is a null of the child it selects.
		if a.nullCount != 0 {
			return 0, fmt.Errorf("%s: null_count %d, the type has no validity buffer", where, a.nullCount)
		}
	default:
		// The specification: the validity buffer may be NULL only when
		// null_count is 0 (-1, not yet computed, needs one too).
		if bufs[0] == 0 && a.nullCount != 0 && a.length > 0 {
			return 0, fmt.Errorf("%s: null_count %d without a validity buffer", where, a.nullCount)
		}
		if bufs[0] != 0 {
			if err := probeRange(where+" validity buffer", bufs[0], (end+7)/8); err != nil {
				return 0, err
			}
		}
	}
	need := int64(0) // how long every child must be
	switch l.kind {
	case kindBits:
		err = probeRange(where+" values", bufs[1], (end+7)/8)
	case kindFixed:
		if end > (1<<62)/l.width {
			return 0, fmt.Errorf("%s: length %d overflows", where, end)
		}
		err = probeRange(where+" values", bufs[1], end*l.width)
	case kindBinary, kindList:
		var last int64
		if last, err = checkOffsets(where, bufs[1], a.offset, a.length, l.width); err != nil {
			return 0, err
		}
		if l.kind == kindBinary {
			err = probeRange(where+" data", bufs[2], last)
		}
		need = last
	case kindFixedList:
		if l.width > 0 && end > (1<<53)/l.width {
			return 0, fmt.Errorf("%s: length %d overflows", where, end)
		}
		need = end * l.width
	case kindStruct:
		need = end
	case kindView:
		err = checkViews(where, bufs, a.offset, end)
	case kindListView:
		err = checkListViews(where, bufs, a.offset, end, l.width, kidLens[0])
	case kindSparseUnion, kindDenseUnion:
		err = checkUnion(where, l, bufs, a.offset, end, kidLens)
		if l.kind == kindSparseUnion {
			need = end
		}
	case kindRunEnd:
		err = checkRunEnds(where, kids[0], sc.children[0].layout.width, kidLens, a.length, end)
	}
	if err == nil && dictLen >= 0 {
		err = checkIndices(where, sc.format, bufs, a.offset, end, a.nullCount, dictLen)
	}
	if err != nil {
		return 0, err
	}
	for i, n := range kidLens {
		if n < need {
			return 0, fmt.Errorf("%s: child %d has length %d, %d needed", where, i, n, need)
		}
	}
	return a.length, nil
}

func bufferRange(l layout) string {
	switch {
	case l.maxBuffers < 0:
		return fmt.Sprintf("at least %d", l.minBuffers)
	case l.minBuffers == l.maxBuffers:
		return strconv.FormatInt(l.minBuffers, 10)
	}
	return fmt.Sprintf("%d or %d", l.minBuffers, l.maxBuffers)
}

// checkOffsets reads the offsets of slots offset … offset+length (width 4 or
// 8 bytes each) and checks that they are non-negative and non-decreasing; it
// returns the last one, the bytes or child slots the array addresses.
func checkOffsets(where string, addr uintptr, offset, length, width int64) (int64, error) {
	if length == 0 && addr == 0 {
		return 0, nil // an empty array may omit its offsets
	}
	n := length + 1
	if err := probeRange(where+" offsets", addr, (offset+n)*width); err != nil {
		return 0, err
	}
	raw := make([]byte, n*width)
	if err := readMem(addr+uintptr(offset*width), raw); err != nil {
		return 0, fmt.Errorf("%s offsets: %w", where, err)
	}
	prev := int64(-1)
	for i := range n {
		var v int64
		if width == 4 {
			v = int64(*(*int32)(unsafe.Pointer(&raw[i*4])))
		} else {
			v = *(*int64)(unsafe.Pointer(&raw[i*8]))
		}
		if v < 0 || v < prev {
			return 0, fmt.Errorf("%s: offset %d of slot %d is negative or decreasing", where, v, offset+i)
		}
		prev = v
	}
	return prev, nil
}

// ValidateImport checks the batch importBatch0 is given: a struct schema and
// an array whose columns all have the batch's row count.
func ValidateImport(arr, sc uintptr) error {
	node, err := validateSchema("schema", sc, 0)
	if err != nil {
		return err
	}
	if node.format != "+s" {
		return fmt.Errorf("ArrowSchema: a record batch has format \"+s\", not %q", node.format)
	}
	if _, err := validateArray("batch", arr, node, 0); err != nil {
		return err
	}
	// Every column must have the batch's row count (arrow-go builds the
	// batch's columns by slicing them to it; a shorter one is caught above).
	a, _ := readStruct[rawArray]("ArrowArray batch", arr)
	kids, _ := readPointers("ArrowArray batch children", a.children, a.nChildren)
	for i, k := range kids {
		c, err := readStruct[rawArray]("ArrowArray column", k)
		if err != nil {
			return err
		}
		if c.length != a.offset+a.length {
			return fmt.Errorf("ArrowArray batch: column %d has %d rows, the batch %d (offset %d)", i, c.length, a.length, a.offset)
		}
	}
	return nil
}

// ValidateExportTarget checks an ArrowArray or ArrowSchema address
// exportBatch0 will write: aligned, readable and writable, and not a live
// struct (its release callback is NULL, as in a zeroed one).
func ValidateExportTarget(what string, addr uintptr, size int) error {
	if addr%8 != 0 {
		return fmt.Errorf("%s at 0x%x: not 8-byte aligned", what, addr)
	}
	buf := make([]byte, size)
	if err := readMem(addr, buf); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	// release is the second-to-last pointer of both structs.
	if rel := *(*uintptr)(unsafe.Pointer(&buf[size-16])); rel != 0 {
		return fmt.Errorf("%s at 0x%x: a live struct (release callback set); export needs a zeroed one", what, addr)
	}
	// Write the same bytes back: EFAULT, not a fault, if the page is read-only.
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(size)
	n, err := unix.ProcessVMWritev(os.Getpid(), local, []unix.RemoteIovec{{Base: addr, Len: size}}, 0)
	if err != nil && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) || err == nil && n != size {
		return fmt.Errorf("%s at 0x%x: not writable", what, addr)
	}
	return nil
}
