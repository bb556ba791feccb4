// Package ffi charges every Arrow buffer a native operator holds to a
// pool.Reservation, for exactly as long as the buffer lives: buffers made in
// Go, buffers exported to the JVM through the Arrow C Data Interface (until
// the JVM releases them) and buffers imported from it (until Go releases
// them). It is the part of nativepool that keeps what Spark is told and what
// the process holds the same number.
//
// # The allocator
//
// Allocator is an arrow-go memory.Allocator over a reservation. Allocate and
// Reallocate take the bytes from the reservation before handing memory out;
// Free gives them back after the memory is freed. So at every instant
//
//	Allocated() ≤ charged ≤ reservation.Size()
//
// arrow-go's Allocator interface cannot return an error (apache/arrow#36186),
// so a refusal is a panic with a *AllocationError (wrapping the pool's
// pool.ErrResourcesExhausted refusal, naming the consumer and the request).
// Catch, at the operator's boundary, turns it back into an error, after the
// unwinding has released the buffers the failed step built; the operator
// spills and retries (CockroachDB's colexec and frostdb#464 do the same). By
// default the reservation holds exactly the allocated bytes; WithChunkSize
// trades a bounded slack for fewer pool calls.
//
// Every live buffer is recorded by its address in a sharded table (no
// global lock), together with what C memory needs to be freed: with a nil
// inner allocator the package allocates C memory itself (calloc, 64-byte
// aligned, as arrow-go's Mallocator) and that one record replaces
// Mallocator's sync.Map, so accounting costs nothing over the raw allocator
// (bench/RESULTS.md, "Accounted allocator"). Buffers of 128 KiB or more get
// pages of their own (mmap, munmap on Free) instead of libc's heap, whose
// dynamic mmap threshold would otherwise keep freed buffers of that size
// resident: so the resident set follows what the allocators hold, and memory
// a task frees goes back to the kernel (cdata.go, mapThreshold). This policy
// is the package's own: no mallopt, no MALLOC_* variable, the JVM's mallocs
// untouched. A double Free, or a Free of a buffer this allocator did not
// make, panics naming the address and releases nothing.
//
// # Who pays across the C Data Interface
//
// One rule, both directions: the producer's side pays while the buffers are
// alive, and the consumer's side tracks without charging.
//
// Go → JVM (ExportRecordBatch, ExportRecordReader). The buffers stay charged
// to the Go allocator that made them until the JVM calls the release callback
// of the exported struct, even after the Go operator has dropped its
// references: arrow-go retains the data until then, and this package wraps
// the release callback (bridge.h) to learn when it runs, on the JVM's thread,
// for Snapshot and the leak report. The JVM-side consequence: Arrow Java
// imports a foreign buffer with BufferAllocator.wrapForeignAllocation, which
// calls the allocator's AllocationListener.onPreAllocation and onAllocation
// with the buffer's size, and onRelease when it is released; the listener
// cannot tell foreign buffers from its own. So the BufferAllocator given to
// Data.importVectorSchemaRoot / Data.importArray for data coming from Go
// must not have a listener that reserves from Spark's TaskMemoryManager (a
// Gluten-style ManagedAllocationListener would charge the same bytes a second
// time). Use a dedicated import allocator: a RootAllocator (or a child of
// one) with AllocationListener.NOOP, or a listener that only counts for
// metrics, and a limit of Long.MAX_VALUE — the bytes already exist, so
// refusing them with an OutOfMemoryException frees nothing. Comet's
// CometArrowAllocator is such an allocator. Buffers Java allocates itself
// stay with Java's Spark-charging allocator.
//
// JVM → Go (ImportRecordBatch). The Java producer's allocator keeps its
// charge until Go releases the last reference: arrow-go calls the producer's
// release callback only then, which drops the ArrowBuf references and fires
// the Java listener's onRelease. Go tracks the bytes (Snapshot.Imported,
// leak reports) and charges nothing: ProducerCharges, the default. When the
// producer accounts nothing (a C library; a JVM root allocator without a
// Spark-charging listener), ImporterCharges makes Go the payer instead: the
// imported bytes are charged to the reservation until Go releases them, past
// the pool's limit if need be (CockroachDB's limited-then-unlimited account:
// the memory exists, refusing it would only falsify the books;
// Snapshot.Forced counts it). Choose it only when the producer does not pay.
//
// Re-exporting imported data charges nothing anew: the export pins the
// imported buffers, so the producer's charge simply lasts until both the
// JVM's release of the re-export and Go's release of the import.
//
// # Runtime truth and leaks
//
// Snapshot reads the books at any time: allocated (exact), charged, reserved,
// slack, the gap between reserved and allocated, exports and imports in
// flight, peak, refusals. Drift and MeasureDrift compare them with the
// process's resident set (/proc/self/statm) and the Go runtime's share
// (runtime/metrics, read through internal/gomem, the one package of the
// project besides pool that ffi imports) — a trend to watch, never a gate
// (Comet #5983).
//
// Close ends the allocator's task: it reports what is still held (live
// buffers with their consumer; with WithAllocationSites(true) their
// allocation stacks grouped and sorted by bytes, naming the allocating
// function; exports the JVM never released; imports still held), logs it,
// and gives the whole charge back to the reservation. It frees no memory a
// consumer might still read; a late release after Close frees the memory and
// leaves the reservation alone (Snapshot.LateFrees), and Snapshot keeps
// counting what is still held until then (package jni keeps such closed
// allocators on its process books, "lingering", until they are empty). In
// tests, defer ffitest.AssertNoLeak(t, alloc).
//
// # Threads
//
// Release callbacks run on whatever thread releases: a JVM thread the Go
// runtime has never seen, for exports. They never let a panic unwind into
// that thread (a panic of Go code run by a release, such as a double Free, is
// recovered and logged). Every type here is safe for concurrent use unless
// its doc says otherwise.
package ffi
