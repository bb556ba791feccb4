package cdatamodel

import (
	"encoding/binary"
	"fmt"
	"sort"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	pageSize   = 4096
	schemaSize = 80 // struct ArrowSchema (ffi/abi.h)
	arraySize  = 80 // struct ArrowArray
	maxPages   = 8192
)

// Arena is a materialised Batch: anonymous memory holding its structs,
// pointer arrays, strings and buffers, each object at the end of its own
// run of readable pages and followed by a no-access page. An Arena is not
// safe for concurrent use; the zero Arena is not usable.
type Arena struct {
	mem  []byte
	base uintptr
	// runs are the readable page runs, by address; an object lies within
	// exactly one.
	runs []run
	// SchemaAddr and ArrayAddr are what importBatch0 would be given: the
	// top-level structs as the Batch's top modes point at them.
	SchemaAddr, ArrayAddr uintptr
}

type run struct{ start, end uintptr }

// object is one thing the arena holds: size bytes at an alignment, and
// how to write them once every object has its address.
type object struct {
	size, align int
	addr        uintptr
	fill        func(dst []byte)
}

// builder collects objects, then places and fills them.
type builder struct {
	objs                      []*object
	noAccess                  uintptr
	releaseSchema, releaseArr uintptr
}

func (b *builder) add(size, align int, fill func(dst []byte)) *object {
	o := &object{size: size, align: align, fill: fill}
	b.objs = append(b.objs, o)
	return o
}

// ptr is the address mode gives for o (nil o: an empty object).
func (b *builder) ptr(m PtrMode, o *object) uint64 {
	switch m {
	case PtrNull:
		return 0
	case PtrNoAccess:
		return uint64(b.noAccess)
	case PtrMisaligned:
		return uint64(o.addr + 4)
	}
	return uint64(o.addr)
}

// Materialize lays b out in fresh memory. releaseSchema and releaseArray
// are the release callbacks of live structs (a function pointer a consumer
// may call; any non-zero value for a validator that never calls them); a
// released struct's is NULL. Close unmaps the memory: nothing may use the
// addresses after it.
func Materialize(b Batch, releaseSchema, releaseArray uintptr) (*Arena, error) {
	bld := &builder{releaseSchema: releaseSchema, releaseArr: releaseArray}
	sc := bld.schema(b.Schema)
	arr := bld.array(b.Array)
	// Place: page 0 is no access; each object gets the pages it needs,
	// then one no-access page.
	pages := 1
	for _, o := range bld.objs {
		pages += (o.size+pageSize-1)/pageSize + 1
	}
	if pages > maxPages {
		return nil, fmt.Errorf("cdatamodel: %d pages, more than %d", pages, maxPages)
	}
	mem, err := unix.Mmap(-1, 0, pages*pageSize, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("cdatamodel: mmap: %w", err)
	}
	a := &Arena{mem: mem, base: uintptr(unsafe.Pointer(&mem[0]))}
	bld.noAccess = a.base
	off := pageSize
	for _, o := range bld.objs {
		n := (o.size + pageSize - 1) / pageSize * pageSize
		if n > 0 {
			if err := unix.Mprotect(mem[off:off+n], unix.PROT_READ|unix.PROT_WRITE); err != nil {
				_ = a.Close()
				return nil, fmt.Errorf("cdatamodel: mprotect: %w", err)
			}
			a.runs = append(a.runs, run{a.base + uintptr(off), a.base + uintptr(off+n)})
		}
		at := (off + n - o.size) &^ (o.align - 1)
		o.addr = a.base + uintptr(at)
		off += n + pageSize
	}
	for _, o := range bld.objs {
		if o.size > 0 {
			at := int(o.addr - a.base)
			o.fill(mem[at : at+o.size])
		}
	}
	a.SchemaAddr = uintptr(bld.ptr(b.Schema.Mode, sc))
	a.ArrayAddr = uintptr(bld.ptr(b.Array.Mode, arr))
	return a, nil
}

// Close unmaps the arena.
func (a *Arena) Close() error {
	if a.mem == nil {
		return nil
	}
	err := unix.Munmap(a.mem)
	a.mem = nil
	return err
}

// Read returns a copy of the n bytes at addr, and false when any of them
// is not readable (outside every run, or n negative or absurd).
func (a *Arena) Read(addr uintptr, n int64) ([]byte, bool) {
	if n < 0 || n > int64(len(a.mem)) {
		return nil, false
	}
	if n == 0 {
		return nil, true
	}
	i := sort.Search(len(a.runs), func(i int) bool { return a.runs[i].end > addr })
	if i == len(a.runs) || addr < a.runs[i].start || uint64(a.runs[i].end-addr) < uint64(n) {
		return nil, false
	}
	at := int(addr - a.base)
	return append([]byte(nil), a.mem[at:at+int(n)]...), true
}

func put(dst []byte, i int, v uint64) { binary.LittleEndian.PutUint64(dst[8*i:], v) }

func (b *builder) cstring(s String) *object {
	return b.add(len(s.Bytes)+1, 1, func(dst []byte) { copy(dst, s.Bytes) })
}

func (b *builder) schema(s *Schema) *object {
	format := b.cstring(s.Format)
	var name, meta *object
	if s.Name != nil {
		name = b.cstring(*s.Name)
	}
	if s.Metadata != nil {
		meta = b.add(len(s.Metadata), 1, func(dst []byte) { copy(dst, s.Metadata) })
	}
	kids := make([]*object, len(s.Children.Nodes))
	for i, c := range s.Children.Nodes {
		kids[i] = b.schema(c)
	}
	kidArr := b.add(8*len(kids), 8, func(dst []byte) {
		for i, k := range kids {
			put(dst, i, b.ptr(s.Children.Nodes[i].Mode, k))
		}
	})
	var dict *object
	if s.Dictionary != nil {
		dict = b.schema(s.Dictionary)
	}
	return b.add(schemaSize, 8, func(dst []byte) {
		put(dst, 0, b.ptr(s.Format.Mode, format))
		if name != nil {
			put(dst, 1, b.ptr(s.Name.Mode, name))
		}
		if meta != nil {
			put(dst, 2, b.ptr(s.MetadataMode, meta))
		}
		put(dst, 3, uint64(s.Flags))
		put(dst, 4, uint64(int64(len(kids))+s.Children.Delta))
		put(dst, 5, b.ptr(s.Children.Mode, kidArr))
		if dict != nil {
			put(dst, 6, b.ptr(s.Dictionary.Mode, dict))
		}
		if !s.Released {
			put(dst, 7, uint64(b.releaseSchema))
		}
	})
}

func (b *builder) array(a *Array) *object {
	bufs := make([]*object, len(a.Buffers))
	for i, buf := range a.Buffers {
		bufs[i] = b.add(len(buf.Data), 8, func(dst []byte) { copy(dst, buf.Data) })
	}
	bufArr := b.add(8*len(bufs), 8, func(dst []byte) {
		for i, o := range bufs {
			put(dst, i, b.ptr(a.Buffers[i].Mode, o))
		}
	})
	kids := make([]*object, len(a.Children.Nodes))
	for i, c := range a.Children.Nodes {
		kids[i] = b.array(c)
	}
	kidArr := b.add(8*len(kids), 8, func(dst []byte) {
		for i, k := range kids {
			put(dst, i, b.ptr(a.Children.Nodes[i].Mode, k))
		}
	})
	var dict *object
	if a.Dictionary != nil {
		dict = b.array(a.Dictionary)
	}
	return b.add(arraySize, 8, func(dst []byte) {
		put(dst, 0, uint64(a.Length))
		put(dst, 1, uint64(a.NullCount))
		put(dst, 2, uint64(a.Offset))
		put(dst, 3, uint64(int64(len(bufs))+a.BuffersDelta))
		put(dst, 4, uint64(int64(len(kids))+a.Children.Delta))
		put(dst, 5, b.ptr(a.BuffersMode, bufArr))
		put(dst, 6, b.ptr(a.Children.Mode, kidArr))
		if dict != nil {
			put(dst, 7, b.ptr(a.Dictionary.Mode, dict))
		}
		if !a.Released {
			put(dst, 8, uint64(b.releaseArr))
		}
	})
}
