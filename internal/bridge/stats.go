package bridge

import "github.com/nativepool/nativepool/pool"

// Pool kinds of openPool0. The other copy is
// spark/src/main/java/org/nativepool/spark/NativeBridge.java (KIND_*).
const (
	KindFairUnified   = 0 // pool.NewFairUnified
	KindGreedyUnified = 1 // pool.NewGreedyUnified
)

// A statField is one figure of a stats array that the bridge hands to Java:
// its name (upper snake case, as in jni/API.md and the Java enum constant),
// what it counts, and how it is read from the Go value the array is built
// from. A table of statFields indexed by the Stat* constants is the one
// declaration of an array: the builder (statsArray), jni/API.md and the Java
// enum (checked by TestStatTablesMatchJavaEnums and
// TestStatTablesMatchAPIMD) all follow it.
type statField[S any] struct {
	name string
	doc  string
	get  func(S) int64
}

// statsArray lays s out as the table says: element i is fields[i].get(s).
func statsArray[S any](fields []statField[S], s S) []int64 {
	a := make([]int64, len(fields))
	for i, f := range fields {
		a[i] = f.get(s)
	}
	return a
}

// Indices of the poolStats0 array, in the order of poolStatFields.
const (
	StatReserved = iota
	StatHeld
	StatSlack
	StatOvercommit
	StatPeak
	StatAcquireCalls
	StatReleaseCalls
	StatShortGrants
	StatSpillRequests
	StatSpillBytesFreed
	StatSpillerFailures
	StatLateReleases
	StatCount // length of the array
)

// poolStatFields declares the poolStats0 array (jni/API.md "Pool stats").
// The Java copy is the enum
// spark/src/main/java/org/nativepool/spark/PoolStat.java, checked against
// this table by TestStatTablesMatchJavaEnums.
var poolStatFields = [StatCount]statField[pool.UnifiedStats]{
	StatReserved:        {"RESERVED", "bytes reserved by the pool's consumers", func(s pool.UnifiedStats) int64 { return s.Reserved }},
	StatHeld:            {"HELD", "bytes held from Spark (granted, not yet released)", func(s pool.UnifiedStats) int64 { return s.Held }},
	StatSlack:           {"SLACK", "bytes held and not reserved (chunk remainder)", func(s pool.UnifiedStats) int64 { return s.Slack }},
	StatOvercommit:      {"OVERCOMMIT", "bytes reserved that Spark did not grant", func(s pool.UnifiedStats) int64 { return s.Overcommit }},
	StatPeak:            {"PEAK", "high-water mark of reserved", func(s pool.UnifiedStats) int64 { return s.Peak }},
	StatAcquireCalls:    {"ACQUIRE_CALLS", "acquireMemory upcalls", func(s pool.UnifiedStats) int64 { return s.AcquireCalls }},
	StatReleaseCalls:    {"RELEASE_CALLS", "releaseMemory upcalls", func(s pool.UnifiedStats) int64 { return s.ReleaseCalls }},
	StatShortGrants:     {"SHORT_GRANTS", "acquires granted less than asked", func(s pool.UnifiedStats) int64 { return s.ShortGrants }},
	StatSpillRequests:   {"SPILL_REQUESTS", "reclaim calls (Spark's spill requests)", func(s pool.UnifiedStats) int64 { return s.ReclaimRequests }},
	StatSpillBytesFreed: {"SPILL_BYTES_FREED", "bytes released to Spark by reclaim calls", func(s pool.UnifiedStats) int64 { return s.ReclaimedBytes }},
	StatSpillerFailures: {"SPILLER_FAILURES", "spillers that threw, failed or freed nothing", func(s pool.UnifiedStats) int64 { return s.SpillerFailures }},
	StatLateReleases:    {"LATE_RELEASES", "shrinks after the pool closed (counted, not forwarded)", func(s pool.UnifiedStats) int64 { return s.LateReleases }},
}

// Indices of the processStats0 array, in the order of processStatFields.
const (
	PStatLiveTasks = iota
	PStatReserved
	PStatHeld
	PStatSlack
	PStatOvercommit
	PStatPeak
	PStatUpstreamCalls
	PStatSpillRequests
	PStatSpillBytesFreed
	PStatLateReleases
	PStatLeaks
	PStatLeakedBytes
	PStatCount // length of the array
)

// processStatFields declares the processStats0 array (jni/API.md "Process
// stats"). The Java copy is the enum
// spark/src/main/java/org/nativepool/spark/ProcessStat.java, checked against
// this table by TestStatTablesMatchJavaEnums.
var processStatFields = [PStatCount]statField[ProcessStats]{
	PStatLiveTasks:       {"LIVE_TASKS", "task pools open now", func(s ProcessStats) int64 { return s.LiveTasks }},
	PStatReserved:        {"RESERVED", "bytes reserved, open pools", func(s ProcessStats) int64 { return s.Reserved }},
	PStatHeld:            {"HELD", "bytes held from Spark, open pools", func(s ProcessStats) int64 { return s.Held }},
	PStatSlack:           {"SLACK", "slack, open pools", func(s ProcessStats) int64 { return s.Slack }},
	PStatOvercommit:      {"OVERCOMMIT", "overcommit, open pools", func(s ProcessStats) int64 { return s.Overcommit }},
	PStatPeak:            {"PEAK", "highest reserved figure of any pool, ever", func(s ProcessStats) int64 { return s.Peak }},
	PStatUpstreamCalls:   {"UPSTREAM_CALLS", "acquire + release upcalls, cumulative", func(s ProcessStats) int64 { return s.UpstreamCalls }},
	PStatSpillRequests:   {"SPILL_REQUESTS", "reclaim calls, cumulative", func(s ProcessStats) int64 { return s.SpillRequests }},
	PStatSpillBytesFreed: {"SPILL_BYTES_FREED", "bytes released to Spark by reclaim calls, cumulative", func(s ProcessStats) int64 { return s.SpillBytesFreed }},
	PStatLateReleases:    {"LATE_RELEASES", "late releases, cumulative", func(s ProcessStats) int64 { return s.LateReleases }},
	PStatLeaks:           {"LEAKS", "pools closed with bytes reserved, cumulative", func(s ProcessStats) int64 { return s.Leaks }},
	PStatLeakedBytes:     {"LEAKED_BYTES", "bytes those pools still had reserved, cumulative", func(s ProcessStats) int64 { return s.LeakedBytes }},
}

// poolStatsArray lays out a unified pool's snapshot as poolStats0 returns it.
func poolStatsArray(s pool.UnifiedStats) []int64 {
	return statsArray(poolStatFields[:], s)
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

// Array lays the stats out as processStats0 returns them.
func (s ProcessStats) Array() []int64 {
	return statsArray(processStatFields[:], s)
}
