// Package pool accounts memory for a native query engine running inside a
// Spark executor: DataFusion's memory-pool semantics ported to Go, the pools
// of Apache DataFusion Comet that borrow from Spark, and the fixes those
// pools are known to need.
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
//	Consumer ──Register──▶ Reservation ─┬─ Split / Take / NewEmpty (same registration, no pool call)
//	                                    │
//	                     registration (one Register, one Unregister per registration)
//	                                    │
//	                                    ▼
//	                                  Pool  ◀── decorators: TrackConsumers, Logging
//	                                    │
//	         unified pools only ──────▶ Upstream (Spark's TaskMemoryManager over JNI,
//	                                    │          or ExecutorArbiter in process)
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
// Every pool reports its high-water mark and can notify threshold crossings
// (Watcher). Errors match ErrResourcesExhausted and ErrInvalidSize with
// errors.Is through every decorator; refusal messages keep DataFusion's text.
package pool
