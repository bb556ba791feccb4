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
	StatSpillReentries
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
	StatSpillReentries:  {"SPILL_REENTRIES", "spill requests refused because the pool's spill was already running on the thread (a spiller growing its own pool); answered 0", func(s pool.UnifiedStats) int64 { return s.ReclaimReentries }},
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
	PStatGoMemoryLimit
	PStatGoBaseline
	PStatGoMapped
	PStatGoPeak
	PStatGoHeapReturns
	PStatGoHeapReturnedBytes
	PStatVmHWM
	PStatCgroupPeak
	PStatMallocMmapThreshold
	PStatMallocRetained
	PStatGoHeapInUse
	PStatGoHeapIdle
	PStatGoStacks
	PStatGoGCMeta
	PStatGoOther
	PStatLeakedResident
	PStatSpillReentries
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

	PStatGoMemoryLimit:       {"GO_MEMORY_LIMIT", "the Go runtime's soft memory limit (debug.SetMemoryLimit); 0 = none", func(s ProcessStats) int64 { return s.GoMemoryLimit }},
	PStatGoBaseline:          {"GO_BASELINE", "the idle Go runtime's mapped bytes, measured once after init (-1 = not yet)", func(s ProcessStats) int64 { return s.GoBaseline }},
	PStatGoMapped:            {"GO_MAPPED", "the Go runtime's mapped bytes now: runtime/metrics total minus heap released", func(s ProcessStats) int64 { return s.GoMapped }},
	PStatGoPeak:              {"GO_PEAK", "high-water mark of GO_MAPPED, sampled at each stats read and spill request", func(s ProcessStats) int64 { return s.GoPeak }},
	PStatGoHeapReturns:       {"GO_HEAP_RETURNS", "FreeOSMemory calls made by spill requests that found nothing to spill, cumulative", func(s ProcessStats) int64 { return s.GoHeapReturns }},
	PStatGoHeapReturnedBytes: {"GO_HEAP_RETURNED_BYTES", "idle Go heap those calls returned to the OS, cumulative", func(s ProcessStats) int64 { return s.GoHeapReturnedBytes }},
	PStatVmHWM:               {"VM_HWM", "the process's peak resident set (VmHWM of /proc/self/status); -1 = unreadable", func(s ProcessStats) int64 { return s.VmHWM }},
	PStatCgroupPeak:          {"CGROUP_PEAK", "peak usage of the process's memory cgroup (v1 memory.max_usage_in_bytes, v2 memory.peak); -1 = none", func(s ProcessStats) int64 { return s.CgroupPeak }},
	PStatMallocMmapThreshold: {"MALLOC_MMAP_THRESHOLD", "glibc M_MMAP_THRESHOLD the library set with mallopt; 0 = left to glibc", func(s ProcessStats) int64 { return s.MallocMmapThreshold }},
	PStatMallocRetained:      {"MALLOC_RETAINED", "free bytes glibc's malloc keeps in its arenas for reuse (mallinfo2 fordblks): memory freed by C code but possibly still resident; -1 = unknown", func(s ProcessStats) int64 { return s.MallocRetained }},
	PStatGoHeapInUse:         {"GO_HEAP_IN_USE", "Go heap in spans holding objects (runtime/metrics heap/objects + heap/unused); -1 = unknown", func(s ProcessStats) int64 { return s.GoHeapInUse }},
	PStatGoHeapIdle:          {"GO_HEAP_IDLE", "free Go heap not yet returned to the OS (heap/free); -1 = unknown", func(s ProcessStats) int64 { return s.GoHeapIdle }},
	PStatGoStacks:            {"GO_STACKS", "goroutine and runtime thread stacks (heap/stacks + os-stacks); -1 = unknown", func(s ProcessStats) int64 { return s.GoStacks }},
	PStatGoGCMeta:            {"GO_GC_META", "the Go runtime's GC and allocator metadata (metadata/*); -1 = unknown", func(s ProcessStats) int64 { return s.GoGCMeta }},
	PStatGoOther:             {"GO_OTHER", "the rest of the Go runtime's memory (profiling buckets, other); -1 = unknown", func(s ProcessStats) int64 { return s.GoOther }},
	PStatLeakedResident:      {"LEAKED_RESIDENT", "bytes of leaks still allocated after their task (lingering Go exports and buffers, Java leaked Arrow buffers), until freed", func(s ProcessStats) int64 { return s.LeakedResident }},
	PStatSpillReentries:      {"SPILL_REENTRIES", "spill requests refused because the pool's spill was already running on the thread, cumulative", func(s ProcessStats) int64 { return s.SpillReentries }},
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
	SpillReentries  int64 // spill requests refused: the pool's spill ran on the thread already
	Leaks           int64 // leaks at task end, every kind, one per owner (leaks.go)
	LeakedBytes     int64 // bytes those owners still held
	// LeakedResident is a gauge: bytes of leaks still allocated after their
	// task, until freed (Bridge.LeakedResident).
	LeakedResident int64

	// The process's own memory (goruntime.go, procpeak.go).
	GoMemoryLimit       int64 // the Go soft memory limit; 0 = none
	GoBaseline          int64 // the idle Go runtime's mapped bytes after init; -1 = not measured
	GoMapped            int64 // the Go runtime's mapped bytes now
	GoPeak              int64 // high-water mark of GoMapped as sampled
	GoHeapReturns       int64 // FreeOSMemory calls for spill requests that freed nothing
	GoHeapReturnedBytes int64 // heap those calls returned to the OS
	VmHWM               int64 // peak resident set; -1 = unreadable
	CgroupPeak          int64 // the memory cgroup's peak; -1 = none
	MallocMmapThreshold int64 // M_MMAP_THRESHOLD set by the library; 0 = none
	MallocRetained      int64 // free bytes in malloc's arenas (mallinfo2 fordblks); -1 = unknown
	// GoMapped split by owner (gomem.Classes); each -1 when unknown.
	GoHeapInUse int64
	GoHeapIdle  int64
	GoStacks    int64
	GoGCMeta    int64
	GoOther     int64
}

// Array lays the stats out as processStats0 returns them.
func (s ProcessStats) Array() []int64 {
	return statsArray(processStatFields[:], s)
}
