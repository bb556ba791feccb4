package pool

// greedyUnified is Comet's CometUnifiedMemoryPool (greedy_unified): every
// reserved byte is borrowed from an Upstream, with no ceiling of its own.
// It differs from Comet where Comet is known to break:
//
//   - Grow never panics (Comet #6127): a short grant becomes overcommit,
//     repaid before any byte goes back upstream.
//   - It borrows in chunks (default 8 MiB) and keeps bounded slack; see loan
//     for the bound. WithChunkSize(0) makes one upstream call per non-zero
//     grow and shrink, as Comet does (Comet #5383).
//   - Spark can make it spill: Reclaim returns slack, then asks spillers.
//   - Releases after Close are counted and never forwarded (Comet #2453).
//
// It is safe for concurrent use; no lock is held across an Upstream call.
// Make one with NewGreedyUnified; there is no useful zero value.
type greedyUnified struct {
	loan
}

// NewGreedyUnified returns a pool that borrows every reserved byte from up
// (Spark's TaskMemoryManager over JNI, or an ExecutorArbiter) and refuses
// TryGrow only when up refuses. The result implements Unified; reach it
// through decorators with As[Unified]. It panics if up is nil.
//
// Borrowing, shared with NewFairUnified:
//
//   - Chunks (WithChunkSize, default DefaultChunkSize): the chunk C in force
//     is quantised by the pool's size (1 MiB while reserved is under
//     16 MiB, 4 MiB under 64 MiB, then the configured chunk, never more). A
//     grow that slack does not cover asks upstream for the missing bytes
//     rounded up to a multiple of C. Whenever no call is in flight and no
//     Reclaim is running, slack ≤ 2C: a shrink that leaves slack ≤ 2C stays
//     local, one that leaves more releases down to C (hysteresis, so
//     grow/shrink pairs at a boundary never thrash); when the last consumer
//     leaves, all slack goes back. A configured chunk of 0 is Comet's
//     pass-through: one upstream call per non-zero grow and per non-zero
//     shrink, no slack.
//   - Overcommit: Grow never fails; what upstream does not grant is
//     recorded as overcommit and repaid by the first bytes freed. TryGrow
//     asks for its missing bytes plus the debt (Comet's try_acquire), and a
//     partial grant repays debt before anything goes back. Upstream is
//     never handed back more than it granted; a grant above the request is
//     released at once (Stats().OverGrants).
//   - Reclaim (Spark's spill): all slack first, then spillable consumers
//     that have a Spiller, largest first by their bytes across reservations;
//     after each spill all slack goes upstream, so bytes a spiller frees
//     reach upstream however few they are, and no minimum spill size is
//     needed (Gluten's withMinSpillSize works around a block listener that
//     keeps sub-block frees local; this pool has none during Reclaim). It
//     returns exactly the bytes released upstream during the call, and may
//     be called from inside up.Acquire on the same goroutine.
//   - Close hands back everything held; later shrinks are counted as late
//     releases and never forwarded, later grows record nothing.
func NewGreedyUnified(up Upstream, opts ...UnifiedOption) Pool {
	if up == nil {
		panic("pool: NewGreedyUnified(nil): nil upstream")
	}
	p := &greedyUnified{}
	p.init("greedy_unified", up, opts)
	return p
}

// Name is "greedy_unified".
func (p *greedyUnified) Name() string { return p.kind }

// Register counts c; it never calls upstream.
func (p *greedyUnified) Register(c *Consumer) { p.register(c) }

// Unregister forgets c after its last registration closes. It never panics.
func (p *greedyUnified) Unregister(c *Consumer) { p.unregister(c) }

// Grow records n bytes, borrowing what slack does not cover; a short or
// failed grant is recorded as overcommit (logged on error), never a panic.
// After Close it records nothing, logs and counts a late grow.
func (p *greedyUnified) Grow(r *Reservation, n int64) { p.grow(r, n) }

// TryGrow records n bytes or returns an error and records nothing: a
// refusal by upstream wraps ErrResourcesExhausted, an upstream error is
// wrapped as it is (and is not ErrResourcesExhausted), use after Close wraps
// ErrClosed, a negative n wraps ErrInvalidSize.
func (p *greedyUnified) TryGrow(r *Reservation, n int64) error {
	return p.tryGrow(r, n, nil)
}

// Shrink records that r gave back n bytes; see loan for when they go
// upstream. After Close it counts and logs a late release.
func (p *greedyUnified) Shrink(r *Reservation, n int64) { p.shrink(r, n) }

// Reserved is the bytes recorded for reservations.
func (p *greedyUnified) Reserved() int64 { return p.reserved() }

// Limit is Unknown: the pool has no ceiling of its own; upstream limits it.
func (p *greedyUnified) Limit() Limit { return Limit{Kind: Unknown} }

// String is "greedy_unified(used: …, held: …, overcommit: …)", with
// "[name]" after the kind when WithName was given.
func (p *greedyUnified) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.describeLocked()
}

// Reclaim implements Reclaimer; see loan.reclaim.
func (p *greedyUnified) Reclaim(target int64) (int64, error) { return p.reclaim(target) }

// Stats implements Unified.
func (p *greedyUnified) Stats() UnifiedStats { return p.stats() }

// Close releases everything held upstream and returns a *LeakError if bytes
// were still reserved. A second Close returns nil.
func (p *greedyUnified) Close() error { return p.close() }

var _ Unified = (*greedyUnified)(nil)
