package bridge

import (
	"time"

	"github.com/nativepool/nativepool/internal/guard"
	"github.com/nativepool/nativepool/pool"
)

//go:generate go run ../javaconsts/cmd/javaconsts -root ../..

// A statField is one figure of a stats array that the bridge hands to Java:
// its name (upper snake case, as in jni/API.md and the Java enum constant),
// the name of the plugin's Dropwizard gauge that shows it ("" for none;
// only the process-wide tables have gauges), what it counts (a sentence:
// it becomes the Java constant's Javadoc), and how it is read from the Go
// value the array is built from. A table of statFields indexed by the
// Stat* constants is the one declaration of an array: the builder
// (statsArray) and jni/API.md (TestStatTablesMatchAPIMD) follow it, and its
// Java enum is generated from it (internal/javaconsts; go generate
// ./internal/bridge/).
type statField[S any] struct {
	name  string
	gauge string
	doc   string
	get   func(S) int64
}

// A StatTable is one stats array as code generation and documentation see
// it: the native that returns it, its Java enum, and its rows in index
// order. StatTables returns them.
type StatTable struct {
	Native string    // the JNI native that returns the array, e.g. "poolStats0"
	Enum   string    // the Java enum of package org.nativepool.spark.jni, e.g. "PoolStat"
	Doc    string    // what the array holds: the enum's Javadoc, a sentence or more
	Source string    // the Go declaration, e.g. "poolStatFields in internal/bridge/stats.go"
	Gauges bool      // whether the rows carry gauge names (the enum's gaugeName())
	Rows   []StatRow // index order: the enum's ordinal is the array index
}

// A StatRow is one element of a stats array.
type StatRow struct {
	Name  string // upper snake case: the Java enum constant
	Gauge string // the plugin's gauge name, "" for none (Java: null)
	Doc   string // what it counts, a sentence
}

// statRows returns the rows of a table of statFields.
func statRows[S any](fields []statField[S]) []StatRow {
	rows := make([]StatRow, len(fields))
	for i, f := range fields {
		rows[i] = StatRow{Name: f.name, Gauge: f.gauge, Doc: f.doc}
	}
	return rows
}

// StatTables returns the four stats arrays the natives return, in the order
// of jni/API.md: poolStats0, processStats0, arrowStats0, processArrowStats0.
// The result is freshly built; callers may keep or change it.
func StatTables() []StatTable {
	return []StatTable{
		{
			Native: "poolStats0", Enum: "PoolStat", Source: "poolStatFields in internal/bridge/stats.go",
			Doc:  "The figures of one task pool, as poolStats0 returns them: the ordinal is the index in the array.",
			Rows: statRows(poolStatFields[:]),
		},
		{
			Native: "processStats0", Enum: "ProcessStat", Source: "processStatFields in internal/bridge/stats.go", Gauges: true,
			Doc:  "The process-wide figures of the Go side, as processStats0 returns them: the ordinal is the index in the array. Each is also a Dropwizard gauge of the plugin's metric source, named by gaugeName().",
			Rows: statRows(processStatFields[:]),
		},
		{
			Native: "arrowStats0", Enum: "ArrowStat", Source: "arrowStatFields in internal/bridge/arrow_stats.go",
			Doc:  "The Arrow figures of one reservation's Go allocator, as arrowStats0 returns them: the ordinal is the index in the array.",
			Rows: statRows(arrowStatFields[:]),
		},
		{
			Native: "processArrowStats0", Enum: "ArrowProcessStat", Source: "processArrowStatFields in internal/bridge/arrow_stats.go", Gauges: true,
			Doc:  "The Go side's Arrow figures over the whole process, as processArrowStats0 returns them: the ordinal is the index in the array. Those with a gaugeName() are Dropwizard gauges of the plugin's metric source.",
			Rows: statRows(processArrowStatFields[:]),
		},
	}
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
// The Java enum org.nativepool.spark.jni.PoolStat is generated from it.
var poolStatFields = [StatCount]statField[pool.UnifiedStats]{
	StatReserved:        {"RESERVED", "", "Bytes reserved by the pool's consumers.", func(s pool.UnifiedStats) int64 { return s.Reserved }},
	StatHeld:            {"HELD", "", "Bytes held from Spark (granted and not yet released).", func(s pool.UnifiedStats) int64 { return s.Held }},
	StatSlack:           {"SLACK", "", "Bytes held from Spark and not reserved (chunk remainders).", func(s pool.UnifiedStats) int64 { return s.Slack }},
	StatOvercommit:      {"OVERCOMMIT", "", "Bytes reserved that Spark did not grant.", func(s pool.UnifiedStats) int64 { return s.Overcommit }},
	StatPeak:            {"PEAK", "", "The highest reserved figure so far.", func(s pool.UnifiedStats) int64 { return s.Peak }},
	StatAcquireCalls:    {"ACQUIRE_CALLS", "", "Upcalls to Upstream.acquireMemory.", func(s pool.UnifiedStats) int64 { return s.AcquireCalls }},
	StatReleaseCalls:    {"RELEASE_CALLS", "", "Upcalls to Upstream.releaseMemory.", func(s pool.UnifiedStats) int64 { return s.ReleaseCalls }},
	StatShortGrants:     {"SHORT_GRANTS", "", "Acquires Spark answered with less than asked.", func(s pool.UnifiedStats) int64 { return s.ShortGrants }},
	StatSpillRequests:   {"SPILL_REQUESTS", "", "Reclaim calls (Spark's spill requests).", func(s pool.UnifiedStats) int64 { return s.ReclaimRequests }},
	StatSpillBytesFreed: {"SPILL_BYTES_FREED", "", "Bytes released to Spark by reclaim calls.", func(s pool.UnifiedStats) int64 { return s.ReclaimedBytes }},
	StatSpillerFailures: {"SPILLER_FAILURES", "", "Spillers that threw, failed or freed nothing.", func(s pool.UnifiedStats) int64 { return s.SpillerFailures }},
	StatLateReleases:    {"LATE_RELEASES", "", "Releases after the task's pool was closed (counted, not forwarded).", func(s pool.UnifiedStats) int64 { return s.LateReleases }},
	StatSpillReentries:  {"SPILL_REENTRIES", "", "Spill requests answered with 0 at once because the pool's spill was already running on the calling thread (a spiller growing its own pool).", func(s pool.UnifiedStats) int64 { return s.ReclaimReentries }},
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
	PStatGuardLimit
	PStatGuardUnreclaimable
	PStatGuardHeadroom
	PStatGuardReserve
	PStatGuardBallast
	PStatGuardEpisodes
	PStatGuardSpilledBytes
	PStatGuardReleasedBytes
	PStatGuardReactionMicros
	PStatGuardWaits
	PStatGuardAdmittedShort
	PStatGuardWakes
	PStatGuardRefusedNow
	PStatGuardOffHeapBallast
	PStatGuardOffHeapTakenBytes
	PStatGuardOffHeapGatheredBytes
	PStatCount // length of the array
)

// processStatFields declares the processStats0 array (jni/API.md "Process
// stats"). The Java enum org.nativepool.spark.jni.ProcessStat is generated
// from it; each row's gauge is the name of its gauge in the plugin.
var processStatFields = [PStatCount]statField[ProcessStats]{
	PStatLiveTasks:       {"LIVE_TASKS", "liveTasks", "Task pools open now.", func(s ProcessStats) int64 { return s.LiveTasks }},
	PStatReserved:        {"RESERVED", "reserved", "Bytes reserved, open pools.", func(s ProcessStats) int64 { return s.Reserved }},
	PStatHeld:            {"HELD", "heldFromSpark", "Bytes held from Spark, open pools.", func(s ProcessStats) int64 { return s.Held }},
	PStatSlack:           {"SLACK", "slack", "Slack, open pools.", func(s ProcessStats) int64 { return s.Slack }},
	PStatOvercommit:      {"OVERCOMMIT", "overcommit", "Overcommit, open pools.", func(s ProcessStats) int64 { return s.Overcommit }},
	PStatPeak:            {"PEAK", "peak", "The highest reserved figure of any pool, ever.", func(s ProcessStats) int64 { return s.Peak }},
	PStatUpstreamCalls:   {"UPSTREAM_CALLS", "upstreamCalls", "Acquire plus release upcalls, cumulative.", func(s ProcessStats) int64 { return s.UpstreamCalls }},
	PStatSpillRequests:   {"SPILL_REQUESTS", "sparkSpillRequests", "Reclaim calls (Spark's spill requests), cumulative.", func(s ProcessStats) int64 { return s.SpillRequests }},
	PStatSpillBytesFreed: {"SPILL_BYTES_FREED", "sparkSpillBytesFreed", "Bytes released to Spark by reclaim calls, cumulative.", func(s ProcessStats) int64 { return s.SpillBytesFreed }},
	PStatLateReleases:    {"LATE_RELEASES", "lateReleases", "Releases after a pool closed, cumulative.", func(s ProcessStats) int64 { return s.LateReleases }},
	PStatLeaks:           {"LEAKS", "leaks", "Leaks at task end, cumulative: every kind, one per owner (an unclosed reservation, a Go Arrow allocator with buffers, exports Java still held, Java Arrow buffers); see LeakKind.", func(s ProcessStats) int64 { return s.Leaks }},
	PStatLeakedBytes:     {"LEAKED_BYTES", "leakedBytes", "Bytes those owners still held at their task's end, cumulative.", func(s ProcessStats) int64 { return s.LeakedBytes }},

	PStatGoMemoryLimit:             {"GO_MEMORY_LIMIT", "goMemoryLimit", "The Go runtime's soft memory limit (debug.SetMemoryLimit, from spark.nativepool.goMemoryLimit); 0 = none.", func(s ProcessStats) int64 { return s.GoMemoryLimit }},
	PStatGoBaseline:                {"GO_BASELINE", "goBaseline", "The idle Go runtime's mapped bytes, measured once when the library loaded; -1 = not yet.", func(s ProcessStats) int64 { return s.GoBaseline }},
	PStatGoMapped:                  {"GO_MAPPED", "goMapped", "The Go runtime's mapped bytes now (runtime/metrics: total minus heap released).", func(s ProcessStats) int64 { return s.GoMapped }},
	PStatGoPeak:                    {"GO_PEAK", "goPeak", "High-water mark of GO_MAPPED, sampled at each stats read and each spill request.", func(s ProcessStats) int64 { return s.GoPeak }},
	PStatGoHeapReturns:             {"GO_HEAP_RETURNS", "goHeapReturns", "FreeOSMemory calls made by spill requests that found nothing to spill, cumulative.", func(s ProcessStats) int64 { return s.GoHeapReturns }},
	PStatGoHeapReturnedBytes:       {"GO_HEAP_RETURNED_BYTES", "goHeapReturnedBytes", "Idle Go heap those calls returned to the OS, cumulative bytes.", func(s ProcessStats) int64 { return s.GoHeapReturnedBytes }},
	PStatVmHWM:                     {"VM_HWM", "vmHWM", "The process's peak resident set (VmHWM of /proc/self/status); -1 = unreadable.", func(s ProcessStats) int64 { return s.VmHWM }},
	PStatCgroupPeak:                {"CGROUP_PEAK", "cgroupPeak", "Peak usage of the process's memory cgroup (v1 memory.max_usage_in_bytes, v2 memory.peak); -1 = not in one, or in one shared with processes other than its own ancestors and descendants.", func(s ProcessStats) int64 { return s.CgroupPeak }},
	PStatMallocMmapThreshold:       {"MALLOC_MMAP_THRESHOLD", "mallocMmapThreshold", "The glibc M_MMAP_THRESHOLD the library set with mallopt (from spark.nativepool.mallocMmapThreshold); 0 = left to glibc.", func(s ProcessStats) int64 { return s.MallocMmapThreshold }},
	PStatMallocRetained:            {"MALLOC_RETAINED", "mallocRetained", "Free bytes glibc's malloc keeps in its arenas for reuse (mallinfo2 fordblks): memory C code freed that was not returned to the OS and may still be resident; -1 = unknown. Up to a second old: mallinfo2 locks every malloc arena, so it runs at most once a second however often the stats are read.", func(s ProcessStats) int64 { return s.MallocRetained }},
	PStatGoHeapInUse:               {"GO_HEAP_IN_USE", "goHeapInUse", "Go heap in spans that hold objects: live objects, dead ones not yet swept, and the unused tails of those spans (runtime/metrics heap/objects + heap/unused); -1 = unknown.", func(s ProcessStats) int64 { return s.GoHeapInUse }},
	PStatGoHeapIdle:                {"GO_HEAP_IDLE", "goHeapIdle", "Free Go heap the runtime has not returned to the OS yet (heap/free); -1 = unknown.", func(s ProcessStats) int64 { return s.GoHeapIdle }},
	PStatGoStacks:                  {"GO_STACKS", "goStacks", "Goroutine stacks and the Go runtime's own thread stacks (heap/stacks + os-stacks); -1 = unknown.", func(s ProcessStats) int64 { return s.GoStacks }},
	PStatGoGCMeta:                  {"GO_GC_META", "goGcMeta", "The Go runtime's GC and allocator metadata (metadata/*); -1 = unknown.", func(s ProcessStats) int64 { return s.GoGCMeta }},
	PStatGoOther:                   {"GO_OTHER", "goOther", "The rest of the Go runtime's memory (profiling buckets, other); -1 = unknown.", func(s ProcessStats) int64 { return s.GoOther }},
	PStatLeakedResident:            {"LEAKED_RESIDENT", "leakedResident", "Bytes of leaks still allocated after their task (Go exports Java still holds, Go buffers they pin, Java Arrow buffers never released), going down as they are freed. Reservation leaks are accounting only and never count here.", func(s ProcessStats) int64 { return s.LeakedResident }},
	PStatSpillReentries:            {"SPILL_REENTRIES", "sparkSpillReentries", "Spark spill requests a pool answered with 0 at once, cumulative: its own spill was already running on the calling thread (an engine's spiller grew its own pool, and Spark spilled the pool again from inside that grow). Each pool logs its first one at WARN.", func(s ProcessStats) int64 { return s.SpillReentries }},
	PStatGuardLimit:                {"GUARD_LIMIT", "guardLimit", "The memory limit the pod guard keeps: the memory cgroup's, or the configured one against the process's resident memory; -1 = the guard is off or found none.", func(s ProcessStats) int64 { return s.Guard.Limit }},
	PStatGuardUnreclaimable:        {"GUARD_UNRECLAIMABLE", "guardUnreclaimable", "What the guard's last sample found the kernel cannot reclaim (anonymous, shared, dirty and writeback memory; clean page cache never counts); -1 = no limit kept.", func(s ProcessStats) int64 { return s.Guard.Unreclaimable }},
	PStatGuardHeadroom:             {"GUARD_HEADROOM", "guardHeadroom", "GUARD_LIMIT minus GUARD_UNRECLAIMABLE at the guard's last sample: what the process may still take before the kernel kills it; -1 = no limit kept.", func(s ProcessStats) int64 { return s.Guard.Headroom }},
	PStatGuardReserve:              {"GUARD_RESERVE", "guardReserve", "The headroom the guard keeps free under the limit (spark.nativepool.guard.reserve); 0 = the guard is off.", func(s ProcessStats) int64 { return s.Guard.Reserve }},
	PStatGuardBallast:              {"GUARD_BALLAST", "guardBallast", "Bytes native consumers spilled for the guard that the task pools keep from Spark until the headroom is back (ballast).", func(s ProcessStats) int64 { return s.Ballast }},
	PStatGuardEpisodes:             {"GUARD_EPISODES", "guardEpisodes", "Episodes of headroom under the reserve, cumulative.", func(s ProcessStats) int64 { return s.Guard.Episodes }},
	PStatGuardSpilledBytes:         {"GUARD_SPILLED_BYTES", "guardSpilledBytes", "Bytes native consumers spilled for the guard, cumulative.", func(s ProcessStats) int64 { return s.Guard.Spilled }},
	PStatGuardReleasedBytes:        {"GUARD_RELEASED_BYTES", "guardReleasedBytes", "Ballast handed back to Spark once the headroom was back, cumulative.", func(s ProcessStats) int64 { return s.Guard.Released }},
	PStatGuardReactionMicros:       {"GUARD_REACTION_MICROS", "guardReactionMicros", "The last episode's reaction time: from the sample that saw the headroom under the reserve to the first native spill that freed memory, in microseconds; -1 = none yet.", func(s ProcessStats) int64 { return micros(s.Guard.LastReaction) }},
	PStatGuardWaits:                {"GUARD_WAITS", "guardWaits", "Native borrows that waited for the guard to make room (they would have eaten into the reserve), cumulative.", func(s ProcessStats) int64 { return s.Guard.AdmissionWaits }},
	PStatGuardAdmittedShort:        {"GUARD_ADMITTED_SHORT", "guardAdmittedShort", "Of those, the borrows admitted when their wait ran out with the reserve still short (nothing native was left to give in time), cumulative.", func(s ProcessStats) int64 { return s.Guard.AdmittedShort }},
	PStatGuardWakes:                {"GUARD_WAKES", "guardWakes", "Times the kernel's memory notifications woke the guard before its next sample, cumulative.", func(s ProcessStats) int64 { return s.Guard.Wakes }},
	PStatGuardRefusedNow:           {"GUARD_REFUSED_NOW", "guardRefusedNow", "Native borrows for growth a consumer can do without (pool.Reservation.WithoutWaiting, e.g. a merge's extra runs) the guard refused at once for want of room instead of making them wait, cumulative.", func(s ProcessStats) int64 { return s.Guard.RefusedNow }},
	PStatGuardOffHeapBallast:       {"GUARD_OFF_HEAP_BALLAST", "guardOffHeapBallast", "What the pod guard holds of Spark's off-heap memory as a whole while the headroom is short: free memory kept from every consumer of the executor (Spark's own, another engine's, nativepool's), shown by Spark as off-heap storage memory.", func(s ProcessStats) int64 { return s.Guard.OffHeapBallast }},
	PStatGuardOffHeapTakenBytes:    {"GUARD_OFF_HEAP_TAKEN_BYTES", "guardOffHeapTakenBytes", "Bytes of Spark's off-heap memory the guard took as ballast, cumulative.", func(s ProcessStats) int64 { return s.Guard.OffHeapTaken }},
	PStatGuardOffHeapGatheredBytes: {"GUARD_OFF_HEAP_GATHERED_BYTES", "guardOffHeapGatheredBytes", "Bytes of the pools' ballast the guard moved into its hold of Spark's off-heap memory to lend them to native borrows Spark granted short (a task whose share Spark gave out), cumulative.", func(s ProcessStats) int64 { return s.Guard.OffHeapGathered }},
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

	// Guard is the pod guard's figures (guard.go), Ballast the open pools'
	// ballast.
	Guard   guard.Stats
	Ballast int64
}

// micros is d in microseconds, -1 for a negative d (none).
func micros(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Microseconds()
}

// Array lays the stats out as processStats0 returns them.
func (s ProcessStats) Array() []int64 {
	return statsArray(processStatFields[:], s)
}
