package ffi_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/nativepool/nativepool/internal/proptest"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/ffi/internal/ctest"
	"github.com/nativepool/nativepool/pool"
)

const (
	propLimit   = 64 << 10 // the importer's greedy pool
	propMaxSize = 8 << 10  // largest raw buffer
	propMaxRows = 600      // largest batch
)

// propOp is one command of a random sequence: Kind picks the operation,
// Size its byte count (or row count), Pick the object it applies to, modulo
// what exists.
type propOp struct {
	Kind int
	Size int
	Pick int
}

func (o propOp) String() string {
	names := [...]string{"allocate", "reallocate", "free", "export", "consumer_release", "import", "go_release"}
	return fmt.Sprintf("%s(size=%d, pick=%d)", names[o.Kind], o.Size, o.Pick)
}

// propWorld is one run: the allocator under test (which also imports, with
// ImporterCharges), a producer allocator standing in for the JVM, and the
// model of what should be live.
type propWorld struct {
	a, producer *ffi.Allocator
	res, pres   *pool.Reservation
	chunk       int64

	bufs    [][]byte
	bufSum  int64 // bytes of raw live buffers (their capacity)
	exports []propExport
	imports []arrow.RecordBatch
	impSum  int64 // bytes of live imports
}

type propExport struct {
	arr   *cdata.CArrowArray
	bytes int64 // what building the batch added to Allocated
}

// checkInvariants lists what must hold between any two commands:
//   - Allocated ≤ reserved, and the reservation holds exactly the
//     allocator's charge (it is dedicated);
//   - Charged = Allocated + Slack + ImportCharged, Slack within [0, 2·chunk];
//   - Allocated = raw buffers + batches exported and not yet released by the
//     consumer (the model), ImportCharged = live imports;
//   - the producer is still charged for every byte Go imported and holds;
//   - the pool's total equals the reservation.
func (w *propWorld) checkInvariants() string {
	s := w.a.Snapshot()
	var exp int64
	for _, e := range w.exports {
		exp += e.bytes
	}
	switch {
	case s.Allocated > s.Reserved:
		return fmt.Sprintf("allocated %d > reserved %d", s.Allocated, s.Reserved)
	case s.Reserved != s.Charged:
		return fmt.Sprintf("reserved %d != charged %d", s.Reserved, s.Charged)
	case s.Charged != s.Allocated+s.Slack+s.ImportCharged:
		return fmt.Sprintf("charged %d != allocated %d + slack %d + import charged %d", s.Charged, s.Allocated, s.Slack, s.ImportCharged)
	case s.Slack < 0 || s.Slack > 2*w.chunk:
		return fmt.Sprintf("slack %d outside [0, %d]", s.Slack, 2*w.chunk)
	case s.Allocated != w.bufSum+exp:
		return fmt.Sprintf("allocated %d != buffers %d + exported %d", s.Allocated, w.bufSum, exp)
	case s.ExportsLive != len(w.exports) || s.Exported != exp:
		return fmt.Sprintf("exports %d (%d B) != model %d (%d B)", s.ExportsLive, s.Exported, len(w.exports), exp)
	case s.ImportCharged != w.impSum || s.ImportsLive != w.liveImports():
		return fmt.Sprintf("imports %d charged %d != model %d charged %d", s.ImportsLive, s.ImportCharged, w.liveImports(), w.impSum)
	case w.pres.Size() != w.producer.Allocated():
		return fmt.Sprintf("producer reserved %d != producer allocated %d", w.pres.Size(), w.producer.Allocated())
	case w.res.Pool().Reserved() != s.Reserved:
		return fmt.Sprintf("pool reserved %d != reservation %d", w.res.Pool().Reserved(), s.Reserved)
	}
	return ""
}

// liveImports counts the imports that hold buffers: arrow-go releases the
// producer's array of a batch without buffers (no rows) during the import.
func (w *propWorld) liveImports() int {
	n := 0
	for _, rb := range w.imports {
		if b, _ := ffi.ImportedBytes(rb); b > 0 {
			n++
		}
	}
	return n
}

// wouldRefuse is the refusal rule of a greedy pool behind the allocator.
func (w *propWorld) wouldRefuse(n int64) bool {
	return w.a.Snapshot().Slack < n && w.res.Size()+n > propLimit
}

func (w *propWorld) apply(op propOp) string {
	switch op.Kind {
	case 0: // allocate
		n := int64(op.Size)
		refuse := n > 0 && w.wouldRefuse(n)
		var b []byte
		err := ffi.Catch(func() error { b = w.a.Allocate(op.Size); return nil })
		if refuse != (err != nil) {
			return fmt.Sprintf("refusal %v, want %v", err, refuse)
		}
		if err == nil {
			w.bufs = append(w.bufs, b)
			w.bufSum += int64(cap(b))
		}
	case 1: // reallocate
		if len(w.bufs) == 0 {
			return ""
		}
		i := op.Pick % len(w.bufs)
		old := w.bufs[i]
		refuse := op.Size > cap(old) && w.wouldRefuse(int64(op.Size))
		var b []byte
		err := ffi.Catch(func() error { b = w.a.Reallocate(op.Size, old); return nil })
		if refuse != (err != nil) {
			return fmt.Sprintf("refusal %v, want %v", err, refuse)
		}
		if err == nil {
			w.bufSum += int64(cap(b) - cap(old))
			w.bufs[i] = b
		}
	case 2: // free
		if len(w.bufs) == 0 {
			return ""
		}
		i := op.Pick % len(w.bufs)
		w.a.Free(w.bufs[i])
		w.bufSum -= int64(cap(w.bufs[i]))
		w.bufs = append(w.bufs[:i], w.bufs[i+1:]...)
	case 3: // build a batch and export it; the Go side lets go at once
		before := w.a.Allocated()
		var rb arrow.RecordBatch
		err := ffi.Catch(func() error { rb = int64Batch(w.a, 0, int64(op.Size%propMaxRows)); return nil })
		if err != nil {
			if !errors.Is(err, pool.ErrResourcesExhausted) {
				return "build: " + err.Error()
			}
			if after := w.a.Allocated(); after != before {
				return fmt.Sprintf("refused build left %d bytes allocated", after-before)
			}
			return ""
		}
		arr := ctest.NewArray()
		if err := w.a.ExportRecordBatch(rb, arr, nil); err != nil {
			return "export: " + err.Error()
		}
		w.exports = append(w.exports, propExport{arr: ctest.Hold(arr), bytes: w.a.Allocated() - before})
		ctest.Free(arr)
		rb.Release()
	case 4: // the consumer releases an export, from a C thread
		if len(w.exports) == 0 {
			return ""
		}
		i := op.Pick % len(w.exports)
		if ctest.ReleaseOnNewThread(w.exports[i].arr) != 0 {
			return "pthread_create failed"
		}
		ctest.Free(w.exports[i].arr)
		w.exports = append(w.exports[:i], w.exports[i+1:]...)
	case 5: // import a batch the producer exports
		rb := int64Batch(w.producer, 0, int64(op.Size%propMaxRows))
		arr, sc := ctest.NewArray(), ctest.NewSchema()
		cdata.ExportArrowRecordBatch(rb, arr, sc)
		rb.Release()
		imp, err := w.a.ImportRecordBatch(arr, sc)
		ctest.Free(arr)
		ctest.Free(sc)
		if err != nil {
			return "import: " + err.Error()
		}
		n, _ := ffi.ImportedBytes(imp)
		w.imports = append(w.imports, imp)
		w.impSum += n
	case 6: // Go releases an import
		if len(w.imports) == 0 {
			return ""
		}
		i := op.Pick % len(w.imports)
		n, _ := ffi.ImportedBytes(w.imports[i])
		w.imports[i].Release()
		w.impSum -= n
		w.imports = append(w.imports[:i], w.imports[i+1:]...)
	}
	return ""
}

// drain releases everything in a random-free order and checks that every
// book is back to zero.
func (w *propWorld) drain() string {
	for len(w.bufs) > 0 {
		if msg := w.apply(propOp{Kind: 2}); msg != "" {
			return msg
		}
	}
	for len(w.exports) > 0 {
		if msg := w.apply(propOp{Kind: 4}); msg != "" {
			return msg
		}
	}
	for len(w.imports) > 0 {
		if msg := w.apply(propOp{Kind: 6}); msg != "" {
			return msg
		}
	}
	if msg := w.checkInvariants(); msg != "" {
		return msg
	}
	if leak := w.a.Leaks(); leak != nil {
		return leak.Error()
	}
	if err := w.a.Close(); err != nil {
		return err.Error()
	}
	if w.res.Size() != 0 || w.pres.Size() != 0 || w.a.Allocated() != 0 {
		return fmt.Sprintf("after Close: reserved %d, producer %d, allocated %d", w.res.Size(), w.pres.Size(), w.a.Allocated())
	}
	return ""
}

// TestRandomSequencesKeepAllocatedWithinReservedAndEndAtZero runs random
// sequences of allocate, reallocate, free, export (released later by a C
// consumer on its own thread) and import (released later by Go) against an
// allocator with a finite pool, exact and chunked. After every command it
// checks propWorld.checkInvariants and that Allocate/Reallocate refuse
// exactly when the pool must; after releasing everything, that every book
// (allocated, reserved, producer's charge) is 0 and nothing is reported as
// leaked. Set NATIVEPOOL_PROP_SEED to replay a logged seed.
func TestRandomSequencesKeepAllocatedWithinReservedAndEndAtZero(t *testing.T) {
	seed := proptest.Seed(t)
	for _, chunk := range []int64{0, 4096} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) {
			params := gopter.DefaultTestParametersWithSeed(seed)
			params.MinSuccessfulTests = 60
			opGen := gopter.CombineGens(gen.IntRange(0, 6), gen.IntRange(0, propMaxSize), gen.IntRange(0, 1<<20)).
				Map(func(v []any) propOp { return propOp{Kind: v[0].(int), Size: v[1].(int), Pick: v[2].(int)} })
			props := gopter.NewProperties(params)
			props.Property("allocated ≤ reserved, books exact, zero at end", prop.ForAll(
				func(ops []propOp) string {
					w := &propWorld{chunk: chunk}
					w.res = pool.NewConsumer("op").Register(pool.NewGreedy(propLimit))
					defer w.res.Close()
					w.pres = pool.NewConsumer("jvm").Register(pool.NewUnbounded())
					defer w.pres.Close()
					w.a = ffi.NewAllocator(nil, w.res, ffi.WithChunkSize(chunk), ffi.WithImportPolicy(ffi.ImporterCharges))
					w.producer = ffi.NewAllocator(nil, w.pres)
					for i, op := range ops {
						if msg := w.apply(op); msg != "" {
							return fmt.Sprintf("step %d %s: %s", i, op, msg)
						}
						if msg := w.checkInvariants(); msg != "" {
							return fmt.Sprintf("after step %d %s: %s", i, op, msg)
						}
					}
					return w.drain()
				},
				gen.SliceOfN(80, opGen, reflect.TypeOf(propOp{})),
			))
			props.TestingRun(t)
		})
	}
}
