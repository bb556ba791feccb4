package ffi

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/nativepool/nativepool/pool"
)

// LeakSite is one allocation stack of a leak report: the live buffers
// allocated from it and their bytes.
type LeakSite struct {
	// Function is the allocating function: the first frame outside
	// nativepool's own packages, arrow-go and the runtime, with its file
	// and line; or, for a call entered from Java whose Go frames are all
	// internal, the Java caller (Allocator.WithCaller).
	Function string
	File     string
	Line     int
	Buffers  int
	Bytes    int64
	// Stack is the whole recorded stack, innermost first.
	Stack []runtime.Frame
}

// LeakError reports what an allocator still holds: live buffers, batches
// exported to a consumer that never released them, imported batches Go still
// holds. Sites is set when the allocator was made WithAllocationSites(true):
// buffers grouped by allocation stack, most bytes first (Velox's
// leakCheckDbg, arrow-go's CheckedAllocator).
type LeakError struct {
	Consumer      string
	Buffers       int
	Bytes         int64
	Exports       int
	ExportedBytes int64
	Streams       int
	Imports       int
	ImportedBytes int64
	Sites         []LeakSite
}

// maxSitesInError bounds the sites named by Error; Report lists all.
const maxSitesInError = 5

// Error summarises the leak on one line, naming the consumer and, with
// sites, the top allocating functions.
func (e *LeakError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ffi: %s leaked %d buffers (%s)", e.Consumer, e.Buffers, pool.HumanReadableSize(e.Bytes))
	if e.Exports > 0 || e.Streams > 0 {
		fmt.Fprintf(&b, ", %d exported batches (%s) and %d exported streams never released by the consumer",
			e.Exports, pool.HumanReadableSize(e.ExportedBytes), e.Streams)
	}
	if e.Imports > 0 {
		fmt.Fprintf(&b, ", %d imported batches (%s) still held", e.Imports, pool.HumanReadableSize(e.ImportedBytes))
	}
	for i, s := range e.Sites {
		if i == maxSitesInError {
			fmt.Fprintf(&b, "; %d more sites", len(e.Sites)-i)
			break
		}
		fmt.Fprintf(&b, "; %s in %d buffers from %s",
			pool.HumanReadableSize(s.Bytes), s.Buffers, s.Name())
	}
	if e.Buffers > 0 && e.Sites == nil {
		b.WriteString("; allocation sites not recorded (use WithAllocationSites(true))")
	}
	return b.String()
}

// Name is the site as one line: "function (file:line)", or the function
// alone if it has no file.
func (s LeakSite) Name() string {
	return siteName(runtime.Frame{Function: s.Function, File: s.File, Line: s.Line})
}

// TopSite is the name (LeakSite.Name) of the site with the most bytes, or ""
// without sites.
func (e *LeakError) TopSite() string {
	if len(e.Sites) == 0 {
		return ""
	}
	return e.Sites[0].Name()
}

// Report is Error followed by every site's full stack, one frame per line.
func (e *LeakError) Report() string {
	var b strings.Builder
	b.WriteString(e.Error())
	for _, s := range e.Sites {
		fmt.Fprintf(&b, "\nLEAK of %d bytes in %d buffers FROM %s", s.Bytes, s.Buffers, s.Function)
		for _, f := range s.Stack {
			fmt.Fprintf(&b, "\n\t%s\n\t\t%s:%d", f.Function, f.File, f.Line)
		}
	}
	return b.String()
}

// Leaks reports what the allocator holds now, or nil if nothing: live
// buffers (with allocation sites, if recorded), exported batches and
// streams the consumer has not released, imported batches still held. It
// changes nothing; Close calls it and then gives the charge back.
func (a *Allocator) Leaks() *LeakError {
	e := &LeakError{Consumer: a.consumer}
	bySite := make(map[uint32]*LeakSite)
	a.live.each(func(_ uintptr, b liveBuf) {
		e.Buffers++
		e.Bytes += b.n
		if b.site == 0 {
			return
		}
		s := bySite[b.site]
		if s == nil {
			s = &LeakSite{}
			bySite[b.site] = s
		}
		s.Buffers++
		s.Bytes += b.n
	})
	for _, x := range a.xfers.snapshot() {
		switch x.kind {
		case kindExport:
			e.Exports++
			e.ExportedBytes += x.bytes
		case kindStream:
			e.Streams++
		case kindImport:
			e.Imports++
			e.ImportedBytes += x.bytes
		}
	}
	if e.Buffers == 0 && e.Exports == 0 && e.Streams == 0 && e.Imports == 0 {
		return nil
	}
	for id, s := range bySite {
		s.Stack = a.sites.frames(id)
		f := allocatingFunction(s.Stack, a.sites.caller(id))
		s.Function, s.File, s.Line = f.Function, f.File, f.Line
		e.Sites = append(e.Sites, *s)
	}
	slices.SortFunc(e.Sites, func(x, y LeakSite) int {
		if c := cmp.Compare(y.Bytes, x.Bytes); c != 0 {
			return c
		}
		return cmp.Compare(x.Function, y.Function)
	})
	return e
}

// Close ends the allocator's task: it reports what is still held (Leaks),
// logs it at error level, gives everything this allocator charged back to
// the reservation, and returns the report as a *LeakError (nil if nothing
// leaked). It does not free leaked memory — a consumer may still be reading
// it — and it does not close the reservation, which belongs to the caller.
//
// After Close, Allocate and Reallocate refuse (an AllocationError wrapping
// pool.ErrClosed), exports and imports return errors wrapping
// pool.ErrClosed, and frees (a consumer releasing late) free the memory
// without touching the reservation, counted in Snapshot.LateFrees. A second
// Close returns nil.
func (a *Allocator) Close() error {
	c := a.charged.Swap(closedMark)
	if c < 0 {
		return nil
	}
	a.headroom.Store(closedMark)
	leak := a.Leaks()
	if c > 0 {
		if err := a.shrinkRes(c); err != nil {
			a.logger.Warn("ffi: reservation closed before its allocator", "consumer", a.consumer, "bytes", c, "err", err)
		}
	}
	if leak == nil {
		return nil
	}
	a.logger.Error("ffi: leak at Close; charge released", "consumer", a.consumer, "report", leak.Error())
	return leak
}
