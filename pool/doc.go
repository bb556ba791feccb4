// Package pool accounts memory for a native query engine running inside a
// Spark executor: DataFusion's memory-pool semantics ported to Go, the pools
// of Apache DataFusion Comet that borrow from Spark, and the fixes those
// pools are known to need. docs/SEMANTICS.md lists what is kept from
// DataFusion and Comet exactly and where this package deliberately differs,
// each with its test; docs/ARCHITECTURE.md shows where the package sits.
//
// # What is accounted
//
// A pool counts declared bytes. Operators reserve before they allocate the
// large, data-dependent buffers (sort runs, hash tables, batches in flight);
// small fixed-size state is deliberately not tracked, so leave headroom. The
// ffi package closes the gap for Arrow buffers: its allocator charges every
// byte it hands out to a reservation, so what Spark is told and what the
// process holds stay the same number.
//
// # Related types
//
//	Account (one goroutine, local slack) ──owns──┐
//	                                             ▼
//	Consumer ──Register──▶ Reservation ─┬─ Split / Take / NewEmpty (same registration, no pool call)
//	                                    │
//	                     registration (one Register, one Unregister per registration)
//	                                    │
//	                                    ▼
//	                                  Pool  ◀── decorators: TrackConsumers, Logging
//	                                    │
//	         unified pools only ──────▶ Upstream (Spark's TaskMemoryManager over JNI,
//	                                    │          or arbiter.Arbiter in process)
//	                                    └─ Reclaimer ◀── Spark's spill(size): slack first,
//	                                                     then Spillers, largest first
//
// # Call ordering
//
// Inside Pool.TryGrow and Pool.Grow, r.Size() is the reservation's size before
// the request; inside Pool.Shrink it is the size after. Zero-byte calls reach
// the pool. Split, Take and NewEmpty never call it. Comet once misread this
// ordering and broke its default pool for months (apache/datafusion-comet#5961).
//
// # An operator's account
//
// A Reservation is safe for concurrent use, and Close is atomic with its
// grows, so every TryGrow and Shrink is an atomic read-modify-write of its
// size and a call into the pool. An operator that grows once per batch on
// one goroutine needs neither: an Account (after CockroachDB's
// BoundAccount) owns a reservation, borrows from it in quanta and keeps at
// most two quanta of local slack, so a grow or shrink within the slack is
// two plain additions. The slack is reserved in the pool like any byte;
// Account.Spill gives it back before the operator spills data.
//
// # Pools and decorators
//
//   - NewUnbounded: never refuses.
//   - NewGreedy: first come, first served up to a size (a CAS fast path).
//   - NewFair: DataFusion's FairSpillPool, with the spill share computed per
//     consumer across its sibling reservations (apache/datafusion#25172).
//   - NewGreedyUnified: borrows every byte from an Upstream (Comet's
//     greedy_unified), in chunks, with overcommit instead of panics.
//   - NewFairUnified: the same plus a per-consumer fair share and a pool
//     total (Comet's fair_unified, without #5961 and #5465).
//   - NewTrackConsumers: per-consumer reserved and peak bytes, and the top
//     consumers in every refusal, worded as DataFusion words them.
//   - NewLogging: one structured slog record per pool operation.
//
// # Exact under races and panics
//
// What a pool records, what its reservations hold and what upstream counts
// stay equal on every path, not only the happy one. A unified pool's record
// of what it borrowed and where each byte is (reserved, held from upstream,
// slack, in flight, owed, overcommitted) is the pool's books
// (unified_books.go):
//
//   - Close is atomic with respect to grows and splits. A reservation's size
//     and its closed state are one atomic word, so a grow the pool has
//     booked when a Close lands (on another goroutine, or from a threshold
//     callback closing the reservation it fires for) is handed back and
//     fails with ErrClosed (Grow panics); Split, Take and NewEmpty take
//     their registration slot before they move bytes, so no sibling is born
//     after the last Close. Pools keep a consumer's entry after Unregister
//     until such a grow has been handed back.
//   - A panic in Upstream.Acquire (or in a Spiller that Acquire reached
//     through Reclaim), in Upstream.Release or in a threshold callback
//     reaches the caller unchanged, after the books are settled: a grow is
//     rolled back as if it had never been asked (its reservation never adds
//     the bytes; a watch whose crossing was not delivered is re-armed); a
//     release is kept as owed, as a failed one is.
//   - A pool-level shrink of more than the pool recorded for the consumer
//     panics with Comet's wording ("Failed to release n bytes where only m
//     bytes tracked for the consumer …") and changes nothing.
//   - A unified pool's Reclaim is never entered again on the goroutine that
//     runs it: a Spiller that grows its own pool makes upstream (Spark, the
//     arbiter) spill the pool again from inside that grow, and the nested
//     Reclaim answers 0 at once (counted, logged once), so the grow gets a
//     short grant or a refusal instead of recursing until the stack
//     overflows, which Go cannot recover from.
//
// # Where bytes in flight are counted (unified pools)
//
// Admission never counts on bytes upstream still holds for the pool. A grow
// counts against the pool total from the moment it is booked; a release
// counts against the pool total, and against the share of the consumer whose
// shrink or rolled-back grow gave the bytes back, until upstream has them; a
// release that failed stays charged as owed (to the pool total and to that
// consumer's share), is never spent as slack, and goes back at the next
// sweep (a Reclaim, the last consumer leaving) or at Close.
//
// What the figures say meanwhile: Reserved (and the meter) shows committed
// grows only — a TryGrow waiting upstream is not in it (a refusal never shows
// up), a Grow is (it cannot fail) — and no longer shows a shrink whose
// release is in flight. UnifiedStats.Held is always upstream's figure;
// Acquiring, Returning and Owed say where the bytes in flight are. A TryGrow
// asks upstream for its missing bytes plus the overcommit debt (Comet's
// try_acquire); a partial grant repays the debt first and only the rest goes
// back. A Close of the pool while a TryGrow waits does not report that
// TryGrow's bytes as leaked: they were never reserved, and the TryGrow
// fails with ErrClosed after handing its grant back.
//
// # Idle pools hold nothing
//
// When a unified pool's last consumer leaves, all its slack goes back
// upstream in that call. The chunk a pool borrows in is quantised by its
// size, as Velox does: 1 MiB while reserved is under 16 MiB, 4 MiB under
// 64 MiB, then the configured chunk (never more than configured).
//
// # The process's limit: admission and ballast
//
// Upstream (Spark's per-task budget) knows nothing of the memory the rest of
// the process takes. A unified pool may be given an Admission
// (WithAdmission; the pod guard is one) that it asks before a TryGrow
// borrows from upstream; it may make the borrow wait while the process
// makes room. A grow covered by slack and Grow never ask it. A TryGrow
// inside Reservation.WithoutWaiting is growth its consumer can do without:
// an ImmediateAdmission answers it at once, refusing where the process has
// no room rather than making it wait.
//
// ReclaimToBallast is Reclaim for a process short of memory: what the
// consumers free stays held from upstream as ballast, so upstream cannot
// hand the bytes to its other consumers while the shortage lasts. Ballast is
// never slack (a trim never hands it back), but the pool's own consumers
// spend it on an admitted grow it covers, without asking upstream.
// ReleaseBallast hands it back; so do the last consumer leaving and Close,
// and a Reclaim (upstream asking because another of its consumers needs
// the bytes: it goes first there, being memory nobody uses). A pool whose
// Admission is a Lender (the pod guard holding Spark's free memory back
// from its other consumers) makes up a borrow upstream granted short with a
// loan of what the lender holds; one that is a Gatherer lends beyond its
// hold, moving other pools' ballast into it (upstream counts ballast
// against the task that keeps it: only the lender's hold can serve another
// task).
//
// Every pool reports its high-water mark and can notify threshold crossings
// (Watcher). Errors match ErrResourcesExhausted and ErrInvalidSize with
// errors.Is through every decorator; refusal messages keep DataFusion's text.
//
// # Where each job lives
//
//	pool.go, consumer.go, reservation.go   the contracts; Consumer and Reservation
//	unbounded.go, greedy.go, fair.go       the standalone pools
//	unified.go                             both unified pools: constructors, options, stats, the fair rule
//	unified_books.go                       the pool's books: figures, invariants, booking, slack policy
//	unified_grow.go                        Grow, TryGrow, Shrink and every upstream call
//	unified_reclaim.go                     Reclaim (Spark's spill), ReclaimToBallast, ReleaseBallast and Close
//	track_consumers.go, logging.go         the decorators
//	reporting.go                           the error-returning forms (Reservation.GrowReporting and
//	                                       its siblings): what Grow and Shrink only log, returned
//	meter.go                               high-water marks and thresholds
//	errors.go, leak.go, size.go            refusals in DataFusion's words, leak reports, sizes
//
// Tests share one fake Upstream, internal/fakeupstream. The in-process
// Upstream with Spark's rules (the executor budget, a task's monitor and
// spill loop) is package arbiter, which imports this one.
package pool
