package guard

import (
	"fmt"
	"time"

	"github.com/nativepool/nativepool/pool"
)

// Sample is what the guard knows of the process at one instant.
type Sample struct {
	// Time is when the figures were read.
	Time time.Time
	// Limit is the memory the kernel (or a resource manager) kills the
	// process at, in bytes; -1 when there is none, and the guard stands by.
	Limit int64
	// Unreclaimable is what the process's memory group holds that the
	// kernel cannot drop to stay under Limit: anonymous memory, shared
	// memory, kernel stacks and socket buffers, and dirty or writeback page
	// cache. Clean page cache (spill files already written) never counts.
	Unreclaimable int64
	// Native is the part of Unreclaimable the native side owns: the Go
	// runtime's memory and the buffers of the accounted allocators.
	Native int64
	// Held is what the native pools hold from Spark: their claim, resident
	// or not yet. Ballast is the part of Held kept back (not resident).
	Held, Ballast int64
	// OffHeapBallast is what the guard holds of Spark's off-heap memory as
	// a whole (Runtime.OffHeap): free memory kept from every consumer, not
	// resident. The guard sets it; a Source leaves it 0.
	OffHeapBallast int64
	// OffHeapFree is what is free of Spark's off-heap memory, held by
	// nobody, while the guard holds some of it (0 otherwise): what Spark's
	// consumers may still grow into. The guard sets it.
	OffHeapFree int64
	// Dirty is the part of Unreclaimable that is file pages dirty or being
	// written back (spill files not yet on disk): it becomes reclaimable
	// once written, and a reaction starts that writeback.
	Dirty int64
}

// Headroom is what the process may still take before the kill: Limit −
// Unreclaimable.
func (s Sample) Headroom() int64 { return s.Limit - s.Unreclaimable }

// NonNative is what is resident and unreclaimable outside native memory:
// the JVM (heap, metaspace, threads, direct buffers, Netty), page cache
// being written, the kernel's share. The native side cannot make it shrink;
// it can only give way to it.
func (s Sample) NonNative() int64 { return max(0, s.Unreclaimable-s.Native) }

// Claim is the native side's claim on memory: what its pools hold from
// Spark, less the ballast they keep back (freed, not resident).
func (s Sample) Claim() int64 { return max(0, s.Held-s.Ballast) }

// Config is the guard's policy.
type Config struct {
	// Reserve is the headroom the guard keeps under the limit: what absorbs
	// a burst faster than any reaction (a Netty chunk, a direct buffer).
	// Native admission keeps it free, and a reaction starts when headroom
	// falls below it.
	Reserve int64
	// AdmitWait is the longest a native borrow that would eat into the
	// reserve waits for the guard to make room before it is admitted all
	// the same; 0 is DefaultAdmitWait.
	AdmitWait time.Duration
}

// DefaultAdmitWait is the default Config.AdmitWait: long enough for a
// reaction to spill a sort's buffers and return them (tens to hundreds of
// milliseconds), short enough that a task whose consumers cannot spill is
// only slowed.
const DefaultAdmitWait = 500 * time.Millisecond

func (c Config) admitWait() time.Duration {
	if c.AdmitWait > 0 {
		return c.AdmitWait
	}
	return DefaultAdmitWait
}

// DefaultReserve is the reserve for a limit: 2% of it, at least 32 MiB.
// 32 MiB is two of the 16 MiB Netty chunks Spark's shuffle and spill
// readers allocate at once (the bursts measured killing a pod at its
// survival point); 2% scales it with larger executors, whose bursts come
// from more threads at once.
func DefaultReserve(limit int64) int64 {
	return max(32<<20, limit/50)
}

// The sampling period falls as headroom shrinks: a burst of tens of MiB
// takes tens of milliseconds to touch, so near the limit the guard looks
// every few milliseconds, and far from it rarely.
const (
	farPeriod   = 200 * time.Millisecond // headroom ≥ 4 reserves
	nearPeriod  = 50 * time.Millisecond  // headroom ≥ 2 reserves
	closePeriod = 5 * time.Millisecond   // below
)

// Period is how long the guard may wait before its next sample, given the
// last one.
func (c Config) Period(s Sample) time.Duration {
	if s.Limit < 0 {
		return farPeriod
	}
	switch h := s.Headroom(); {
	case h >= 4*c.Reserve:
		return farPeriod
	case h >= 2*c.Reserve:
		return nearPeriod
	}
	return closePeriod
}

// WriteBack says whether the dirty page cache in s is to be written back
// now: at least a quarter reserve of it, with the headroom under four
// reserves (where the guard samples often). A memory group cannot reclaim
// a dirty page, and the kernel writes dirty pages back on its own only
// after about 30 s, or past a share of the whole machine's memory that a
// pod's limit never reaches; so a job that spills keeps tens of MiB of its
// spill files dirty, charged to the pod, unless someone writes them.
// Near the limit that someone is the guard, before the headroom is short
// rather than once it is: far from the limit, the files stay where the
// kernel's schedule leaves them.
func (c Config) WriteBack(s Sample) bool {
	return s.Limit >= 0 && s.Dirty >= c.Reserve/4 && s.Headroom() < 4*c.Reserve
}

// Footprint is what native memory takes of the limit: the larger of what
// is resident of it and what its pools claim (a claim not yet touched will
// be; resident memory beyond the claim is the runtime's own and garbage not
// yet returned).
func (s Sample) Footprint() int64 { return max(s.Native, s.Claim()) }

// band is the margin between admission and reaction: borrows keep the
// headroom at a reserve and a half, a reaction starts under one reserve and
// restores a reserve and a half. Without it native memory would grow to the
// very point where a reaction starts, and every small move of the JVM's
// memory would be an episode.
func (c Config) band() int64 { return c.Reserve / 2 }

// Admit is the check of a native borrow of n bytes against a sample, with
// pending bytes admitted since it was taken: native memory's footprint
// after the borrow, plus everything resident outside it, must leave a
// reserve and a half free under the limit. When the JVM's own memory
// grows, native memory's allowance shrinks by the same bytes. It returns
// nil, or why the borrow must wait.
func (c Config) Admit(s Sample, pending, n int64) error {
	if s.Limit < 0 {
		return nil
	}
	room := s.Limit - c.Reserve - c.band() - s.NonNative()
	native := s.Footprint() + pending
	if native+n <= room {
		return nil
	}
	return fmt.Errorf("the pod guard keeps %s free under the %s limit: %s is resident outside native memory, and native memory would take %s",
		pool.HumanReadableSize(c.Reserve), pool.HumanReadableSize(s.Limit),
		pool.HumanReadableSize(s.NonNative()), pool.HumanReadableSize(native+n))
}

// Shortfall is what native memory must give up for borrows of n bytes to
// fit (borrows admitted since the sample and borrows waiting): 0 when they
// fit or there is no limit.
func (c Config) Shortfall(s Sample, n int64) int64 {
	if s.Limit < 0 || n <= 0 {
		return 0
	}
	room := s.Limit - c.Reserve - c.band() - s.NonNative()
	return max(0, s.Footprint()+n-room)
}

// Deficit is what the process must give up to have a reserve and a half
// free again (the headroom admission keeps); 0 when the headroom is at
// least the reserve.
func (c Config) Deficit(s Sample) int64 {
	if s.Limit < 0 || s.Headroom() >= c.Reserve {
		return 0
	}
	return c.Reserve + c.band() - s.Headroom()
}

// Releasable is how much of the pools' ballast may go back to Spark
// without taking the headroom below two reserves, were Spark's consumers to
// grow into all of it and into what is free of Spark's off-heap memory
// besides (OffHeapFree): none while memory is still short.
func (c Config) Releasable(s Sample) int64 {
	if s.Ballast == 0 {
		return 0
	}
	if s.Limit < 0 {
		return s.Ballast
	}
	return min(s.Ballast, max(0, s.Headroom()-2*c.Reserve-s.OffHeapFree))
}

// OffHeapReleasable is how much of the guard's own off-heap ballast may go
// back to Spark without taking the headroom below a reserve and a half
// (where native admission keeps it, and where an episode ends), were
// Spark's consumers to grow into all of it and into what is free besides
// (OffHeapFree): none while memory is still short. Spark's consumers are
// admitted by nobody, so it counts on them taking it all.
func (c Config) OffHeapReleasable(s Sample) int64 {
	if s.OffHeapBallast == 0 {
		return 0
	}
	if s.Limit < 0 {
		return s.OffHeapBallast
	}
	return min(s.OffHeapBallast, max(0, s.Headroom()-c.Reserve-c.band()-s.OffHeapFree))
}
