package pool

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordCollector is a slog.Handler that keeps every record as a level,
// message and flat attribute map, for exact assertions.
type recordCollector struct {
	mu      sync.Mutex
	level   slog.Level
	records []loggedRecord
}

type loggedRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]any
}

func (h *recordCollector) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *recordCollector) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *recordCollector) WithGroup(string) slog.Handler                { return h }
func (h *recordCollector) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]any{}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.Any()
		return true
	})
	h.mu.Lock()
	h.records = append(h.records, loggedRecord{r.Level, r.Message, attrs})
	h.mu.Unlock()
	return nil
}

func (h *recordCollector) take() []loggedRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.records
	h.records = nil
	return r
}

// TestLoggingEmitsOneRecordPerOperation with pool, consumer, ID, bytes,
// the reservation's size as the pool sees it, and try_grow's outcome.
func TestLoggingEmitsOneRecordPerOperation(t *testing.T) {
	h := &recordCollector{level: slog.LevelDebug}
	p := NewLogging(NewGreedy(100), slog.New(h))
	c := NewConsumer("sort")
	id := c.ID()
	r := c.Register(p)
	require.NoError(t, r.TryGrow(60))
	r.Grow(10)
	err := r.TryGrow(40)
	require.ErrorIs(t, err, ErrResourcesExhausted)
	r.Shrink(20)
	r.Close()

	base := func(kv ...any) map[string]any {
		m := map[string]any{"pool": "greedy", "consumer": "sort", "consumer_id": id}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	assert.Equal(t, []loggedRecord{
		{slog.LevelInfo, "register", base()},
		{slog.LevelInfo, "try_grow", base("bytes", int64(60), "reservation", int64(0), "outcome", "ok")},
		{slog.LevelInfo, "grow", base("bytes", int64(10), "reservation", int64(60))},
		{slog.LevelWarn, "try_grow", base("bytes", int64(40), "reservation", int64(70), "outcome", "refused", "error", err)},
		{slog.LevelInfo, "shrink", base("bytes", int64(20), "reservation", int64(50))},
		{slog.LevelInfo, "shrink", base("bytes", int64(50), "reservation", int64(0))},
		{slog.LevelInfo, "unregister", base()},
	}, h.take())
}

// TestLoggingLabelsNonRefusalErrors "error" and returns them unchanged.
func TestLoggingLabelsNonRefusalErrors(t *testing.T) {
	h := &recordCollector{level: slog.LevelWarn}
	p := NewLogging(failingPool{NewGreedy(100)}, slog.New(h))
	r := NewConsumer("c").Register(p)
	err := r.TryGrow(1)
	require.ErrorIs(t, err, errUpstream)
	recs := h.take()
	require.Len(t, recs, 1, "only the Warn record passes a Warn-level handler")
	assert.Equal(t, "error", recs[0].Attrs["outcome"])
	assert.Same(t, err, recs[0].Attrs["error"])
}

// TestLoggingDelegatesEverything: the inner pool's state, limit and
// refusals are what the caller sees.
func TestLoggingDelegatesEverything(t *testing.T) {
	inner := NewFair(100)
	assert.Same(t, slog.Default(), NewLogging(inner, nil).(*loggingPool).logger, "nil means slog.Default()")
	p := NewLogging(inner, slog.New(slog.DiscardHandler))
	r := NewConsumer("s").WithCanSpill(true).Register(p)
	require.NoError(t, r.TryGrow(100))
	err := r.TryGrow(1)
	assert.EqualError(t, err, "Resources exhausted: Failed to allocate additional 1.0 B for s with 100.0 B already allocated for this reservation - 100.0 B remain available for the total memory pool: fair(pool_size: 100.0 B)")
	assert.Equal(t, int64(100), p.Reserved())
	assert.Equal(t, inner.Limit(), p.Limit())
	assert.Equal(t, "logging", p.Name())
	u, ok := p.(Unwrapper)
	require.True(t, ok)
	assert.Same(t, inner, u.Unwrap())
	r.Close()
	assert.Equal(t, int64(0), inner.Reserved())
}

// TestLoggingBuildsNoRecordWhenDisabled: a disabled logger sees no Handle
// call and the pair allocates nothing.
func TestLoggingBuildsNoRecordWhenDisabled(t *testing.T) {
	h := &recordCollector{level: slog.LevelError}
	p := NewLogging(NewGreedy(1<<40), slog.New(h))
	r := NewConsumer("quiet").Register(p)
	allocs := testing.AllocsPerRun(1000, func() {
		if err := r.TryGrow(8); err != nil {
			panic(err)
		}
		r.Shrink(8)
	})
	assert.Zero(t, allocs)
	assert.Empty(t, h.take())
}
