package ffi_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/ffi/ffitest"
	"github.com/nativepool/nativepool/ffi/internal/ctest"
	"github.com/nativepool/nativepool/pool"
)

func TestSnapshotReportsAllocatedReservedSlackAndPeak(t *testing.T) {
	a, res := newAlloc(t, "op", 1<<20, ffi.WithChunkSize(1024))
	defer ffitest.AssertNoLeak(t, a)
	b1 := a.Allocate(100)
	b2 := a.Allocate(300)
	a.Free(b1)
	s := a.Snapshot()
	assert.Equal(t, ffi.Snapshot{
		Consumer:    res.Consumer().String(),
		Allocated:   300,
		Peak:        400,
		LiveBuffers: 1,
		Charged:     1024,
		Reserved:    1024,
		Slack:       724,
		Gap:         724,
	}, s)
	assert.Equal(t, "ffi("+res.Consumer().String()+": allocated 300 in 1 buffers, peak 400, charged 1024, reserved 1024, slack 724, "+
		"exported 0 in 0 batches, imported 0 in 0 batches (0 charged), forced 0, refusals 0, late frees 0, closed false)", s.String())
	a.Free(b2)
}

func TestMeasureDriftSeesResidentMemoryGrowWithTouchedBuffers(t *testing.T) {
	a, res := newAlloc(t, "op", 1<<40)
	defer ffitest.AssertNoLeak(t, a)
	before, err := a.Drift()
	require.NoError(t, err)
	require.Positive(t, before.RSS)
	require.Positive(t, before.GoRuntime)

	const size = 64 << 20
	b := a.Allocate(size)
	for i := 0; i < size; i += 4096 {
		b[i] = 1 // make every page resident
	}
	after, err := a.Drift()
	require.NoError(t, err)
	assert.Equal(t, int64(size), after.Allocated)
	assert.Equal(t, res.Size(), after.Reserved)
	assert.Equal(t, after.RSS-after.Reserved, after.Drift)
	assert.Equal(t, after.RSS-after.GoRuntime-after.Allocated, after.RSSOther)
	assert.Greater(t, after.RSS-before.RSS, int64(size/2), "RSS follows the touched buffer")
	a.Free(b)
}

// TestConcurrentAllocateFreeAndConsumerReleasesEndAtZero runs goroutines
// allocating, reallocating and freeing against a small pool while C threads
// release exported batches; success is every book at zero at the end, no
// race (go test -race) and no deadlock (the test fails after 30 s).
func TestConcurrentAllocateFreeAndConsumerReleasesEndAtZero(t *testing.T) {
	for _, chunk := range []int64{0, 4096} {
		res := pool.NewConsumer("op").Register(pool.NewGreedy(256 << 10))
		a := ffi.NewAllocator(nil, res, ffi.WithChunkSize(chunk))
		within(t, 30*time.Second, func(ctx context.Context) error {
			g, _ := errgroup.WithContext(ctx)
			for w := range 4 {
				g.Go(func() error {
					rng := rand.New(rand.NewPCG(uint64(w), uint64(chunk)))
					var live [][]byte
					for range 2000 {
						switch {
						case len(live) > 0 && rng.IntN(3) == 0:
							i := rng.IntN(len(live))
							a.Free(live[i])
							live = append(live[:i], live[i+1:]...)
						case len(live) > 0 && rng.IntN(4) == 0:
							i := rng.IntN(len(live))
							_ = ffi.Catch(func() error { live[i] = a.Reallocate(rng.IntN(8<<10), live[i]); return nil })
						default:
							_ = ffi.Catch(func() error { live = append(live, a.Allocate(rng.IntN(8<<10))); return nil })
						}
					}
					for _, b := range live {
						a.Free(b)
					}
					return nil
				})
			}
			held := make(chan *cdata.CArrowArray, 16)
			g.Go(func() error { // the operator exports and forgets
				defer close(held)
				for i := range 200 {
					var rb arrow.RecordBatch
					if ffi.Catch(func() error { rb = int64Batch(a, 0, int64(i%50)); return nil }) != nil {
						continue
					}
					out := ctest.NewArray()
					if err := a.ExportRecordBatch(rb, out, nil); err != nil {
						return err
					}
					rb.Release()
					held <- ctest.Hold(out)
					ctest.Free(out)
				}
				return nil
			})
			g.Go(func() error { // the JVM releases on its own threads
				for arr := range held {
					if rc := ctest.ReleaseOnNewThread(arr); rc != 0 {
						return fmt.Errorf("pthread: %d", rc)
					}
					ctest.Free(arr)
				}
				return nil
			})
			return g.Wait()
		})
		ffitest.AssertNoLeak(t, a)
		require.NoError(t, a.Close())
		assert.Zero(t, res.Size(), "chunk=%d", chunk)
		assert.Zero(t, res.Pool().Reserved(), "chunk=%d", chunk)
		res.Close()
	}
}
