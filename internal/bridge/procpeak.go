package bridge

import (
	"bytes"
	"path"
	"strconv"
	"strings"
)

// The process's true peaks as the kernel counts them: the resident set's
// high-water mark and the memory cgroup's. Both are read, not sampled, so a
// jump between two samples is never missed.

// readFileFunc is os.ReadFile, replaced by a map in tests.
type readFileFunc func(name string) ([]byte, error)

// cgroupRoot is where the memory cgroup hierarchies are mounted: v1's
// memory controller at cgroupRoot/memory, v2's unified hierarchy at
// cgroupRoot itself (or cgroupRoot/unified on hybrid systems).
const cgroupRoot = "/sys/fs/cgroup"

// readVmHWM returns VmHWM of /proc/self/status in bytes, or -1.
func readVmHWM(read readFileFunc) int64 {
	b, err := read("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("VmHWM:"))
		if !ok {
			continue
		}
		f := strings.Fields(string(rest)) // "2084 kB"
		if len(f) != 2 || f[1] != "kB" {
			return -1
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return -1
		}
		return kb << 10
	}
	return -1
}

// readCgroupPeak returns the peak memory usage of the process's memory
// cgroup, from /proc/self/cgroup: cgroup v1's memory controller
// (memory.max_usage_in_bytes) if it is mounted, else v2's memory.peak (in
// the unified hierarchy, at cgroupRoot or cgroupRoot/unified). -1 when the
// process is in the root cgroup (no limit of its own: its figure would be
// the whole machine's), when the cgroup is shared with other processes
// (sharedCgroup: its peak would be theirs too), or nothing can be read.
func readCgroupPeak(read readFileFunc) int64 {
	b, err := read("/proc/self/cgroup")
	if err != nil {
		return -1
	}
	var v1, v2 string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3) // id:controllers:path
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			v2 = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "memory" {
				v1 = f[2]
			}
		}
	}
	var files []string
	switch {
	case v1 != "":
		if v1 == "/" {
			return -1
		}
		files = []string{path.Join(cgroupRoot, "memory", v1, "memory.max_usage_in_bytes")}
	case v2 != "" && v2 != "/":
		files = []string{path.Join(cgroupRoot, v2, "memory.peak"), path.Join(cgroupRoot, "unified", v2, "memory.peak")}
	}
	for _, name := range files {
		if b, err := read(name); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				if sharedCgroup(read, path.Join(path.Dir(name), "cgroup.procs")) {
					return -1
				}
				return n
			}
		}
	}
	return -1
}

// sharedCgroup reports whether the cgroup whose cgroup.procs is procs holds
// a process that is neither this process, one of its ancestors (the shell or
// init that launched it, as a container's or YARN's launch script) nor one
// of its descendants (PySpark's workers): the rule the demo's report
// follows. False when procs cannot be read (nothing shows it shared).
func sharedCgroup(read readFileFunc, procs string) bool {
	b, err := read(procs)
	if err != nil {
		return false
	}
	self, ppid, ok := procStat(read, "self")
	if !ok {
		return false
	}
	own := map[int64]bool{self: true}
	for p, i := ppid, 0; p > 0 && i < 64; i++ { // the ancestors
		own[p] = true
		_, next, ok := procStat(read, strconv.FormatInt(p, 10))
		if !ok {
			break
		}
		p = next
	}
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.ParseInt(f, 10, 64)
		if err != nil || own[pid] {
			continue
		}
		if !descendantOf(read, pid, self) {
			return true
		}
	}
	return false
}

// descendantOf reports whether pid's chain of parents reaches ancestor.
func descendantOf(read readFileFunc, pid, ancestor int64) bool {
	for i := 0; pid > 1 && i < 64; i++ {
		_, ppid, ok := procStat(read, strconv.FormatInt(pid, 10))
		if !ok {
			return false
		}
		if ppid == ancestor {
			return true
		}
		pid = ppid
	}
	return false
}

// procStat returns the pid and parent pid of /proc/<pid>/stat ("self" for
// this process); ok false when it cannot be read.
func procStat(read readFileFunc, pid string) (self, ppid int64, ok bool) {
	b, err := read("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b) // pid (comm) state ppid …; comm may hold spaces and parentheses
	open, close := strings.IndexByte(s, ' '), strings.LastIndexByte(s, ')')
	if open < 0 || close < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[close+1:])
	if len(f) < 2 {
		return 0, 0, false
	}
	self, err1 := strconv.ParseInt(s[:open], 10, 64)
	ppid, err2 := strconv.ParseInt(f[1], 10, 64)
	return self, ppid, err1 == nil && err2 == nil
}
