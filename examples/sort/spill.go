package extsort

import (
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nativepool/nativepool/examples/internal/spillfile"
)

// runFile is a sorted run on disk: an Arrow IPC file of Schema batches of
// at most Options.BatchRows rows, none empty.
type runFile struct {
	path    string
	rows    int64
	batches int
	bytes   int64 // file size
}

// remove deletes the file; a missing file is not an error (Close may
// remove the directory first). The run's reader calls it when it is done
// with the file.
func (r *runFile) remove() {
	if r.path != "" {
		os.Remove(r.path)
		r.path = ""
	}
}

// scratch is the sorter's spill buffer: room for one batch of keys and one
// of payloads, allocated from the accounted allocator once, when the sorter
// is made, so that spilling never asks the pool for memory.
type scratch struct {
	buf      *memory.Buffer
	keys     []int64
	payloads []int64
}

func newScratch(mem memory.Allocator, rows int) *scratch {
	b := mem.Allocate(2 * rows * 8)
	all := arrow.Int64Traits.CastFromBytes(b)
	return &scratch{
		buf:      memory.NewBufferWithAllocator(b, mem),
		keys:     all[:rows:rows],
		payloads: all[rows:],
	}
}

func (s *scratch) charged() int64 { return int64(s.buf.Cap()) }

// release frees the buffer; it is idempotent and nil-safe.
func (s *scratch) release() {
	if s != nil && s.buf != nil {
		s.buf.Release()
		s.buf, s.keys, s.payloads = nil, nil, nil
	}
}

// runWriter writes one run file through the scratch buffer.
type runWriter struct {
	run  *runFile
	file *spillfile.File
	w    *ipc.FileWriter
	sc   *scratch
}

// createRun opens the next run file of dir. The IPC writer's own small
// allocations (flatbuffer metadata) use the Go heap, not the pool: a spill
// must not ask the pool for memory.
func createRun(dir *spillfile.Dir, sc *scratch) (*runWriter, error) {
	f, err := dir.Create()
	if err != nil {
		return nil, fmt.Errorf("extsort: create run: %w", err)
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		f.Abort()
		return nil, fmt.Errorf("extsort: create run %s: %w", f.Name(), err)
	}
	return &runWriter{run: &runFile{path: f.Name()}, file: f, w: w, sc: sc}, nil
}

// write writes the first n rows of the scratch buffer as one batch.
func (rw *runWriter) write(n int) error {
	if n == 0 {
		return nil
	}
	// Non-owning buffers over the scratch: releasing the record does not
	// free the scratch, and the IPC writer has copied the bytes to the file
	// when Write returns.
	kb := memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(rw.sc.keys[:n]))
	pb := memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(rw.sc.payloads[:n]))
	rec := int64Record(kb, pb, n)
	defer rec.Release()
	if err := rw.w.Write(rec); err != nil {
		return fmt.Errorf("extsort: write run %s: %w", rw.run.path, err)
	}
	rw.run.rows += int64(n)
	rw.run.batches++
	return nil
}

// finish closes the file and returns the run.
func (rw *runWriter) finish() (*runFile, error) {
	if err := rw.w.Close(); err != nil {
		rw.abort()
		return nil, fmt.Errorf("extsort: close run: %w", err)
	}
	if err := rw.file.Close(); err != nil {
		return nil, fmt.Errorf("extsort: close run: %w", err) // the file removed it
	}
	rw.run.bytes = rw.file.Bytes()
	return rw.run, nil
}

// abort closes and deletes a run that could not be completed.
func (rw *runWriter) abort() {
	rw.w.Close()
	rw.file.Abort()
	rw.run.path = ""
}
