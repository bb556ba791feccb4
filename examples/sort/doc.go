// Package extsort is an external sort over Arrow record batches built on the
// whole nativepool stack: the example operator of the project and the native
// half of the Spark demo.
//
// A Sorter registers one spillable pool.Consumer with any pool.Pool (a task
// pool bridged to Spark, a fair pool, a unified pool over the in-process
// arbiter.Arbiter) and charges every Arrow buffer it builds to that
// consumer through accounted allocators, so the bytes the pool is told
// about are the bytes the sorter holds, plus a bounded slack.
//
// The in-memory chunks, one per Push, are an operator's per-batch growth:
// they are charged through a pool.Account (ffi.NewAccountAllocator), which
// borrows from its own reservation of the consumer in quanta
// (Options.AccountQuantum), so most Pushes touch no shared word and the
// pool is asked about once per quantum. The account keeps at most two
// quanta reserved beyond the chunks (Stats.Slack): the pool counts them as
// reserved, and a spill request gives them back before any row is
// spilled. Everything else (the spill buffer, the merge's batches, output
// batches exported to the JVM, which the JVM frees on its own threads) is
// charged exactly, through an allocator over the consumer's first
// reservation.
//
// # Life of a sort
//
//	Push(batch)… ──▶ sorted in-memory chunks ──spill──▶ sorted run files (Arrow IPC)
//	Finish()     ──▶ k-way merge (container/heap) of runs and chunks
//	Next()…      ──▶ sorted output batches of Options.BatchRows rows
//	Close()      ──▶ everything released, run files removed
//
// Push copies each batch into one accounted buffer of (key, payload) pairs
// and sorts it in place, so the working memory of the sort is that buffer
// and nothing else. When the pool refuses a buffer (TryGrow fails inside the
// allocator), the sorter spills (self-initiated) and retries. When the pool
// asks the consumer to spill (pool.Spiller, which Spark's spill(size)
// reaches through the unified pools' Reclaim), the sorter spills
// (requested). During the merge, a spill writes the unconsumed rows of the
// in-memory chunks to disk, the way Spark's UnsafeExternalSorter spills its
// SpillableIterator.
//
// The merge holds one batch per run, charged like any other buffer, so its
// fan-in is what the pool grants: when the pool refuses the next run's
// batch, Finish merges the runs it has loaded into one longer run and goes
// on (a multi-pass merge, level by level, so that with a fan-in of k the
// merge tree is ceil(log_k(runs)) deep; Stats.MaxFanIn and MergeLevels).
// Any number of runs is merged in the memory of two batches and the spill
// buffer. Spark's own merge of an external sorter's spill files, by
// contrast, opens every file at once with 1 MiB buffers nobody accounts for.
//
// # Locking and re-entrancy
//
// The driver methods (Push, Finish, Next, Close) are called by one goroutine
// at a time; Spill may come from any goroutine at any moment, including
// from inside a driver method on the same goroutine: a Push whose buffer
// allocation calls TryGrow → Upstream.Acquire → the arbiter or Spark spills
// the requester itself → Reclaim → Spill. The sorter's state lives under one
// mutex, and the rule that makes re-entrancy safe is simple: no driver
// method holds that mutex across a call that can reach TryGrow (every
// accounted allocation happens with the mutex released, on state not yet
// published or already unpublished; a chunk is charged under the mutex,
// but its account releases the mutex while it crosses to the pool), so a
// re-entrant Spill just takes the mutex. Under the mutex the sorter only frees (Shrink, which reaches at
// most Upstream.Release, which never spills). As a last guard, Spill
// recognises a call from the goroutine that already holds the mutex and
// answers 0 instead of deadlocking. The mutex, the guard against concurrent
// driver methods and the spill counters are examples/internal/spillable's,
// which the Spark demo's streaming aggregation shares; run files are made,
// counted and removed by examples/internal/spillfile.
//
// Spill itself never allocates through the pool: it writes runs through a
// scratch buffer charged once when the sorter is made (the counterpart of
// DataFusion's sort_spill_reservation_bytes), because a spill that needs
// memory to free memory can fail exactly when it is needed (Spark's
// MemoryConsumer.spill doc: do not acquire memory from spill).
//
// # What is not charged
//
// Small, bounded Go-heap state: the merge heap (one entry per source), the
// IPC writer's flatbuffer metadata and the file readers' footers. Everything
// proportional to the data is an Arrow buffer from the accounted allocator.
package extsort
