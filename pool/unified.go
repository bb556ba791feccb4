package pool

import "log/slog"

// DefaultChunkSize is how much a unified pool borrows from its Upstream at a
// time unless WithChunkSize says otherwise: 8 MiB, Gluten's tested
// reservation block.
const DefaultChunkSize int64 = 8 << 20

// UnifiedOption configures NewGreedyUnified and NewFairUnified.
type UnifiedOption func(*unifiedConfig)

type unifiedConfig struct {
	chunk  int64
	name   string
	logger *slog.Logger // nil: slog.Default() at construction
}

func defaultUnifiedConfig() unifiedConfig {
	return unifiedConfig{chunk: DefaultChunkSize}
}

// WithChunkSize sets how many bytes the pool borrows from upstream at a time.
// 0 reproduces Comet exactly: one upstream call per non-zero grow and
// shrink. It panics on a negative size.
func WithChunkSize(bytes int64) UnifiedOption {
	if bytes < 0 {
		panic("pool: WithChunkSize: negative size")
	}
	return func(c *unifiedConfig) { c.chunk = bytes }
}

// WithName sets the name that appears in the pool's logs and leak reports
// (for example "task 42").
func WithName(name string) UnifiedOption {
	return func(c *unifiedConfig) { c.name = name }
}

// WithLogger sets where the pool logs what it cannot return as an error:
// late releases and grows after Close, leaks at Close, upstream failures
// during Grow and Release, and failed spillers. The default is
// slog.Default() as it is when the pool is made.
func WithLogger(logger *slog.Logger) UnifiedOption {
	return func(c *unifiedConfig) { c.logger = logger }
}

// UnifiedStats is a snapshot of a unified pool's accounting, readable at any
// time. Between operations Held = Reserved - Overcommit + Slack + Owed, and
// Held is exactly what upstream counts for the pool.
//
// During a call in flight the figures say where its bytes are: a TryGrow
// waiting for upstream is in Acquiring but not yet in Reserved (a refusal
// never shows up there); a Grow waiting for upstream is already in Reserved
// (it cannot fail). A release in flight has left Reserved but stays in Held
// and in Returning until upstream has taken the bytes back; one that failed
// stays in Held as Owed. Reserved is what the pool's reservations hold;
// Held is what upstream is charged.
type UnifiedStats struct {
	Reserved   int64 // bytes recorded for reservations (committed grows)
	Held       int64 // bytes upstream granted and has not taken back: its view of the pool
	Slack      int64 // bytes held and free to back the next grows (chunk remainder)
	Overcommit int64 // bytes reserved by Grow that upstream did not grant
	Peak       int64 // high-water mark of Reserved

	Acquiring int64 // bytes of grows whose Acquire is in flight, not covered by slack
	Returning int64 // bytes handed to Release calls still in flight (part of Held)
	// Owed is bytes whose Release failed or panicked: still held and charged
	// upstream, never spent as slack, handed back by the next sweep (a
	// Reclaim, the last consumer leaving, a trim) or by Close.
	Owed int64

	AcquireCalls int64 // Upstream.Acquire calls
	ReleaseCalls int64 // Upstream.Release calls
	ShortGrants  int64 // Acquire calls that granted less than asked
	OverGrants   int64 // Acquire calls that granted more than asked; the excess went straight back
	// UpstreamErrors counts Acquire and Release calls that returned an error.
	UpstreamErrors int64

	ReclaimRequests  int64 // Reclaim calls (Spark-requested spills)
	ReclaimedBytes   int64 // bytes released upstream by Reclaim calls
	SpillerFailures  int64 // spillers that returned an error or freed nothing
	LateReleases     int64 // shrinks after Close: counted, never forwarded
	LateReleaseBytes int64 // bytes of those shrinks
	LateGrows        int64 // grows after Close: recorded nowhere, never forwarded, logged
}

// Unified is implemented by the pools NewGreedyUnified and NewFairUnified
// return. Reach it through decorators with As[Unified](p).
type Unified interface {
	Pool
	Watcher
	Reclaimer
	// Stats returns a snapshot of the pool's accounting.
	Stats() UnifiedStats
	// Close releases everything the pool still holds upstream and returns a
	// LeakError naming the consumers if bytes were still reserved. After
	// Close, grows are refused and shrinks are counted as late releases.
	Close() error
}
