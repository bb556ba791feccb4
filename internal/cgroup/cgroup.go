package cgroup

import (
	"errors"
	"fmt"
)

// ReadFunc reads a whole file. Production passes os.ReadFile; tests pass a
// map of fixture files, so every parser here runs without a kernel.
type ReadFunc func(name string) ([]byte, error)

// Version is the cgroup hierarchy that holds the process's memory
// controller: its files, and so how a Reading is taken, differ between the
// two.
type Version int

const (
	// V1 is a legacy hierarchy (fstype "cgroup") with the memory
	// controller attached: memory.usage_in_bytes, memory.limit_in_bytes,
	// memory.stat with hierarchical total_* figures, memory.oom_control.
	V1 Version = 1
	// V2 is the unified hierarchy (fstype "cgroup2"): memory.current,
	// memory.max in the group and each ancestor, memory.stat,
	// memory.events and memory.pressure.
	V2 Version = 2
)

// String names the version as the kernel documentation does, for logs.
func (v Version) String() string {
	switch v {
	case V1:
		return "cgroup v1"
	case V2:
		return "cgroup v2"
	}
	return fmt.Sprintf("cgroup version %d", int(v))
}

// Group is the memory cgroup of a process, located once (Locate) and then
// read as often as needed (Read, Sampler): a process does not change cgroup
// during its life in the deployments this serves.
type Group struct {
	// Version is the hierarchy the memory controller is attached to.
	Version Version
	// Path is the process's cgroup as /proc/<pid>/cgroup lists it
	// (relative to the cgroup namespace's root), for logs.
	Path string
	// Dir is the group's directory: the hierarchy's mount point joined with
	// Path made relative to the mount's root.
	Dir string
	// LimitDirs, for v2, are Dir and each of its ancestors up to the mount
	// point: v2 has no hierarchical limit figure, so the limit that
	// applies is the smallest memory.max among them. Ancestors above the
	// mount (outside a cgroup namespace) cannot be seen, and their limits
	// cannot be counted. Nil for v1, whose memory.stat carries
	// hierarchical_memory_limit.
	LimitDirs []string
}

// ErrMalformed is wrapped by the errors of Read, Sampler.Read and
// ProcessResident when an essential file is present but does not hold the
// figure it must (memory usage not a number, memory.stat without the
// anonymous-memory figure, a status without RssAnon or VmRSS): the kernel
// is not one this package knows, and the caller should fall back as for a
// missing file.
var ErrMalformed = errors.New("cgroup: malformed file")
