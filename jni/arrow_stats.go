package jni

import "github.com/nativepool/nativepool/ffi"

// The Arrow figures of the bridge (jni/API.md, "Arrow batches"):
// arrowStats0 per reservation, processArrowStats0 per process, and the
// closed allocators whose memory outlived their task ("lingering"), kept on
// the books with their owner until it is freed.

// Indices of the arrowStats0 array (jni/API.md). The other copy is
// spark/src/main/java/org/nativepool/spark/NativeBridge.java
// (ARROW_STAT_*); change both together.
const (
	ArrowStatAllocated   = 0  // bytes in live buffers the reservation's allocator made
	ArrowStatReserved    = 1  // the reservation's size
	ArrowStatForced      = 2  // bytes charged past a refusal, cumulative
	ArrowStatLiveBuffers = 3  // live buffers the allocator made
	ArrowStatImported    = 4  // bytes imported from Java that Go still holds (tracked)
	ArrowStatImportsLive = 5  // imported batches Go still holds
	ArrowStatExported    = 6  // bytes exported to Java, not yet released by Java
	ArrowStatExportsLive = 7  // exported batches not yet released by Java
	ArrowStatPeak        = 8  // highest allocated figure
	ArrowStatRefusals    = 9  // allocations the pool refused, cumulative
	ArrowStatBatches     = 10 // batch handles of the reservation not yet released
	ArrowStatClosed      = 11 // 1 once the allocator is closed
	ArrowStatCount       = 12 // length of the array
)

// Indices of the processArrowStats0 array (jni/API.md). The other copy is
// spark/src/main/java/org/nativepool/spark/NativeBridge.java
// (ARROW_PSTAT_*); change both together.
const (
	ArrowPStatAllocated      = 0  // bytes in live buffers of every open allocator
	ArrowPStatLiveAllocators = 1  // open allocators
	ArrowPStatLiveBatches    = 2  // batch handles not yet released
	ArrowPStatExported       = 3  // bytes exported to Java, not yet released by Java
	ArrowPStatImported       = 4  // bytes imported from Java that Go still holds
	ArrowPStatRSS            = 5  // resident set of the process (-1 if unreadable)
	ArrowPStatGoRuntime      = 6  // what the Go runtime holds mapped
	ArrowPStatUnexplained    = 7  // RSS - GoRuntime - Allocated
	ArrowPStatLeaks          = 8  // allocators closed with something held, cumulative
	ArrowPStatLeakedBytes    = 9  // bytes those allocators held, cumulative
	ArrowPStatLingering      = 10 // bytes closed allocators still hold (outlived their task)
	ArrowPStatLingeringAlloc = 11 // closed allocators that still hold something
	ArrowPStatCount          = 12 // length of the array
)

// holds reports whether a closed allocator still holds memory: Go buffers
// (pinned by exports), exports or imports.
func holds(sn ffi.Snapshot) bool {
	return sn.Allocated > 0 || sn.ExportsLive > 0 || sn.ImportsLive > 0
}

// linger keeps the closed allocator a of rh on the books until what it still
// holds is freed (DESIGN.md difference 10: bytes still resident stay on the
// books until freed).
func (s *arrowState) linger(rh *reservationHandle, a *ffi.Allocator) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.lingering == nil {
		s.mu.lingering = make(map[*reservationHandle]*ffi.Allocator)
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
	out := make([]int64, ArrowStatCount)
	out[ArrowStatBatches] = int64(n)
	if closed {
		out[ArrowStatClosed] = 1
	}
	if a == nil {
		out[ArrowStatReserved] = rh.r.Size()
		return out, nil
	}
	sn := a.Snapshot()
	out[ArrowStatAllocated] = sn.Allocated
	out[ArrowStatReserved] = sn.Reserved
	out[ArrowStatForced] = sn.Forced
	out[ArrowStatLiveBuffers] = int64(sn.LiveBuffers)
	out[ArrowStatImported] = sn.Imported
	out[ArrowStatImportsLive] = int64(sn.ImportsLive)
	out[ArrowStatExported] = sn.Exported
	out[ArrowStatExportsLive] = int64(sn.ExportsLive)
	out[ArrowStatPeak] = sn.Peak
	out[ArrowStatRefusals] = sn.Refusals
	return out, nil
}

// ProcessArrowStats returns the process's Arrow figures laid out as
// processArrowStats0 (ArrowPStat*): sums over the open allocators, the live
// batch handles, the cumulative leaks, and one sample of the process's
// resident set (ffi.MeasureDrift; -1 when it cannot be read). RSS is a
// check, never a gate (ffi/doc.go).
func (b *Bridge) ProcessArrowStats() []int64 {
	b.arrow.mu.Lock()
	allocs := make([]*ffi.Allocator, 0, len(b.arrow.mu.live))
	for _, a := range b.arrow.mu.live {
		allocs = append(allocs, a)
	}
	b.arrow.mu.Unlock()
	out := make([]int64, ArrowPStatCount)
	var reserved int64
	for _, a := range allocs {
		sn := a.Snapshot()
		out[ArrowPStatAllocated] += sn.Allocated
		out[ArrowPStatExported] += sn.Exported
		out[ArrowPStatImported] += sn.Imported
		reserved += sn.Reserved
	}
	out[ArrowPStatLiveAllocators] = int64(len(allocs))
	out[ArrowPStatLiveBatches] = int64(b.arrow.table().Len())
	out[ArrowPStatLeaks] = b.arrow.leaks.Load()
	out[ArrowPStatLeakedBytes] = b.arrow.leakedBytes.Load()
	lb, ln := b.lingerSweep()
	out[ArrowPStatLingering], out[ArrowPStatLingeringAlloc] = lb, int64(ln)
	if d, err := ffi.MeasureDrift(reserved, out[ArrowPStatAllocated]); err == nil {
		out[ArrowPStatRSS] = d.RSS
		out[ArrowPStatGoRuntime] = d.GoRuntime
		out[ArrowPStatUnexplained] = d.Unexplained
	} else {
		out[ArrowPStatRSS], out[ArrowPStatGoRuntime], out[ArrowPStatUnexplained] = -1, -1, -1
	}
	return out
}
