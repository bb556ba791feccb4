package ffi_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/pool"
)

// newAlloc returns an allocator over C memory charging a fresh consumer
// named name in a greedy pool of limit bytes; the reservation is closed when
// the test ends (after the test's own defers).
func newAlloc(t testing.TB, name string, limit int64, opts ...ffi.Option) (*ffi.Allocator, *pool.Reservation) {
	t.Helper()
	res := pool.NewConsumer(name).Register(pool.NewGreedy(limit))
	t.Cleanup(res.Close)
	return ffi.NewAllocator(nil, res, opts...), res
}

var int64Schema = arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)

// int64Batch builds a one-column batch holding first, first+1, … (n values)
// with mem.
func int64Batch(mem memory.Allocator, first, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, int64Schema)
	defer b.Release()
	col := b.Field(0).(*array.Int64Builder)
	for i := range n {
		col.Append(first + i)
	}
	return b.NewRecordBatch()
}

// sumOf is first + (first+1) + … for n values.
func sumOf(first, n int64) int64 { return n*first + n*(n-1)/2 }

// captureLog is a slog handler that keeps every record's message and
// attributes as text, for tests that assert what was logged.
type captureLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *captureLog) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(&lockedWriter{c}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (c *captureLog) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

type lockedWriter struct{ c *captureLog }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return w.c.buf.Write(p)
}

// within fails t if fn does not return within d: concurrency tests fail on
// a timeout instead of hanging.
func within(t *testing.T, d time.Duration, fn func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatalf("did not finish within %v", d)
	}
}
