package ffi

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// maxSiteDepth bounds WithSiteDepth.
const maxSiteDepth = 64

// siteTable interns allocation stacks, so that each live buffer stores a
// 4-byte id instead of a stack, and a leak report can group buffers by stack
// (as Velox's leakCheckDbg does). A site is a Go stack plus the caller a
// foreign entry named (WithCaller; "" for none). It is safe for concurrent
// use; build it with newSiteTable.
type siteTable struct {
	depth int
	mu    sync.RWMutex
	// byHash maps a site's hash to the ids of the sites with that hash;
	// sites[id-1] is the site of id. Both are guarded by mu and only grow.
	byHash map[uint64][]uint32
	sites  []site
}

// site is one interned allocation site. name is the allocating function as
// siteName formats it, computed on first use (guarded by siteTable.mu).
type site struct {
	pcs    []uintptr
	caller string
	name   string
}

func newSiteTable(depth int) *siteTable {
	return &siteTable{depth: depth, byHash: make(map[uint64][]uint32)}
}

// capture records the current stack, starting skip frames above capture
// (skip 1 = capture's caller), with the foreign caller (or ""), and returns
// the site's id.
func (t *siteTable) capture(skip int, caller string) uint32 {
	var buf [maxSiteDepth]uintptr
	pcs := buf[:runtime.Callers(skip+1, buf[:t.depth])]
	h := uint64(14695981039346656037) // FNV-1a over the PCs, then the caller's bytes
	for _, pc := range pcs {
		h ^= uint64(pc)
		h *= 1099511628211
	}
	for i := 0; i < len(caller); i++ {
		h ^= uint64(caller[i])
		h *= 1099511628211
	}
	t.mu.RLock()
	id := t.findLocked(h, pcs, caller)
	t.mu.RUnlock()
	if id != 0 {
		return id
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if id := t.findLocked(h, pcs, caller); id != 0 {
		return id
	}
	t.sites = append(t.sites, site{pcs: slices.Clone(pcs), caller: caller})
	id = uint32(len(t.sites))
	t.byHash[h] = append(t.byHash[h], id)
	return id
}

// findLocked returns the id of the site (pcs, caller), or 0. The caller
// holds t.mu (read or write).
func (t *siteTable) findLocked(h uint64, pcs []uintptr, caller string) uint32 {
	for _, id := range t.byHash[h] {
		if s := &t.sites[id-1]; s.caller == caller && slices.Equal(s.pcs, pcs) {
			return id
		}
	}
	return 0
}

// caller is the foreign caller recorded with site id ("" for none).
func (t *siteTable) caller(id uint32) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.sites[id-1].caller
}

// name is the allocating function of site id as siteName formats it,
// symbolized once and then cached.
func (t *siteTable) name(id uint32) string {
	t.mu.RLock()
	n := t.sites[id-1].name
	t.mu.RUnlock()
	if n != "" {
		return n
	}
	n = siteName(allocatingFunction(t.frames(id), t.caller(id)))
	t.mu.Lock()
	t.sites[id-1].name = n
	t.mu.Unlock()
	return n
}

// frames symbolizes the Go stack of id.
func (t *siteTable) frames(id uint32) []runtime.Frame {
	t.mu.RLock()
	pcs := t.sites[id-1].pcs
	t.mu.RUnlock()
	var out []runtime.Frame
	fs := runtime.CallersFrames(pcs)
	for {
		f, more := fs.Next()
		out = append(out, f)
		if !more {
			return out
		}
	}
}

// modulePath is this module's import path. Its packages below, except
// examples/ (user code), are nativepool's own machinery.
const modulePath = "github.com/nativepool/nativepool/"

// ownPackages are nativepool's own packages (and their sub-packages), as
// they start a function's full name after modulePath.
var ownPackages = [...]string{"ffi", "internal", "jni", "pool", "taskshared"}

// internalFrame reports whether a frame belongs to the machinery between a
// caller and the allocation, which a leak report skips to name the
// allocating function: the Go runtime, arrow-go (buffers, builders,
// kernels), cgo's glue, and nativepool's own packages (this allocator, the bridge and
// its JNI exports, the copy they make for Java). The module's examples and
// any test file (our own tests allocate as callers do) are not internal.
func internalFrame(f runtime.Frame) bool {
	fn := f.Function
	if fn == "" || strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "runtime/") ||
		strings.HasPrefix(fn, "_cgo") || // cgo's wrappers of //export functions: _cgoexp_<hash>_<name>
		strings.HasPrefix(fn, "github.com/apache/arrow-go/") {
		return true
	}
	rest, ok := strings.CutPrefix(fn, modulePath)
	if !ok || strings.HasSuffix(f.File, "_test.go") {
		return false
	}
	for _, p := range ownPackages {
		if after, ok := strings.CutPrefix(rest, p); ok && (strings.HasPrefix(after, ".") || strings.HasPrefix(after, "/")) {
			return true
		}
	}
	return false
}

// allocatingFunction is the first frame outside internalFrame; if every Go
// frame is internal (a call entered from Java), the foreign caller recorded
// with the site, if any (parseCaller); else the first frame.
func allocatingFunction(frames []runtime.Frame, caller string) runtime.Frame {
	for _, f := range frames {
		if !internalFrame(f) {
			return f
		}
	}
	if caller != "" {
		return parseCaller(caller)
	}
	if len(frames) == 0 {
		return runtime.Frame{Function: "unknown"}
	}
	return frames[0]
}

// parseCaller reads a foreign caller, "pkg.Class.method (File.java:42)" as
// the plugin's CallerSites writes it (or without the space, as Java's
// StackTraceElement prints it), into a frame; any other text becomes the
// frame's Function as it is.
func parseCaller(caller string) runtime.Frame {
	open := strings.LastIndexByte(caller, '(')
	if open <= 0 || !strings.HasSuffix(caller, ")") {
		return runtime.Frame{Function: caller}
	}
	fn := strings.TrimSpace(caller[:open])
	loc := caller[open+1 : len(caller)-1]
	colon := strings.LastIndexByte(loc, ':')
	if colon < 0 {
		return runtime.Frame{Function: fn, File: loc}
	}
	var line int
	if _, err := fmt.Sscanf(loc[colon+1:], "%d", &line); err != nil {
		return runtime.Frame{Function: caller}
	}
	return runtime.Frame{Function: fn, File: loc[:colon], Line: line}
}

// siteName formats an allocating function for reports and live listings:
// "function (file:line)", or the function alone without a file.
func siteName(f runtime.Frame) string {
	if f.File == "" {
		return f.Function
	}
	return fmt.Sprintf("%s (%s:%d)", f.Function, f.File, f.Line)
}

// WithCaller returns an allocator that allocates from a, recording caller as
// the allocation site of each buffer whose recorded Go stack is all
// nativepool's (internalFrame): a call entered from another language, where
// the Go stack ends at the entry point. The bridge passes the Java caller of
// copyBatch0 this way, so a leak names the Java method, not the bridge's
// copy. Frees go to a as usual; buffers are a's in every other respect.
//
// Without allocation sites (WithAllocationSites), or with an empty caller,
// it returns a itself: nothing is added to the allocation path.
func (a *Allocator) WithCaller(caller string) memory.Allocator {
	if a.sites == nil || caller == "" {
		return a
	}
	return callerAllocator{a: a, caller: caller}
}

// callerAllocator is an Allocator with a foreign caller (WithCaller). Its
// Allocate and Reallocate call a's allocate and reallocate directly, so the
// frame depths allocate's skip counts on are the same as a's own methods'.
type callerAllocator struct {
	a      *Allocator
	caller string
}

// Allocate is Allocator.Allocate with the caller recorded.
func (c callerAllocator) Allocate(size int) []byte {
	if size < 0 {
		panic(fmt.Sprintf("ffi: Allocate(%d): negative size", size))
	}
	return c.a.allocate("Allocate", size, c.caller, 3)
}

// Reallocate is Allocator.Reallocate with the caller recorded.
func (c callerAllocator) Reallocate(size int, b []byte) []byte {
	return c.a.reallocate(size, b, c.caller)
}

// Free is Allocator.Free.
func (c callerAllocator) Free(b []byte) { c.a.Free(b) }

// LiveSite is live memory of an allocator at one allocation site: its live
// buffers and their bytes.
type LiveSite struct {
	// Site is the allocating function, "function (file:line)" (a foreign
	// caller as it was given), or "" when sites are not recorded.
	Site    string
	Bytes   int64
	Buffers int
}

// LiveSites returns the allocator's live buffers grouped by allocation
// site, most bytes first. Without allocation sites it is one entry with
// Site "" (read from two counters, without walking the buffers); with
// them, it walks the live buffers, as a leak report does.
func (a *Allocator) LiveSites() []LiveSite {
	if a.sites == nil {
		n := a.live.len()
		if n == 0 {
			return nil
		}
		return []LiveSite{{Bytes: a.allocated.Load(), Buffers: n}}
	}
	byID := make(map[uint32]*LiveSite)
	a.live.each(func(_ uintptr, b liveBuf) {
		s := byID[b.site]
		if s == nil {
			s = &LiveSite{}
			byID[b.site] = s
		}
		s.Bytes += b.n
		s.Buffers++
	})
	bySite := make(map[string]*LiveSite, len(byID))
	for id, s := range byID {
		if id != 0 {
			s.Site = a.sites.name(id)
		}
		if t := bySite[s.Site]; t != nil {
			t.Bytes += s.Bytes
			t.Buffers += s.Buffers
			continue
		}
		bySite[s.Site] = s
	}
	out := make([]LiveSite, 0, len(bySite))
	for _, s := range bySite {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(x, y LiveSite) int {
		if x.Bytes != y.Bytes {
			return cmp.Compare(y.Bytes, x.Bytes)
		}
		return strings.Compare(x.Site, y.Site)
	})
	return out
}
