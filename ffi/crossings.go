package ffi

import (
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
)

// xferKind says what crossed the C Data Interface.
type xferKind uint8

const (
	kindExport xferKind = iota // a batch exported to a C consumer
	kindStream                 // a stream exported to a C consumer
	kindImport                 // a batch imported from a C producer
)

func (k xferKind) String() string {
	switch k {
	case kindExport:
		return "exported batch"
	case kindStream:
		return "exported stream"
	default:
		return "imported batch"
	}
}

// xfer states. An export starts live; an import starts pending (its bytes
// are known only after arrow-go has imported it) and becomes live unless the
// producer's release already ran during the import (a batch with no buffers).
const (
	xferPending int32 = iota
	xferLive
	xferReleased
)

// xfer is one crossing of the C Data Interface, from the moment it is made
// until the release callback of its C struct has run. A runtime/cgo.Handle
// to it travels in the C wrapper (bridge.h). Fields other than state are
// written before the xfer is published (state's first transition, or the
// handle) and read-only afterwards, except next.
type xfer struct {
	a     *Allocator
	kind  xferKind
	bytes int64 // bytes of the buffers it pins (export) or brought (import)
	// charged is what this xfer added to the reservation (ImporterCharges);
	// written before the pending→live transition.
	charged int64
	state   atomic.Int32
	// next is, for a stream, the bytes of the batch its reader handed to
	// arrow-go's exporter last; written and read on the consumer's get_next
	// call chain only.
	next int64
}

// crossingMap is the crossing map of one allocator: its live C Data
// crossings (exports, streams, imports) and their counts and bytes, for
// Snapshot and the leak report. It is safe for concurrent use; call init before use.
type crossingMap struct {
	mu sync.Mutex
	// live is guarded by mu.
	live map[*xfer]struct{}

	exports, streams, imports atomic.Int64 // live counts
	exported, imported        atomic.Int64 // live bytes
}

func (l *crossingMap) init() { l.live = make(map[*xfer]struct{}) }

// add publishes a live crossing.
func (l *crossingMap) add(x *xfer) {
	l.mu.Lock()
	l.live[x] = struct{}{}
	l.mu.Unlock()
	switch x.kind {
	case kindExport:
		l.exports.Add(1)
		l.exported.Add(x.bytes)
	case kindStream:
		l.streams.Add(1)
	case kindImport:
		l.imports.Add(1)
		l.imported.Add(x.bytes)
	}
}

// remove forgets a crossing that add published.
func (l *crossingMap) remove(x *xfer) {
	l.mu.Lock()
	delete(l.live, x)
	l.mu.Unlock()
	switch x.kind {
	case kindExport:
		l.exports.Add(-1)
		l.exported.Add(-x.bytes)
	case kindStream:
		l.streams.Add(-1)
	case kindImport:
		l.imports.Add(-1)
		l.imported.Add(-x.bytes)
	}
}

// snapshot copies the live crossings.
func (l *crossingMap) snapshot() []*xfer {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*xfer, 0, len(l.live))
	for x := range l.live {
		out = append(out, x)
	}
	return out
}

// settle ends crossing x once its C struct has been released: x leaves the
// crossing map and gives back what it charged. The C wrapper calls it at
// most once per crossing (bridge.h); a second call is logged and changes
// nothing.
func (a *Allocator) settle(x *xfer) {
	switch x.state.Swap(xferReleased) {
	case xferReleased:
		a.logger.Error("ffi: release reported twice; ignored", "consumer", a.consumer, "kind", x.kind.String())
	case xferLive:
		a.xfers.remove(x)
		if x.charged > 0 {
			a.importCharged.Add(-x.charged)
			a.unreserve(x.charged)
		}
	case xferPending:
		// Released during the import; the importer sees the state and
		// gives back whatever it charged.
	}
}

// runRelease runs a producer's release callback on behalf of a C caller (a
// JVM thread, for exports): a panic there — a double Free in Go code that
// runs when the last reference goes — is logged, never unwound into C.
func (a *Allocator) runRelease(what string, release func()) {
	defer func() {
		if r := recover(); r != nil {
			a.logger.Error("ffi: panic in release callback", "consumer", a.consumer, "of", what, "panic", r)
		}
	}()
	release()
}

// dataBytes is the size of the memory a batch's buffers live in: each
// distinct underlying buffer (a slice's parent, recursively) counted once,
// through children and dictionaries.
func dataBytes(rb arrow.RecordBatch) int64 {
	seen := make(map[uintptr]struct{})
	var total int64
	var walk func(d arrow.ArrayData)
	walk = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b == nil {
				continue
			}
			for b.Parent() != nil {
				b = b.Parent()
			}
			buf := b.Buf()
			if cap(buf) == 0 {
				continue
			}
			p := addr(buf)
			if _, ok := seen[p]; ok {
				continue
			}
			seen[p] = struct{}{}
			// The capacity: a builder's in-place shrink keeps it allocated
			// (and charged) until the buffer is freed.
			total += int64(cap(buf))
		}
		for _, c := range d.Children() {
			walk(c)
		}
		if d.DataType().ID() == arrow.DICTIONARY {
			walk(d.Dictionary())
		}
	}
	for _, col := range rb.Columns() {
		walk(col.Data())
	}
	return total
}
