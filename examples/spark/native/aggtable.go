package main

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The data structures of the streaming aggregation (agg.go): the in-memory
// hash table of groups, and the sorted group files on disk (spill runs and
// state versions) with the merge that reads them. Every byte proportional
// to the data lives in a buffer of the operator's accounted allocator; the
// small, bounded Go-heap state (the merge heap, one entry per source; the
// open files) is not charged.

// entry is one group: its key, the rows counted and the sum of their
// values. In the table a slot whose count is 0 is empty: every group counts
// at least one row.
type entry struct {
	key, count, sum int64
}

// entryBytes is the size of an entry in memory and on disk.
const entryBytes = int(unsafe.Sizeof(entry{}))

// entriesOf views a buffer of the allocator as entries (its length rounded
// down to whole entries). The allocator hands out C memory, 64-byte
// aligned, that holds no Go pointers, so the view is safe.
func entriesOf(b []byte) []entry {
	n := len(b) / entryBytes
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*entry)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// bytesOf is the memory of entries as bytes: what a file holds, in the
// machine's byte order (the files never leave the process's machine).
func bytesOf(e []entry) []byte {
	if len(e) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(e))), len(e)*entryBytes)
}

// table is an open-addressing hash table of groups (linear probing, a
// power-of-two number of slots, Fibonacci hashing) in one buffer of the
// accounted allocator, filled to at most three quarters. It is not safe for
// concurrent use; the aggregator guards it with its lock.
type table struct {
	mem   memory.Allocator
	buf   []byte
	slots []entry
	shift uint
	n     int // occupied slots
	limit int // n at which the table is full
}

// newTable allocates a table of slots slots (a power of two, at least 2)
// from mem. The allocator zeroes the buffer, so every slot starts empty. A
// refusal of the pool panics out of the accounted allocator (ffi.Catch).
func newTable(mem memory.Allocator, slots int) *table {
	if slots < 2 || slots&(slots-1) != 0 {
		panic(fmt.Sprintf("aggregate: table of %d slots: not a power of two", slots))
	}
	b := mem.Allocate(slots * entryBytes)
	shift := uint(64)
	for s := slots; s > 1; s >>= 1 {
		shift--
	}
	return &table{mem: mem, buf: b, slots: entriesOf(b), shift: shift, limit: slots / 4 * 3}
}

// tableBytes is the memory of a table of slots slots.
func tableBytes(slots int) int64 { return int64(slots) * int64(entryBytes) }

// full reports whether the table holds as many groups as it may.
func (t *table) full() bool { return t.n >= t.limit }

// bytes is the memory the table holds.
func (t *table) bytes() int64 { return int64(len(t.buf)) }

// add adds count rows summing to sum to the group of key. The table must
// not be full.
func (t *table) add(key, count, sum int64) {
	mask := uint64(len(t.slots) - 1)
	for i := (uint64(key) * 0x9e3779b97f4a7c15) >> t.shift; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.count == 0 {
			*s = entry{key, count, sum}
			t.n++
			return
		}
		if s.key == key {
			s.count += count
			s.sum += sum
			return
		}
	}
}

// moveInto adds every group of t to dst, which must have room for them.
func (t *table) moveInto(dst *table) {
	for _, s := range t.slots {
		if s.count != 0 {
			dst.add(s.key, s.count, s.sum)
		}
	}
}

// sorted moves the groups to the front of the buffer, sorts them by key in
// place (no memory beyond the table's own) and returns them. The table is
// no hash table afterwards: only its sorted groups and free remain.
func (t *table) sorted() []entry {
	w := 0
	for _, s := range t.slots {
		if s.count != 0 {
			t.slots[w] = s
			w++
		}
	}
	out := t.slots[:w]
	slices.SortFunc(out, func(a, b entry) int { return cmp.Compare(a.key, b.key) })
	return out
}

// free gives the table's buffer back to the allocator and returns its size.
// Idempotent.
func (t *table) free() int64 {
	if t == nil || t.buf == nil {
		return 0
	}
	n := t.bytes()
	t.mem.Free(t.buf)
	t.buf, t.slots, t.n = nil, nil, 0
	return n
}

// source is one sorted input of a merge.
type source interface {
	// head is the current group; valid while the source is not exhausted.
	head() entry
	// advance moves to the next group and reports whether there is one.
	advance() (bool, error)
	// delta reports whether the source holds this micro-batch's rows
	// (a spill run, the table) rather than the previous state version.
	delta() bool
	// release frees the source's buffer and file and returns the bytes it
	// gave back to the allocator. Idempotent.
	release() int64
}

// memSource reads the sorted groups of a table.
type memSource struct {
	t      *table
	groups []entry
	pos    int
}

func (m *memSource) head() entry { return m.groups[m.pos] }
func (m *memSource) delta() bool { return true }

func (m *memSource) advance() (bool, error) {
	m.pos++
	return m.pos < len(m.groups), nil
}

func (m *memSource) release() int64 {
	m.groups = nil
	return m.t.free()
}

// fileSource reads a group file through one buffer of the accounted
// allocator.
type fileSource struct {
	path   string
	isRun  bool // a spill run, removed when released; else a state version, kept
	f      *os.File
	mem    memory.Allocator
	buf    []byte
	groups []entry // the groups read into buf
	pos    int
}

// readBufferBytes is the size of a file source's buffer (a whole number of
// groups) and of the state writer's.
const readBufferBytes = 65536 / entryBytes * entryBytes

// open opens the file and reads its first groups into a buffer from mem
// (which may refuse: ffi.Catch) and reports whether the file has a group.
// Call it without the aggregator's lock: it allocates.
func (s *fileSource) open(mem memory.Allocator) (bool, error) {
	b := mem.Allocate(readBufferBytes) // first: a refusal leaves no file open
	f, err := os.Open(s.path)
	if err != nil {
		mem.Free(b)
		return false, fmt.Errorf("aggregate: %w", err)
	}
	s.f, s.mem, s.buf = f, mem, b
	return s.fill()
}

// fill reads the next groups into the buffer.
func (s *fileSource) fill() (bool, error) {
	n, err := io.ReadFull(s.f, s.buf)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	if err != nil {
		return false, fmt.Errorf("aggregate: read %s: %w", s.path, err)
	}
	if n%entryBytes != 0 {
		return false, fmt.Errorf("aggregate: %s ends inside a group (%d stray bytes)", s.path, n%entryBytes)
	}
	s.groups, s.pos = entriesOf(s.buf[:n]), 0
	return n > 0, nil
}

func (s *fileSource) head() entry { return s.groups[s.pos] }
func (s *fileSource) delta() bool { return s.isRun }

func (s *fileSource) advance() (bool, error) {
	s.pos++
	if s.pos < len(s.groups) {
		return true, nil
	}
	return s.fill()
}

func (s *fileSource) release() int64 {
	var n int64
	if s.buf != nil {
		n = int64(len(s.buf))
		s.mem.Free(s.buf)
		s.buf, s.groups = nil, nil
	}
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	if s.isRun {
		os.Remove(s.path)
	}
	return n
}

// groupFile is the file a groupWriter fills: a spill run
// (*spillfile.File) or a new state version (stateFile).
type groupFile interface {
	io.WriteCloser
	Name() string
	// Abort closes and removes a file that could not be completed.
	Abort()
}

// stateFile is a state version being written, as a groupFile.
type stateFile struct{ *os.File }

// Abort closes and removes the file.
func (f stateFile) Abort() {
	f.Close()
	os.Remove(f.Name())
}

// groupWriter writes groups to a file through one buffer of the accounted
// allocator, which it keeps from file to file.
type groupWriter struct {
	path    string
	f       groupFile // nil between files
	buf     []byte
	groups  []entry
	n       int
	written int64
}

// start makes f the file w writes.
func (w *groupWriter) start(f groupFile) {
	w.path, w.f, w.n, w.written = f.Name(), f, 0, 0
}

// put appends one group, writing the buffer out when it is full.
func (w *groupWriter) put(e entry) error {
	w.groups[w.n] = e
	w.n++
	if w.n == len(w.groups) {
		return w.flush()
	}
	return nil
}

func (w *groupWriter) flush() error {
	if w.n == 0 {
		return nil
	}
	n, err := w.f.Write(bytesOf(w.groups[:w.n]))
	w.written += int64(n)
	w.n = 0
	if err != nil {
		return fmt.Errorf("aggregate: write %s: %w", w.path, err)
	}
	return nil
}

// finish flushes and closes the file and returns the bytes written. On
// error the file is removed.
func (w *groupWriter) finish() (int64, error) {
	if err := w.flush(); err != nil {
		w.abort()
		return 0, err
	}
	err := w.f.Close()
	w.f = nil
	if err != nil {
		os.Remove(w.path)
		return 0, fmt.Errorf("aggregate: close %s: %w", w.path, err)
	}
	return w.written, nil
}

// abort closes and removes a file being written.
func (w *groupWriter) abort() {
	if w.f != nil {
		w.f.Abort()
		w.f = nil
	}
}

// merger merges sorted sources, adding up the groups of equal keys.
type merger struct {
	h mergeHeap
}

// add puts a source that has a current group into the merge.
func (m *merger) add(s source) { heap.Push(&m.h, s) }

// fix restores the heap's order after sources were removed from it.
func (m *merger) fix() { heap.Init(&m.h) }

// done reports whether every source is exhausted.
func (m *merger) done() bool { return len(m.h) == 0 }

// next returns the next group of the merge, the sum over every source of
// the least key, and whether any of them was a delta source (the group was
// updated by this micro-batch). Sources are released as they run out.
// The merge must not be done.
func (m *merger) next() (e entry, updated bool, freed int64, err error) {
	e.key = m.h[0].head().key
	for len(m.h) > 0 && m.h[0].head().key == e.key {
		s := m.h[0]
		g := s.head()
		e.count += g.count
		e.sum += g.sum
		updated = updated || s.delta()
		more, aerr := s.advance()
		if aerr != nil {
			return e, updated, freed, aerr
		}
		if more {
			heap.Fix(&m.h, 0)
		} else {
			heap.Pop(&m.h)
			freed += s.release()
		}
	}
	return e, updated, freed, nil
}

// releaseAll releases the sources still in the merge.
func (m *merger) releaseAll() int64 {
	var n int64
	for _, s := range m.h {
		n += s.release()
	}
	m.h = nil
	return n
}

// mergeHeap orders sources by their current key.
type mergeHeap []source

func (h mergeHeap) Len() int           { return len(h) }
func (h mergeHeap) Less(i, j int) bool { return h[i].head().key < h[j].head().key }
func (h mergeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)        { *h = append(*h, x.(source)) }
func (h *mergeHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return s
}
