package pool

import (
	"fmt"
	"log/slog"
)

// DefaultChunkSize is how much a unified pool borrows from its Upstream at a
// time unless WithChunkSize says otherwise: 8 MiB, Gluten's tested
// reservation block.
const DefaultChunkSize int64 = 8 << 20

// UnifiedOption configures NewGreedyUnified and NewFairUnified.
type UnifiedOption func(*unifiedConfig)

type unifiedConfig struct {
	chunk     int64
	name      string
	logger    *slog.Logger // nil: slog.Default() at construction
	admission Admission    // nil: every borrow goes to upstream
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

// Admission decides whether a unified pool may borrow more from upstream: a
// check of the memory the whole process may still take (the pod guard's
// headroom under the container's limit), which upstream (Spark's per-task
// budget) does not know about.
//
// It is consulted on TryGrow's slow path only, for the bytes a TryGrow asks
// of upstream (a grow its slack covers costs nothing more; Grow, which
// cannot fail, never asks). It is called without the pool's lock, may run
// concurrently on many goroutines, and must not call back into this pool
// on the calling goroutine. It may block while the process makes room (the
// pod guard spills native consumers meanwhile, possibly this pool's, from
// another goroutine); it should answer at once when there is room, since it
// sits on the path of every chunk a pool borrows.
type Admission interface {
	// Admit returns nil when n more bytes may be borrowed, else why not:
	// the TryGrow then fails with ErrResourcesExhausted, its text carrying
	// the reason.
	Admit(n int64) error
}

// ImmediateAdmission is an Admission that can also answer without waiting:
// AdmitNow returns nil when n more bytes may be borrowed now, else why not,
// and never blocks or makes room. A unified pool asks it, instead of Admit,
// for a TryGrow of a reservation inside Reservation.WithoutWaiting: growth
// its consumer can do without, which must not wait for the process, nor
// make other consumers spill, to get memory the process does not have.
type ImmediateAdmission interface {
	Admission
	AdmitNow(n int64) error
}

// Lender is an Admission that holds memory back from upstream's other
// consumers (the pod guard holding Spark's free off-heap memory while the
// process is short of memory) and lends it to this pool's borrows: where
// upstream grants a borrow the Admission admitted (or a Grow, which asks
// none) short, a loan makes up the rest, recorded as overcommit that
// upstream never hears of, and backed by the memory the lender keeps held:
// the process's books stay one number, and native memory grows where the
// Admission admits it, whatever upstream's per-task limits do while the
// lender holds memory back. Growth a consumer can do without
// (Reservation.WithoutWaiting) is never lent to.
//
// Lend sets aside up to n bytes for the pool and returns how many; Repay
// gives n bytes of loans back (the pool repaid that much overcommit, or
// closed). Lend is called without the pool's lock, once per short grant,
// and Repay with it held: neither may block or call back into the pool.
type Lender interface {
	Admission
	Lend(n int64) (lent int64)
	Repay(n int64)
}

// Gatherer is a Lender that can lend more than it holds: Gather lends up
// to n bytes, first of what it holds, then of memory other pools keep from
// upstream as ballast (memory nobody uses, which upstream counts against
// the tasks that hold it), which it moves into its hold; it returns how
// many it lent, loans the pool records (or repays) as it does Lend's. Where
// upstream grants a borrow short, a pool calls Gather instead of Lend, so
// that ballast kept anywhere in the process makes up a borrow that
// cannot spill: a task whose share upstream has given out (its other
// consumers hold it, or upstream's per-task limit is reached) is not
// failed while memory nobody uses is held back from it. The pool calls
// Gather without its lock held, and never inside
// Reservation.WithoutWaiting, nor after upstream failed (then Lend); Gather
// may call upstream and other pools (this one too), and wait for them.
type Gatherer interface {
	Lender
	Gather(n int64) (lent int64)
}

// WithAdmission sets the pool's Admission (see there). Without one, every
// borrow goes to upstream.
func WithAdmission(a Admission) UnifiedOption {
	return func(c *unifiedConfig) { c.admission = a }
}

// WithLogger sets where the pool logs what it cannot return as an error:
// late releases and grows after Close, leaks at Close, upstream failures
// during Grow and Release, and failed spillers. The default is
// slog.Default() as it is when the pool is made.
func WithLogger(logger *slog.Logger) UnifiedOption {
	return func(c *unifiedConfig) { c.logger = logger }
}

// UnifiedStats is a snapshot of a unified pool's accounting, readable at any
// time. Between operations Held = Reserved - Overcommit + Slack + Owed +
// Ballast, and Held is exactly what upstream counts for the pool.
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
	// Ballast is bytes held and kept back on purpose: what the pool's
	// consumers gave up to ReclaimToBallast while the process is short of
	// memory. They are neither slack (no grow spends them) nor handed back
	// upstream (where other consumers would take them and the shortage would
	// only move) until ReleaseBallast or Close.
	Ballast int64

	AcquireCalls int64 // Upstream.Acquire calls
	ReleaseCalls int64 // Upstream.Release calls
	ShortGrants  int64 // Acquire calls that granted less than asked
	OverGrants   int64 // Acquire calls that granted more than asked; the excess went straight back
	// UpstreamErrors counts Acquire and Release calls that returned an error.
	UpstreamErrors int64

	ReclaimRequests int64 // Reclaim calls (Spark-requested spills)
	ReclaimedBytes  int64 // bytes released upstream by Reclaim calls
	SpillerFailures int64 // spillers that returned an error or freed nothing
	// ReclaimReentries counts Reclaim calls refused because one ran on the
	// same goroutine already (a Spiller growing its own pool): see Reclaim.
	ReclaimReentries int64
	// AdmissionRefusals counts TryGrows the pool's Admission refused.
	AdmissionRefusals int64
	// BallastedBytes is every byte ReclaimToBallast moved into ballast.
	BallastedBytes int64
	// Loans counts borrows upstream granted short that a loan of the
	// pool's Lender made up; Loaned is the overcommit loans back now.
	Loans, Loaned    int64
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
	// ReclaimReporting is Reclaim that also returns the errors of the
	// spillers it skipped, for a caller that must hand them on.
	ReclaimReporting(target int64) (freed int64, err error)
	// ReclaimToBallast is Reclaim whose freed bytes stay held as ballast
	// instead of going back upstream: the pool's slack, then what spillable
	// consumers free (largest first), until target bytes were set aside. It
	// returns the bytes moved into ballast, and what each consumer's spill
	// moved. For a process short of memory as a whole: the freed pages leave
	// the process, and upstream cannot hand the bytes to its other consumers
	// meanwhile.
	ReclaimToBallast(target int64) (int64, []ConsumerSpill, error)
	// ReleaseBallast hands up to n bytes of ballast back upstream (n < 0:
	// all of it) and returns how many it released.
	ReleaseBallast(n int64) (int64, error)
	// Stats returns a snapshot of the pool's accounting.
	Stats() UnifiedStats
	// Close releases everything the pool still holds upstream and returns a
	// LeakError naming the consumers if bytes were still reserved. After
	// Close, grows are refused and shrinks are counted as late releases.
	Close() error
}

// NewGreedyUnified returns Comet's greedy_unified (CometUnifiedMemoryPool):
// a pool that borrows every reserved byte from up (Spark's TaskMemoryManager
// over JNI, or an arbiter.Arbiter) and refuses TryGrow only when up
// refuses; it has no ceiling of its own. The result implements Unified; reach it
// through decorators with As[Unified]. It panics if up is nil.
//
// It differs from Comet where Comet is known to break:
//
//   - Grow never panics (Comet #6127): a short grant becomes overcommit,
//     repaid before any byte goes back upstream. Upstream is never handed
//     back more than it granted; a grant above the request is released at
//     once (Stats().OverGrants). TryGrow asks for its missing bytes plus the
//     debt (Comet's try_acquire), and a partial grant repays debt first.
//   - It borrows in chunks (WithChunkSize, default DefaultChunkSize). The
//     chunk C in force is quantised by the pool's size (1 MiB while reserved
//     is under 16 MiB, 4 MiB under 64 MiB, then the configured chunk, never
//     more). A grow that slack does not cover asks upstream for the missing
//     bytes rounded up to a multiple of C. Whenever no call is in flight and
//     no Reclaim is running, slack ≤ 2C: a shrink that leaves slack ≤ 2C
//     stays local, one that leaves more releases down to C (hysteresis, so
//     grow/shrink pairs at a boundary never thrash); when the last consumer
//     leaves, all slack goes back. A configured chunk of 0 is Comet's
//     pass-through (Comet #5383): one upstream call per non-zero grow and
//     per non-zero shrink, no slack.
//   - Spark can make it spill: Reclaim returns slack first, then asks
//     spillable consumers that have a Spiller, largest first by their bytes
//     across reservations; after each spill all slack goes upstream, so bytes
//     a spiller frees reach upstream however few they are, and no minimum
//     spill size is needed (Gluten's withMinSpillSize works around a block
//     listener that keeps sub-block frees local; this pool has none during
//     Reclaim). It returns exactly the bytes released upstream during the
//     call, and may be called from inside up.Acquire on the same goroutine.
//   - Close hands back everything held; later shrinks are counted as late
//     releases and never forwarded (Comet #2453), later grows record nothing.
//   - No lock is held across an upstream call (Comet #5212 item 17).
func NewGreedyUnified(up Upstream, opts ...UnifiedOption) Pool {
	if up == nil {
		panic("pool: NewGreedyUnified(nil): nil upstream")
	}
	p := &unifiedPool{}
	p.init("greedy_unified", up, opts)
	return p
}

// NewFairUnified returns Comet's fair_unified (CometFairMemoryPool, Comet's
// default): borrowing exactly as NewGreedyUnified describes, plus two limits
// on TryGrow over a pool of size bytes, with the fixes Comet's users needed:
//
//   - The share is per consumer across all its reservations
//     (docs/SEMANTICS.md, difference 1; apache/datafusion#25172), not the
//     whole pool's usage against pool_size/num (Comet #5961, #5214).
//   - Only spillable consumers divide the share: each may reach
//     (size − bytes held by unspillable consumers) / number of spillable
//     consumers. Unspillable consumers are limited by the pool total only
//     (Comet #5465).
//   - Admission and booking happen under the lock, the upstream call outside
//     it, and the result settles or rolls back under the lock (Comet #5212
//     item 17, PR #5613).
//   - Grow ignores both limits and never panics; a short grant becomes
//     overcommit (Comet #6127). Limit reports Finite(size), not Unknown.
//
// The result implements Unified. It panics if up is nil or size is negative.
func NewFairUnified(up Upstream, size int64, opts ...UnifiedOption) Pool {
	if up == nil {
		panic("pool: NewFairUnified(nil): nil upstream")
	}
	if size < 0 {
		panic(fmt.Sprintf("pool: NewFairUnified(%d): negative size", size))
	}
	p := &unifiedPool{}
	p.fair, p.size = true, size
	p.init("fair_unified", up, opts)
	return p
}

// Name implements Pool: "greedy_unified" or "fair_unified".
func (p *unifiedPool) Name() string { return p.kind }

// Limit implements Pool: Finite(size) for fair_unified (Comet reports
// Unknown, #5212 finding 16); Unknown for greedy_unified, which upstream
// alone limits.
func (p *unifiedPool) Limit() Limit {
	if p.fair {
		return Limit{Kind: Finite, Bytes: p.size}
	}
	return Limit{Kind: Unknown}
}

// String implements Pool: "greedy_unified(used: …, held: …, overcommit: …)"
// or "fair_unified(pool_size: …, used: …, held: …, overcommit: …,
// consumers: N)", with "[name]" after the kind when WithName was given.
func (p *unifiedPool) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.describeLocked()
}

// admitLocked is fair_unified's admission rule: the fair share, then the
// pool total, in Comet's order. The caller holds p.mu. Bytes upstream still
// counts for the pool count against both: what a consumer gave back (its
// shrinks and rolled-back grows) whose release is in flight or failed
// against its share; every release in flight and every owed byte against
// the total (grows in flight are already in reserved). The comparisons
// subtract instead of adding so that a huge n cannot overflow.
func (p *unifiedPool) admitLocked(e *consumerBytes, n int64) error {
	if e.c.CanSpill() {
		num := int64(max(p.mu.spillable, 1))
		if !p.mu.shareFresh {
			p.mu.share = max(p.size-p.mu.unspillable, 0) / num
			p.mu.shareFresh = true
		}
		share := p.mu.share
		if held := e.bytes + e.returning + e.owed; n > share-held {
			return &ExhaustedError{Msg: fmt.Sprintf(
				"Failed to acquire %d bytes for %s where this consumer already holds %d bytes and the fair limit is %d bytes, %d spillable registered (%d bytes overcommitted): %s",
				n, e.c, held, share, num, p.mu.overcommit, p.describeLocked())}
		}
	}
	if used := p.mu.reserved + p.mu.returning + p.mu.owed; n > p.size-used {
		return &ExhaustedError{Msg: fmt.Sprintf(
			"Failed to acquire %d bytes for %s where %d bytes already reserved (%d bytes overcommitted) and the pool limit is %d bytes: %s",
			n, e.c, used, p.mu.overcommit, p.size, p.describeLocked())}
	}
	return nil
}

var _ Unified = (*unifiedPool)(nil)
