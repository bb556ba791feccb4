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
