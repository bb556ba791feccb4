package main

import (
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/jni"
	"github.com/nativepool/nativepool/pool"
)

// These tests drive the aggregation engine (aggs.go) as engine_test.go
// drives every engine: what is the aggregations' own, their create0
// arguments, stats0 and sample0 arrays, and the planted leak kept at close.

// aggThrough runs micro-batch version of partition 0 through the engine:
// values [from, to) pushed over the C Data Interface in batches of batch,
// the output imported back. It returns the output and the stats read
// before close.
func aggThrough(t *testing.T, e *aggEngine, cs *cStructs, c aggCreate, from, to, keys int64, batch int) (map[int64]entry, map[string]int64) {
	t.Helper()
	h, err := e.create(1, c)
	require.NoError(t, err)
	for lo := from; lo < to; lo += int64(batch) {
		arr, sc := cs.export(rateBatch(lo, min(to, lo+int64(batch)), keys, 0, 1))
		require.NoError(t, e.push(h, arr, sc))
		assert.Nil(t, arrayReleaseFn(arr), "push0 released the producer's array before returning")
	}
	require.NoError(t, e.finish(h))
	out := make(map[int64]entry)
	drainOutput(t, e.engine, h, cs, func(oa *cdata.CArrowArray, osc *cdata.CArrowSchema) {
		rb, err := cdata.ImportCRecordBatch(oa, osc)
		require.NoError(t, err)
		k := rb.Column(0).(*array.Int64).Int64Values()
		n := rb.Column(1).(*array.Int64).Int64Values()
		s := rb.Column(2).(*array.Int64).Int64Values()
		for i := range k {
			out[k[i]] = entry{k[i], n[i], s[i]}
		}
		rb.Release()
	})
	st, err := e.stats(h)
	require.NoError(t, err)
	require.NoError(t, e.close(h))
	return out, aggStatTable.named(st)
}

func TestAggregationRoundTripsThroughTheCDataInterfaceAndReportsItsSpills(t *testing.T) {
	returnGoHeap(t)
	p := pool.NewGreedy(300 << 10) // the table spills every 6,144 groups
	e, rec := aggsFor(t, fixed(p))
	cs := newCStructs(t)
	dir, tmp := t.TempDir(), t.TempDir()
	const keys, rows = 40_000, 25_000
	m := model{}
	var spilled int64
	for v := range int64(3) {
		touched := m.add(v*rows, (v+1)*rows, keys, 0, 1)
		c := aggCreate{name: "StreamingAgg[0]", version: v, stateDir: dir, tempDir: tmp, batchRows: 2048}
		out, st := aggThrough(t, e, cs, c, v*rows, (v+1)*rows, keys, 4096)
		require.Len(t, out, len(touched))
		for k := range touched {
			require.Equal(t, m[k], out[k], "group %d", k)
		}
		assert.Equal(t, int64(rows), st["ROWS_IN"])
		assert.Equal(t, v*rows, st["MIN_VALUE"])
		assert.Equal(t, (v+1)*rows-1, st["MAX_VALUE"])
		assert.Equal(t, int64(len(touched)), st["ROWS_OUT"])
		assert.Equal(t, int64(len(m)), st["STATE_GROUPS"])
		assert.Equal(t, (v+1)*rows, st["STATE_COUNT"])
		assert.Positive(t, st["SELF_SPILLS"])
		assert.Equal(t, int64(7), st["BATCHES_IN"])
		assert.LessOrEqual(t, st["PEAK_ALLOCATED"], st["PEAK_RESERVED"])
		assert.Zero(t, st["ALLOCATED"], "every output batch was released by the consumer")
		assert.Zero(t, p.Reserved(), "close gives everything back")
		assert.Zero(t, rec.trackedNow("StreamingAgg[0]"), "untracked at close")
		spilled += st["SPILLED_BYTES"]
	}
	assert.Equal(t, spilled, rec.disk.Load(), "every run file's bytes reach Spark's diskBytesSpilled")
	assert.Positive(t, rec.memory.Load(), "self-initiated spills count as memoryBytesSpilled")
	assert.Zero(t, e.ops.Len())
	assert.Equal(t, []int64{0, 0, 0}, e.sample())
}

func TestAggregationCreateRejectsAMissingStateDirectoryOrPreviousVersion(t *testing.T) {
	e, _ := aggsFor(t, fixed(pool.NewUnbounded()))
	_, err := e.create(1, aggCreate{name: "b"})
	require.ErrorIs(t, err, jni.ErrIllegalArgument, "no state directory")
	_, err = e.create(1, aggCreate{name: "b", stateDir: t.TempDir(), version: -1})
	require.ErrorIs(t, err, jni.ErrIllegalArgument, "a negative version")
	_, err = e.create(1, aggCreate{name: "b", stateDir: t.TempDir(), version: 3})
	require.ErrorIs(t, err, os.ErrNotExist, "no version 2 to start from")
	assert.Zero(t, e.ops.Len())
}

// TestThePlantedLeakOutlivesEachTaskAndStaysCountedInTheLedger: with
// retainBytes set, every micro-batch leaves one batch behind; close does
// not throw (it is what --leak asks for), the task's pool gets its charge
// back, and the allocator stays counted (tracked) with the batch's bytes,
// named by the function that allocated it.
func TestThePlantedLeakOutlivesEachTaskAndStaysCountedInTheLedger(t *testing.T) {
	returnGoHeap(t)
	p := pool.NewGreedy(64 << 20)
	e, rec := aggsFor(t, fixed(p))
	cs := newCStructs(t)
	dir := t.TempDir()
	var kept []*ffi.Allocator
	for v := range int64(3) {
		c := aggCreate{name: "StreamingAgg[0]", version: v, stateDir: dir, tempDir: t.TempDir(), allocationSites: true, retainBytes: 256 << 10}
		_, st := aggThrough(t, e, cs, c, v*1000, (v+1)*1000, 500, 1000)
		assert.Equal(t, int64(256<<10), st["RETAINED_BYTES"])
		assert.Zero(t, p.Reserved(), "the task's pool got everything back")
	}
	assert.Equal(t, 3, rec.trackedNow("StreamingAgg[0]"), "the leaky allocators stay in the ledger")
	assert.Equal(t, []int64{0, 3, 3 * 256 << 10}, e.sample())
	e.kept.Lock()
	for _, ah := range e.kept.ops {
		kept = append(kept, ah.op.Allocator())
	}
	e.kept.Unlock()
	for _, a := range kept {
		sites := a.LiveSites()
		require.Len(t, sites, 1)
		assert.Regexp(t, `\.\(\*aggregator\)\.retainReplayBatch \(.*agg\.go:\d+\)$`, sites[0].Site)
		assert.Equal(t, int64(256<<10), sites[0].Bytes)
	}
}
