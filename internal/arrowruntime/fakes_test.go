package arrowruntime

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/bridge"
	"github.com/nativepool/nativepool/internal/fakeupstream"
)

// fakeUpstream is Spark's TaskMemoryManager as the bridge sees it through
// the upcall interface org.nativepool.spark.jni.Upstream: the one shared
// fake (internal/fakeupstream) granting up to budget bytes in total,
// recording misuse (a zero or negative call, an over-return, a call after
// Close deleted its "global ref") instead of panicking, since the bridge
// would turn a panic in an upcall into an error.
type fakeUpstream struct{ *fakeupstream.Spark }

func newFakeUpstream(budget int64) *fakeUpstream {
	u := &fakeUpstream{fakeupstream.New(fakeupstream.RecordMisuse())}
	u.SetLimit(budget)
	return u
}

// setBefore runs f at the start of each call, like Spark's spill re-entering.
func (u *fakeUpstream) setBefore(f func(op string, n int64)) {
	if f == nil {
		u.OnAcquire(nil)
		u.OnRelease(nil)
		return
	}
	u.OnAcquire(func(n int64) { f("acquire", n) })
	u.OnRelease(func(n int64) { f("release", n) })
}

// requireSane fails the test if the bridge misused the upstream.
func (u *fakeUpstream) requireSane(t testing.TB) {
	t.Helper()
	require.Empty(t, u.Misuse())
	require.GreaterOrEqual(t, u.Held(), int64(0))
}

// logBuffer is a slog logger writing text records to a buffer.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) lines(substr string) []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

func newTestBridge(t testing.TB) (*bridge.Bridge, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	return bridge.NewBridge(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), FFI), logs
}

// mustOpen opens a pool and fails the test on error.
func mustOpen(t testing.TB, b *bridge.Bridge, task int64, kind int32, size, chunk int64, up bridge.OwnedUpstream) int64 {
	t.Helper()
	h, err := b.OpenPool(task, kind, size, chunk, func(int64) (bridge.OwnedUpstream, error) { return up, nil })
	require.NoError(t, err)
	return h
}

func mustReserve(t testing.TB, b *bridge.Bridge, ph int64, name string, canSpill bool, sp bridge.OwnedSpiller) int64 {
	t.Helper()
	h, err := b.NewReservation(ph, name, canSpill, sp)
	require.NoError(t, err)
	return h
}

// importBatch is ImportBatchAt for Go pointers to the C structs.
func importBatch(b *bridge.Bridge, res int64, arr *cdata.CArrowArray, sc *cdata.CArrowSchema) (int64, error) {
	return ImportBatchAt(b, res, uintptr(unsafe.Pointer(arr)), uintptr(unsafe.Pointer(sc)))
}

// exportBatch exports a batch into the zero-initialised C structs out and
// outSchema, zero-copy (Bridge.ExportBatch,
// ffi.Allocator.ExportRecordBatch).
func exportBatch(b *bridge.Bridge, batch int64, out *cdata.CArrowArray, outSchema *cdata.CArrowSchema) error {
	return ExportBatchAt(b, batch, uintptr(unsafe.Pointer(out)), uintptr(unsafe.Pointer(outSchema)))
}
