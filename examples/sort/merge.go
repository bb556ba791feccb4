package extsort

import (
	"container/heap"
	"fmt"
	"os"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// chunk is a sorted run held in memory: rows as pairs in one buffer from
// the accounted allocator. Releasing the chunk frees the buffer, which
// shrinks the sorter's reservation.
type chunk struct {
	buf   *memory.Buffer
	pairs []pair // view of buf
}

// newChunk allocates room for rows pairs from mem. It panics with the
// allocator's refusal if the pool refuses (callers wrap it in
// recoverRefusal).
func newChunk(mem memory.Allocator, rows int) *chunk {
	b := mem.Allocate(rows * pairBytes)
	c := &chunk{buf: memory.NewBufferWithAllocator(b, mem)}
	if rows > 0 {
		c.pairs = unsafe.Slice((*pair)(unsafe.Pointer(unsafe.SliceData(b))), rows)
	}
	return c
}

// charged is the number of bytes the allocator handed out for the chunk.
func (c *chunk) charged() int64 { return int64(c.buf.Cap()) }

func (c *chunk) release() {
	c.buf.Release()
	c.buf, c.pairs = nil, nil
}

// state says what a source can do after advancing.
type state int

const (
	ready     state = iota // the source has a current row
	refill                 // the source must load its next batch first
	exhausted              // the source has no more rows
)

// source is one sorted input of a merge.
type source interface {
	// advance moves past the current row and returns the next one, if the
	// source can tell without allocating.
	advance() (pair, state)
	// release frees what the source holds (buffers, open files) and returns
	// the bytes it gave back to the allocator. It is idempotent.
	release() int64
}

// memSource reads a chunk from pos; it frees the chunk as soon as the last
// row has been consumed.
type memSource struct {
	c   *chunk
	pos int
}

func (m *memSource) advance() (pair, state) {
	m.pos++
	if m.pos < len(m.c.pairs) {
		return m.c.pairs[m.pos], ready
	}
	m.release()
	return pair{}, exhausted
}

func (m *memSource) release() int64 {
	if m.c == nil || m.c.buf == nil {
		return 0
	}
	n := m.c.charged()
	m.c.release()
	return n
}

// fileSource reads a run file one batch at a time through the accounted
// allocator, so the batch in hand is charged like any other buffer.
type fileSource struct {
	run      *runFile
	file     *os.File
	rd       *ipc.FileReader
	batch    arrow.RecordBatch
	keys     []int64
	payloads []int64
	pos      int
	next     int // index of the next batch to load
	// level is how many merges produced the run: 0 for a spill's run,
	// 1 + the deepest input's for a merge pass's.
	level int64
}

func (f *fileSource) advance() (pair, state) {
	f.pos++
	if f.pos < len(f.keys) {
		return pair{f.keys[f.pos], f.payloads[f.pos]}, ready
	}
	f.dropBatch()
	if f.run != nil && f.next < f.run.batches {
		return pair{}, refill
	}
	f.release()
	return pair{}, exhausted
}

// load reads the next batch with mem and returns its first row. It may
// allocate (and so may re-enter the sorter's Spill): call it without the
// sorter's lock. A refusal panics out of the allocator; callers wrap it in
// recoverRefusal.
func (f *fileSource) load(mem memory.Allocator) (pair, error) {
	if f.rd == nil {
		file, err := os.Open(f.run.path)
		if err != nil {
			return pair{}, fmt.Errorf("extsort: open run: %w", err)
		}
		rd, err := ipc.NewFileReader(file, ipc.WithAllocator(mem), ipc.WithSchema(schema))
		if err != nil {
			file.Close()
			return pair{}, fmt.Errorf("extsort: read run %s: %w", f.run.path, err)
		}
		f.file, f.rd = file, rd
	}
	rec, err := f.rd.RecordBatchAt(f.next)
	if err != nil {
		return pair{}, fmt.Errorf("extsort: read run %s batch %d: %w", f.run.path, f.next, err)
	}
	keys, payloads, err := columns(rec)
	if err != nil || len(keys) == 0 {
		rec.Release()
		return pair{}, fmt.Errorf("extsort: run %s batch %d is malformed (%d rows): %v", f.run.path, f.next, len(keys), err)
	}
	f.next++
	f.batch, f.keys, f.payloads, f.pos = rec, keys, payloads, 0
	return pair{keys[0], payloads[0]}, nil
}

func (f *fileSource) dropBatch() int64 {
	if f.batch == nil {
		return 0
	}
	n := recordBytes(f.batch)
	f.batch.Release()
	f.batch, f.keys, f.payloads = nil, nil, nil
	return n
}

func (f *fileSource) release() int64 {
	n := f.dropBatch()
	if f.rd != nil {
		f.rd.Close()
		f.file.Close()
		f.rd, f.file = nil, nil
	}
	if f.run != nil {
		f.run.remove()
	}
	return n
}

// recordBytes is an estimate of the bytes a record read from a run holds:
// the sum of its distinct buffers' capacities (both columns share the IPC
// message body, so it is counted once).
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	seen := map[*memory.Buffer]bool{}
	for _, col := range rec.Columns() {
		for _, b := range col.Data().Buffers() {
			if b != nil && !seen[b] {
				seen[b] = true
				n += int64(b.Cap())
			}
		}
	}
	return n
}

// entry is a source in the merge heap with its current row.
type entry struct {
	head pair
	src  source
}

// entryHeap is a min-heap of entries by head (container/heap).
type entryHeap []entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return lessPair(h[i].head, h[j].head) }
func (h entryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)        { *h = append(*h, x.(entry)) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = entry{}
	*h = old[:len(old)-1]
	return e
}

// fixTop restores the heap after the top entry's head grew: heap.Fix(h, 0)
// without the interface calls, on the merge's hot path (one call per row).
func (h entryHeap) fixTop() {
	i, n := 0, len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && lessPair(h[r].head, h[l].head) {
			j = r
		}
		if !lessPair(h[j].head, h[i].head) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

// merger is a k-way merge over sources. Sources whose next row is known
// sit in the heap; a file source that ran out of its loaded batch waits in
// pending until the driver loads its next batch (without the sorter's
// lock), because the merge cannot go on without knowing that source's next
// row. It is guarded by the sorter's mutex.
type merger struct {
	h       entryHeap
	pending []*fileSource
	all     []source // every source, for release on Close
	rows    int64    // rows not yet emitted, in the heap and pending sources
}

func (m *merger) add(head pair, src source) {
	heap.Push(&m.h, entry{head, src})
}

// emit writes up to len(keys) rows in order into keys and payloads and
// returns how many it wrote. It stops early when a source needs a refill
// (see pending) or every source is exhausted. It never allocates; it frees
// chunks and batches as they are consumed.
func (m *merger) emit(keys, payloads []int64) int {
	n := 0
	for n < len(keys) && len(m.pending) == 0 && len(m.h) > 0 {
		top := &m.h[0]
		keys[n], payloads[n] = top.head.key, top.head.payload
		n++
		next, st := top.src.advance()
		switch st {
		case ready:
			top.head = next
			m.h.fixTop()
		case refill:
			m.pending = append(m.pending, top.src.(*fileSource))
			heap.Pop(&m.h)
		case exhausted:
			heap.Pop(&m.h)
		}
	}
	m.rows -= int64(n)
	return n
}

// releaseAll frees every source and returns the bytes given back.
func (m *merger) releaseAll() int64 {
	var n int64
	for _, s := range m.all {
		n += s.release()
	}
	m.h, m.pending, m.all = nil, nil, nil
	return n
}

// int64Record wraps two int64 slices backed by bufs as a Schema batch. The
// buffers are retained by the record.
func int64Record(keyBuf, payloadBuf *memory.Buffer, rows int) arrow.RecordBatch {
	kd := array.NewData(arrow.PrimitiveTypes.Int64, rows, []*memory.Buffer{nil, keyBuf}, nil, 0, 0)
	defer kd.Release()
	pd := array.NewData(arrow.PrimitiveTypes.Int64, rows, []*memory.Buffer{nil, payloadBuf}, nil, 0, 0)
	defer pd.Release()
	ka := array.NewInt64Data(kd)
	defer ka.Release()
	pa := array.NewInt64Data(pd)
	defer pa.Release()
	return array.NewRecordBatch(schema, []arrow.Array{ka, pa}, int64(rows))
}
