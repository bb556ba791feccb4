package ffi

import (
	"runtime"
	"slices"
	"strings"
	"sync"
)

// maxSiteDepth bounds WithSiteDepth.
const maxSiteDepth = 64

// siteTable interns allocation stacks, so that each live buffer stores a
// 4-byte id instead of a stack, and a leak report can group buffers by stack
// (as Velox's leakCheckDbg does). It is safe for concurrent use; build it
// with newSiteTable.
type siteTable struct {
	depth int
	mu    sync.RWMutex
	// byHash maps a stack's hash to the ids of the stacks with that hash;
	// stacks[id-1] is the stack of id. Both are guarded by mu and only grow.
	byHash map[uint64][]uint32
	stacks [][]uintptr
}

func newSiteTable(depth int) *siteTable {
	return &siteTable{depth: depth, byHash: make(map[uint64][]uint32)}
}

// capture records the current stack, starting skip frames above capture
// (skip 1 = capture's caller), and returns the stack's id.
func (t *siteTable) capture(skip int) uint32 {
	var buf [maxSiteDepth]uintptr
	pcs := buf[:runtime.Callers(skip+1, buf[:t.depth])]
	h := uint64(14695981039346656037) // FNV-1a over the PCs
	for _, pc := range pcs {
		h ^= uint64(pc)
		h *= 1099511628211
	}
	t.mu.RLock()
	id := t.findLocked(h, pcs)
	t.mu.RUnlock()
	if id != 0 {
		return id
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if id := t.findLocked(h, pcs); id != 0 {
		return id
	}
	t.stacks = append(t.stacks, slices.Clone(pcs))
	id = uint32(len(t.stacks))
	t.byHash[h] = append(t.byHash[h], id)
	return id
}

// findLocked returns the id of pcs, or 0. The caller holds t.mu (read or
// write).
func (t *siteTable) findLocked(h uint64, pcs []uintptr) uint32 {
	for _, id := range t.byHash[h] {
		if slices.Equal(t.stacks[id-1], pcs) {
			return id
		}
	}
	return 0
}

// frames symbolizes the stack of id.
func (t *siteTable) frames(id uint32) []runtime.Frame {
	t.mu.RLock()
	pcs := t.stacks[id-1]
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

// internalFrame reports whether a frame belongs to the machinery between an
// operator and the allocation (this allocator, arrow-go's buffers, builders
// and kernels), which a leak report skips to name the allocating function.
func internalFrame(function string) bool {
	return strings.HasPrefix(function, "github.com/apache/arrow-go/") ||
		strings.HasPrefix(function, "github.com/nativepool/nativepool/ffi.(*Allocator).") ||
		strings.HasPrefix(function, "github.com/nativepool/nativepool/ffi.(*liveTable).") ||
		strings.HasPrefix(function, "runtime.")
}

// allocatingFunction is the first frame outside internalFrame, or the first
// frame if all are internal.
func allocatingFunction(frames []runtime.Frame) runtime.Frame {
	for _, f := range frames {
		if !internalFrame(f.Function) {
			return f
		}
	}
	if len(frames) == 0 {
		return runtime.Frame{Function: "unknown"}
	}
	return frames[0]
}
