package bridge

// The Arrow figures of the bridge (jni/API.md, "Arrow batches"):
// arrowStats0 per reservation, processArrowStats0 per process, and the
// closed allocators whose memory outlived their task ("lingering"), kept on
// the books with their owner until it is freed.

// Indices of the arrowStats0 array, in the order of arrowStatFields.
const (
	ArrowStatAllocated = iota
	ArrowStatReserved
	ArrowStatForced
	ArrowStatLiveBuffers
	ArrowStatImported
	ArrowStatImportsLive
	ArrowStatExported
	ArrowStatExportsLive
	ArrowStatPeak
	ArrowStatRefusals
	ArrowStatBatches
	ArrowStatClosed
	ArrowStatCount // length of the array
)

// arrowFigures is what arrowStats0 reports of one reservation: its
// allocator's snapshot (zero but Reserved if it never used Arrow), its live
// batch handles, and whether its allocator is closed.
type arrowFigures struct {
	ArrowSnapshot
	batches int64
	closed  bool
}

// arrowStatFields declares the arrowStats0 array (jni/API.md "Reservation
// Arrow stats"). The Java enum org.nativepool.spark.jni.ArrowStat is
// generated from it (go generate ./internal/bridge/).
var arrowStatFields = [ArrowStatCount]statField[arrowFigures]{
	ArrowStatAllocated:   {"ALLOCATED", "", "Bytes in live buffers the Go allocator made (Go-charged).", func(f arrowFigures) int64 { return f.Allocated }},
	ArrowStatReserved:    {"RESERVED", "", "The size of the Go reservation that pays for the Arrow allocator (a sibling of the reservation, of the same consumer) once the allocator exists; before, the reservation's own.", func(f arrowFigures) int64 { return f.Reserved }},
	ArrowStatForced:      {"FORCED", "", "Bytes charged past a refusal (imports that existed), cumulative.", func(f arrowFigures) int64 { return f.Forced }},
	ArrowStatLiveBuffers: {"LIVE_BUFFERS", "", "Live buffers the Go allocator made.", func(f arrowFigures) int64 { return int64(f.LiveBuffers) }},
	ArrowStatImported:    {"IMPORTED", "", "Bytes imported from Java that Go holds: tracked, charged to Java's allocator, not here.", func(f arrowFigures) int64 { return f.Imported }},
	ArrowStatImportsLive: {"IMPORTS_LIVE", "", "Imported batches Go holds.", func(f arrowFigures) int64 { return int64(f.ImportsLive) }},
	ArrowStatExported:    {"EXPORTED", "", "Bytes exported to Java and not yet released by Java.", func(f arrowFigures) int64 { return f.Exported }},
	ArrowStatExportsLive: {"EXPORTS_LIVE", "", "Exported batches Java has not released.", func(f arrowFigures) int64 { return int64(f.ExportsLive) }},
	ArrowStatPeak:        {"PEAK", "", "The highest ALLOCATED so far.", func(f arrowFigures) int64 { return f.Peak }},
	ArrowStatRefusals:    {"REFUSALS", "", "Allocations the pool refused, cumulative.", func(f arrowFigures) int64 { return f.Refusals }},
	ArrowStatBatches:     {"BATCHES", "", "Batch handles of the reservation not yet released.", func(f arrowFigures) int64 { return f.batches }},
	ArrowStatClosed:      {"CLOSED", "", "1 once the allocator is closed (explicitly, or with its reservation or task), else 0.", func(f arrowFigures) int64 { return b2i(f.closed) }},
}

// Indices of the processArrowStats0 array, in the order of
// processArrowStatFields.
const (
	ArrowPStatAllocated = iota
	ArrowPStatLiveAllocators
	ArrowPStatLiveBatches
	ArrowPStatExported
	ArrowPStatImported
	ArrowPStatRSS
	ArrowPStatGoRuntime
	ArrowPStatRSSOther
	ArrowPStatLeaks
	ArrowPStatLeakedBytes
	ArrowPStatLingering
	ArrowPStatLingeringAlloc
	ArrowPStatCount // length of the array
)

// processArrowFigures is what processArrowStats0 reports of the process.
type processArrowFigures struct {
	allocated, liveAllocators, liveBatches, exported, imported int64
	drift                                                      Drift // RSS figures, -1 each if unreadable
	leaks, leakedBytes, lingering, lingeringAllocators         int64
}

// processArrowStatFields declares the processArrowStats0 array (jni/API.md
// "Process Arrow stats"). The Java enum
// org.nativepool.spark.jni.ArrowProcessStat is generated from it (go
// generate ./internal/bridge/); a row's gauge is the name of its gauge in
// the plugin, "" for none.
var processArrowStatFields = [ArrowPStatCount]statField[processArrowFigures]{
	ArrowPStatAllocated:      {"ALLOCATED", "nativeAllocated", "Bytes in live buffers of every open Go allocator (the reservations' and those engines track).", func(f processArrowFigures) int64 { return f.allocated }},
	ArrowPStatLiveAllocators: {"LIVE_ALLOCATORS", "arrowLiveAllocators", "Open Go allocators: one per reservation that used Arrow, and those engines track.", func(f processArrowFigures) int64 { return f.liveAllocators }},
	ArrowPStatLiveBatches:    {"LIVE_BATCHES", "", "Batch handles not yet released.", func(f processArrowFigures) int64 { return f.liveBatches }},
	ArrowPStatExported:       {"EXPORTED", "", "Bytes exported to Java, not yet released by Java.", func(f processArrowFigures) int64 { return f.exported }},
	ArrowPStatImported:       {"IMPORTED", "", "Bytes imported from Java that Go still holds.", func(f processArrowFigures) int64 { return f.imported }},
	ArrowPStatRSS:            {"RSS", "rssBytes", "The process's resident set in bytes (/proc/self/statm), or -1 if it could not be read. A check to watch, never a gate: it lags allocation, counts pages, and in an executor includes the JVM (Comet #5983).", func(f processArrowFigures) int64 { return f.drift.RSS }},
	ArrowPStatGoRuntime:      {"GO_RUNTIME", "", "What the Go runtime holds mapped (heap, stacks, metadata; runtime/metrics: mapped minus released); -1 with RSS.", func(f processArrowFigures) int64 { return f.drift.GoRuntime }},
	ArrowPStatRSSOther:       {"RSS_OTHER", "", "Everything resident that is neither the Go runtime nor a Go Arrow buffer, the JVM included (RSS minus GO_RUNTIME minus ALLOCATED); -1 with RSS. A trend to watch, never a gate.", func(f processArrowFigures) int64 { return f.drift.RSSOther }},
	ArrowPStatLeaks:          {"LEAKS", "", "Allocators closed with something still held, cumulative.", func(f processArrowFigures) int64 { return f.leaks }},
	ArrowPStatLeakedBytes:    {"LEAKED_BYTES", "", "Bytes those allocators still held, cumulative.", func(f processArrowFigures) int64 { return f.leakedBytes }},
	ArrowPStatLingering:      {"LINGERING", "", "Bytes Go allocators that closed with their task still hold (exports Java has not released), until they are freed; LINGERING_ALLOCATORS of them.", func(f processArrowFigures) int64 { return f.lingering }},
	ArrowPStatLingeringAlloc: {"LINGERING_ALLOCATORS", "", "Closed Go allocators that still hold something; see LINGERING.", func(f processArrowFigures) int64 { return f.lingeringAllocators }},
}

// b2i is 1 for true and 0 for false.
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// holds reports whether a closed allocator still holds memory: Go buffers
// (pinned by exports), exports or imports.
func holds(sn ArrowSnapshot) bool {
	return sn.Allocated > 0 || sn.ExportsLive > 0 || sn.ImportsLive > 0
}

// linger keeps the closed allocator a of rh, with its owner, on the books
// until what it still holds is freed.
func (s *arrowState) linger(rh *reservationHandle, a ArrowAllocator) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.lingering == nil {
		s.mu.lingering = make(map[*reservationHandle]ArrowAllocator)
	}
	s.mu.lingering[rh] = a
}

// lingerSweep forgets the lingering allocators that hold nothing any more,
// logging each, and returns the bytes and the number of those that still
// hold something.
func (b *Bridge) lingerSweep() (bytes int64, n int) {
	s := &b.arrow
	s.mu.Lock()
	defer s.mu.Unlock()
	for rh, a := range s.mu.lingering {
		sn := a.Snapshot()
		if !holds(sn) {
			delete(s.mu.lingering, rh)
			b.logger.Info("nativepool: Arrow memory that outlived its task is freed",
				"consumer", rh.r.Consumer().String(), "task", rh.tp.taskID)
			continue
		}
		bytes += sn.Allocated + sn.Imported
		n++
	}
	return bytes, n
}

// ArrowStats returns the Arrow figures of reservation handle res laid out as
// arrowStats0 (ArrowStat*). A reservation that never used Arrow reports its
// size and zeros; no allocator is made for it.
func (b *Bridge) ArrowStats(res int64) ([]int64, error) {
	rh, err := b.reservation(res)
	if err != nil {
		return nil, err
	}
	s := &rh.arrow
	s.mu.Lock()
	a, closed, n := s.alloc, s.closed, len(s.batches)
	s.mu.Unlock()
	f := arrowFigures{batches: int64(n), closed: closed}
	if a == nil {
		f.Reserved = rh.r.Size()
	} else {
		f.ArrowSnapshot = a.Snapshot()
	}
	return statsArray(arrowStatFields[:], f), nil
}

// ProcessArrowStats returns the process's Arrow figures laid out as
// processArrowStats0 (ArrowPStat*): sums over the open allocators, the live
// batch handles, the cumulative leaks, and one sample of the process's
// resident set (ArrowRuntime.MeasureDrift; -1 when it cannot be read). RSS
// is a check, never a gate (ffi/doc.go).
func (b *Bridge) ProcessArrowStats() []int64 {
	allocs := b.arrow.allocators(false) // lingering ones are LINGERING, below
	var f processArrowFigures
	var reserved int64
	for _, o := range allocs {
		sn := o.a.Snapshot()
		f.allocated += sn.Allocated
		f.exported += sn.Exported
		f.imported += sn.Imported
		reserved += sn.Reserved
	}
	f.liveAllocators = int64(len(allocs))
	f.liveBatches = int64(b.arrow.table().Len())
	f.leaks, f.leakedBytes = b.arrowLeakTotals()
	lb, ln := b.lingerSweep()
	f.lingering, f.lingeringAllocators = lb, int64(ln)
	if b.arrow.runtime.MeasureDrift == nil {
		f.drift = Drift{RSS: -1, GoRuntime: -1, RSSOther: -1}
	} else if d, err := b.arrow.runtime.MeasureDrift(reserved, f.allocated); err == nil {
		f.drift = d
	} else {
		f.drift.RSS, f.drift.GoRuntime, f.drift.RSSOther = -1, -1, -1
	}
	return statsArray(processArrowStatFields[:], f)
}
