// Package gomem reads what the Go runtime holds from the OS, for every
// figure of the project that reports it (ffi's drift, the bridge's Go
// baseline and peak, the demo engine's peak). It is pure Go, so that the
// cgo-free core can use it too.
package gomem

import "runtime/metrics"

// Read returns the bytes the Go runtime has mapped (runtime/metrics
// /memory/classes/total:bytes: heap, stacks, metadata) and, of those, the
// heap bytes it has released to the OS (/memory/classes/heap/released:bytes).
// mapped − released is what the runtime can have resident. ok is false if
// the runtime does not report them.
func Read() (mapped, released int64, ok bool) {
	s := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0, 0, false
	}
	return int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64()), true
}

// Classes splits what the Go runtime holds from the OS (Read's mapped −
// released) by owner, for the executor memory ledger: the five fields sum to
// it. Each is a sum of runtime/metrics /memory/classes figures.
type Classes struct {
	// HeapInUse is heap memory in spans that hold objects: live objects,
	// dead ones not yet swept, and the unused tails of those spans
	// (heap/objects + heap/unused).
	HeapInUse int64
	// HeapIdle is free heap the runtime has not returned to the OS yet
	// (heap/free): resident or not, it is the Go heap's retained slack.
	HeapIdle int64
	// Stacks is goroutine stacks (heap/stacks) plus the stacks of threads
	// the runtime created itself (os-stacks).
	Stacks int64
	// GCMeta is the runtime's metadata: span and mcache structures, GC bit
	// maps and work buffers (metadata/*).
	GCMeta int64
	// Other is profiling buckets and the rest (profiling/buckets + other).
	Other int64
}

// Total is the sum of the classes: the bytes the runtime holds mapped and
// not released.
func (c Classes) Total() int64 {
	return c.HeapInUse + c.HeapIdle + c.Stacks + c.GCMeta + c.Other
}

// classNames are the runtime/metrics read by ReadClasses, in the order its
// sums use them.
var classNames = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/metadata/mcache/free:bytes",
	"/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/metadata/mspan/free:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/profiling/buckets:bytes",
	"/memory/classes/other:bytes",
}

// ReadClasses reads the Go runtime's memory by class. ok is false if the
// runtime does not report one of them.
func ReadClasses() (c Classes, ok bool) {
	s := make([]metrics.Sample, len(classNames))
	for i, n := range classNames {
		s[i].Name = n
	}
	metrics.Read(s)
	v := make([]int64, len(s))
	for i := range s {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return Classes{}, false
		}
		v[i] = int64(s[i].Value.Uint64())
	}
	return Classes{
		HeapInUse: v[0] + v[1],
		HeapIdle:  v[2],
		Stacks:    v[3] + v[4],
		GCMeta:    v[5] + v[6] + v[7] + v[8] + v[9],
		Other:     v[10] + v[11],
	}, true
}
