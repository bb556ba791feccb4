package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
)

// Reading is one sample of a Group: the figures the kernel's OOM killer
// acts on, and the parts they are made of. A figure the kernel does not
// offer (absent file, absent key, or no such figure in the version) is -1.
type Reading struct {
	// Limit is the tightest memory limit over the group and its ancestors,
	// in bytes: what usage may not exceed before the kernel reclaims and
	// then kills. -1 when there is none: v2's "max", v1's "unlimited" (a
	// value of 1<<62 or more, 9223372036854771712 as the kernel prints
	// it), the root cgroup.
	Limit int64
	// Usage is what the kernel charges to the group (v2 memory.current,
	// v1 memory.usage_in_bytes). It includes page cache, which the kernel
	// drops before it kills, so Usage reaching Limit is not yet an OOM.
	// It is what the limit is held against, charged ahead in per-CPU
	// batches of 64 pages, so it can run up to 256 KiB per CPU above the
	// pages in use.
	Usage int64
	// Unreclaimable is what the kernel cannot drop to avoid an OOM kill,
	// with no swap: anonymous memory, shared memory (tmpfs, shm), dirty
	// and under-writeback file pages, and on v2 kernel stacks and socket
	// buffers. v2: anon + shmem + kernel_stack + sock + file_dirty +
	// file_writeback; v1: total_rss + total_shmem + total_dirty +
	// total_writeback (total_* count the group's descendants too). Clean
	// page cache, spill files already written, never counts: the kernel
	// reclaims it first.
	Unreclaimable int64
	// Anon is anonymous memory: heaps, mmap(MAP_ANONYMOUS), stacks of
	// user threads (v2 anon, v1 total_rss).
	Anon int64
	// Shmem is shared memory and tmpfs pages (v2 shmem, v1 total_shmem);
	// it is also part of File.
	Shmem int64
	// KernelStack is the kernel stacks of the group's threads (v2
	// kernel_stack; -1 on v1).
	KernelStack int64
	// Sock is memory of the group's network socket buffers (v2 sock; -1
	// on v1).
	Sock int64
	// Dirty is file pages modified and not yet written back (v2
	// file_dirty, v1 total_dirty).
	Dirty int64
	// Writeback is file pages being written back (v2 file_writeback, v1
	// total_writeback).
	Writeback int64
	// File is the page cache, shared memory included (v2 file, v1
	// total_cache): mostly what the kernel can drop.
	File int64
	// OOMKills counts the processes the OOM killer killed in the group
	// (v2 memory.events oom_kill, v1 memory.oom_control oom_kill).
	OOMKills int64
	// PressureSome10 is the share of the last 10 seconds in which some of
	// the group's tasks stalled on memory, in percent (v2 memory.pressure
	// "some avg10"): reclaim has started to cost time. -1 on v1.
	PressureSome10 float64
}

// UnreclaimableUsage is what the group holds that the kernel cannot drop to
// stay under Limit, as the OOM killer counts it: Unreclaimable (the
// memory.stat sum), or, when larger, Usage less clean page cache. The
// second also counts kernel memory charged to the group (the slab of spill
// files' inodes and dentries, page tables, socket buffers on v1), which
// v1's memory.stat does not list and which the OOM killer counts all the
// same. -1 when neither is known.
func (r Reading) UnreclaimableUsage() int64 {
	u := r.Unreclaimable
	if r.Usage >= 0 && r.File >= 0 {
		clean := max(0, r.File-max(r.Shmem, 0)-max(r.Dirty, 0)-max(r.Writeback, 0))
		u = max(u, r.Usage-clean)
	}
	return u
}

// role is what a file of a group is read for.
type role uint8

const (
	roleUsage    role = iota // memory.current, memory.usage_in_bytes: essential
	roleStat                 // memory.stat: essential
	roleLimit                // memory.max of one LimitDir, memory.limit_in_bytes
	roleEvents               // memory.events, memory.oom_control
	rolePressure             // memory.pressure
)

// essential reports whether a Reading cannot be made without the file.
func (r role) essential() bool { return r == roleUsage || r == roleStat }

// groupFile is one file a Reading is taken from.
type groupFile struct {
	name string
	role role
}

// files lists the files a Reading of g reads, in the order it reads them.
func (g Group) files() []groupFile {
	switch g.Version {
	case V1:
		return []groupFile{
			{g.Dir + "/memory.usage_in_bytes", roleUsage},
			{g.Dir + "/memory.stat", roleStat},
			{g.Dir + "/memory.limit_in_bytes", roleLimit},
			{g.Dir + "/memory.oom_control", roleEvents},
		}
	case V2:
		fs := make([]groupFile, 0, 4+len(g.LimitDirs))
		fs = append(fs,
			groupFile{g.Dir + "/memory.current", roleUsage},
			groupFile{g.Dir + "/memory.stat", roleStat},
			groupFile{g.Dir + "/memory.events", roleEvents},
			groupFile{g.Dir + "/memory.pressure", rolePressure},
		)
		for _, d := range g.LimitDirs {
			fs = append(fs, groupFile{d + "/memory.max", roleLimit})
		}
		return fs
	}
	return nil
}

// Read takes one sample of the group, reading each of its files once
// through read. v1's limit is the smaller of memory.limit_in_bytes and
// memory.stat's hierarchical_memory_limit; v2's is the smallest memory.max
// of LimitDirs. A missing optional file (a limit, the OOM-kill count,
// pressure) leaves its figures at -1. A missing essential file (usage,
// memory.stat) is an error wrapping read's, so errors.Is(err,
// fs.ErrNotExist) tells a caller to fall back (the v2 root cgroup has no
// memory.current); essential content that makes no sense wraps
// ErrMalformed. A Sampler takes the same sample with the files kept open.
func (g Group) Read(read ReadFunc) (Reading, error) {
	files := g.files()
	if files == nil {
		return Reading{}, fmt.Errorf("cgroup: read: a Group of no known version (%d), not one Locate returned: %w", int(g.Version), ErrMalformed)
	}
	return g.sample(files, funcFetcher{read})
}

// fetcher returns the content of file i of a group's files. The slice is
// valid until the next fetch.
type fetcher interface {
	fetch(i int, name string) ([]byte, error)
}

// funcFetcher fetches through a ReadFunc.
type funcFetcher struct{ read ReadFunc }

func (f funcFetcher) fetch(_ int, name string) ([]byte, error) { return f.read(name) }

// sample parses files, fetched through f, into a Reading. It allocates
// nothing but its errors.
func (g Group) sample(files []groupFile, f fetcher) (Reading, error) {
	r := Reading{Limit: -1, Usage: -1, Unreclaimable: -1, Anon: -1, Shmem: -1, KernelStack: -1,
		Sock: -1, Dirty: -1, Writeback: -1, File: -1, OOMKills: -1, PressureSome10: -1}
	for i, file := range files {
		b, err := f.fetch(i, file.name)
		if err != nil {
			if !file.role.essential() && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return Reading{}, fmt.Errorf("cgroup: read: %w", err)
		}
		switch file.role {
		case roleUsage:
			n, ok := parseInt(trimSpace(b))
			if !ok {
				return Reading{}, fmt.Errorf("cgroup: read %s: %q is no byte count: %w", file.name, clip(b), ErrMalformed)
			}
			r.Usage = n
		case roleStat:
			if g.Version == V1 {
				parseStatV1(b, &r)
			} else {
				parseStatV2(b, &r)
			}
			if r.Anon < 0 {
				return Reading{}, fmt.Errorf("cgroup: read %s: no anonymous-memory figure: %w", file.name, ErrMalformed)
			}
		case roleLimit:
			v := trimSpace(b)
			if string(v) == "max" {
				continue
			}
			if n, ok := parseInt(v); ok {
				r.Limit = tighter(r.Limit, n)
			}
		case roleEvents:
			if n, ok := flatKey(b, "oom_kill"); ok {
				r.OOMKills = n
			}
		case rolePressure:
			if p, ok := pressureSome10(b); ok {
				r.PressureSome10 = p
			}
		}
	}
	r.Unreclaimable = 0
	for _, n := range [...]int64{r.Anon, r.Shmem, r.KernelStack, r.Sock, r.Dirty, r.Writeback} {
		r.Unreclaimable = addSaturating(r.Unreclaimable, part(n))
	}
	return r, nil
}

// addSaturating adds two non-negative figures, at most math.MaxInt64: the
// figures are a file's claims, and a sum of absurd ones must not wrap
// negative (a negative Unreclaimable would read as no pressure at all).
func addSaturating(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// unlimited is where limits stop being limits: v1 prints "no limit" as
// the largest page multiple below 1<<63, and no machine has 4 EiB.
const unlimited = 1 << 62

// tighter returns the tighter of limit (-1 for none) and n, a limit as the
// kernel prints it.
func tighter(limit, n int64) int64 {
	if n >= unlimited || (limit >= 0 && limit <= n) {
		return limit
	}
	return n
}

// part is a figure as a term of a sum: an absent figure (-1) adds nothing.
func part(n int64) int64 { return max(n, 0) }

// parseStatV1 takes the figures of a v1 memory.stat into r: the total_*
// ones, which count the group's descendants as the group's usage does, and
// hierarchical_memory_limit, the tightest limit over the group and its
// ancestors. Malformed lines are skipped.
func parseStatV1(b []byte, r *Reading) {
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		k, n, ok := keyValue(line)
		if !ok {
			continue
		}
		switch string(k) {
		case "total_rss":
			r.Anon = n
		case "total_shmem":
			r.Shmem = n
		case "total_dirty":
			r.Dirty = n
		case "total_writeback":
			r.Writeback = n
		case "total_cache":
			r.File = n
		case "hierarchical_memory_limit":
			r.Limit = tighter(r.Limit, n)
		}
	}
}

// parseStatV2 takes the figures of a v2 memory.stat into r. Malformed
// lines are skipped.
func parseStatV2(b []byte, r *Reading) {
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		k, n, ok := keyValue(line)
		if !ok {
			continue
		}
		switch string(k) {
		case "anon":
			r.Anon = n
		case "shmem":
			r.Shmem = n
		case "kernel_stack":
			r.KernelStack = n
		case "sock":
			r.Sock = n
		case "file_dirty":
			r.Dirty = n
		case "file_writeback":
			r.Writeback = n
		case "file":
			r.File = n
		}
	}
}

// flatKey returns the value of key in a flat-keyed file ("key value"
// lines: memory.events, memory.oom_control).
func flatKey(b []byte, key string) (int64, bool) {
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		if k, n, ok := keyValue(line); ok && string(k) == key {
			return n, true
		}
	}
	return 0, false
}

// pressureSome10 returns avg10 of the "some" line of a PSI file ("some
// avg10=1.23 avg60=0.50 avg300=0.10 total=123456").
func pressureSome10(b []byte) (float64, bool) {
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		rest, ok := cutPrefix(line, "some ")
		if !ok {
			continue
		}
		for len(rest) > 0 {
			var field []byte
			field, rest = cutByte(rest, ' ')
			if v, ok := cutPrefix(field, "avg10="); ok {
				return parseDecimal(v)
			}
		}
	}
	return 0, false
}

// clip shortens content quoted in an error.
func clip(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}
