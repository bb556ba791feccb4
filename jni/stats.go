package jni

import "github.com/nativepool/nativepool/pool"

// Pool kinds of openPool0. The other copy is
// spark/src/main/java/org/nativepool/spark/NativeBridge.java (KIND_*).
const (
	KindFairUnified   = 0 // pool.NewFairUnified
	KindGreedyUnified = 1 // pool.NewGreedyUnified
)

// Indices of the poolStats0 array (jni/API.md). The other copy is
// spark/src/main/java/org/nativepool/spark/NativeBridge.java (STAT_*);
// change both together.
const (
	StatReserved        = 0  // bytes reserved by the pool's consumers
	StatHeld            = 1  // bytes held from Spark (granted, not yet released)
	StatSlack           = 2  // bytes held and not reserved (chunk remainder)
	StatOvercommit      = 3  // bytes reserved that Spark did not grant
	StatPeak            = 4  // high-water mark of reserved
	StatAcquireCalls    = 5  // acquireMemory upcalls
	StatReleaseCalls    = 6  // releaseMemory upcalls
	StatShortGrants     = 7  // acquires granted less than asked
	StatSpillRequests   = 8  // reclaim calls
	StatSpillBytesFreed = 9  // bytes released to Spark by reclaim calls
	StatSpillerFailures = 10 // spillers that threw, failed or freed nothing
	StatLateReleases    = 11 // shrinks after the pool closed (counted, not forwarded)
	StatCount           = 12 // length of the array
)

// Indices of the processStats0 array (jni/API.md). The other copy is
// spark/src/main/java/org/nativepool/spark/NativeBridge.java (PSTAT_*);
// change both together.
const (
	PStatLiveTasks       = 0  // task pools open now
	PStatReserved        = 1  // bytes reserved, open pools
	PStatHeld            = 2  // bytes held from Spark, open pools
	PStatSlack           = 3  // slack, open pools
	PStatOvercommit      = 4  // overcommit, open pools
	PStatPeak            = 5  // highest reserved figure of any pool, ever
	PStatUpstreamCalls   = 6  // acquire + release upcalls, cumulative
	PStatSpillRequests   = 7  // reclaim calls, cumulative
	PStatSpillBytesFreed = 8  // bytes released to Spark by reclaim calls, cumulative
	PStatLateReleases    = 9  // late releases, cumulative
	PStatLeaks           = 10 // pools closed with bytes reserved, cumulative
	PStatLeakedBytes     = 11 // bytes those pools still had reserved, cumulative
	PStatCount           = 12 // length of the array
)

// poolStatsArray lays out a unified pool's snapshot as poolStats0 returns it.
func poolStatsArray(s pool.UnifiedStats) []int64 {
	a := make([]int64, StatCount)
	a[StatReserved] = s.Reserved
	a[StatHeld] = s.Held
	a[StatSlack] = s.Slack
	a[StatOvercommit] = s.Overcommit
	a[StatPeak] = s.Peak
	a[StatAcquireCalls] = s.AcquireCalls
	a[StatReleaseCalls] = s.ReleaseCalls
	a[StatShortGrants] = s.ShortGrants
	a[StatSpillRequests] = s.ReclaimRequests
	a[StatSpillBytesFreed] = s.ReclaimedBytes
	a[StatSpillerFailures] = s.SpillerFailures
	a[StatLateReleases] = s.LateReleases
	return a
}

// ProcessStats is the process-wide view processStats0 returns: gauges over
// the task pools open now, and cumulative counters over every pool this
// process has opened. It is a plain value.
type ProcessStats struct {
	LiveTasks  int64 // task pools open now
	Reserved   int64 // gauges: sums over the open pools
	Held       int64
	Slack      int64
	Overcommit int64
	// Peak is the highest reserved figure any pool reached (open or closed).
	Peak int64
	// Cumulative since the library was loaded, closed pools included.
	UpstreamCalls   int64 // acquire + release upcalls
	SpillRequests   int64 // reclaim calls
	SpillBytesFreed int64 // bytes released to Spark by reclaim calls
	LateReleases    int64 // shrinks after a pool closed
	Leaks           int64 // pools closed with bytes still reserved
	LeakedBytes     int64 // bytes those pools still had reserved
}

// array lays the stats out as processStats0 returns them.
func (s ProcessStats) array() []int64 {
	a := make([]int64, PStatCount)
	a[PStatLiveTasks] = s.LiveTasks
	a[PStatReserved] = s.Reserved
	a[PStatHeld] = s.Held
	a[PStatSlack] = s.Slack
	a[PStatOvercommit] = s.Overcommit
	a[PStatPeak] = s.Peak
	a[PStatUpstreamCalls] = s.UpstreamCalls
	a[PStatSpillRequests] = s.SpillRequests
	a[PStatSpillBytesFreed] = s.SpillBytesFreed
	a[PStatLateReleases] = s.LateReleases
	a[PStatLeaks] = s.Leaks
	a[PStatLeakedBytes] = s.LeakedBytes
	return a
}
