// Package cgroup reads what the Linux kernel's OOM killer acts on for the
// memory cgroup a process is in, and wakes a watcher when memory gets
// tight. It serves the pod guard: a goroutine in an executor's JVM that
// keeps native memory below the container's limit, sampling every few tens
// of milliseconds when memory is tight, so a sample is a handful of
// positioned reads and no allocation (Sampler).
//
// The kernel kills when the group's charged memory reaches its limit and
// reclaim cannot free enough; without swap it can free only clean page
// cache. So a Reading carries the limit, the usage (page cache included)
// and the part of it the kernel cannot drop (Unreclaimable: anonymous,
// shared, dirty and under-writeback pages, kernel stacks and socket
// buffers). A spill file that has been written is clean page cache: it
// raises Usage and never Unreclaimable.
//
// Both hierarchies are read: cgroup v1's memory controller, which wins on a
// hybrid host, and cgroup v2. Locate finds the group once from
// /proc/self/cgroup and /proc/self/mountinfo, which also places it
// correctly inside a cgroup namespace or a bind mount. Every file is read
// through a ReadFunc, so the parsers run on fixture files in tests. Where
// there is no cgroup, ProcessResident splits the process's own resident
// memory the same way, and TreeReader reads what YARN's NodeManager kills a
// container over without cgroups: the resident pages of every process of
// the container's process tree.
//
// The wake-ups are Linux's: a v1 usage threshold (an eventfd registered
// through cgroup.event_control) and a v2 PSI trigger on memory.pressure.
// Either one only says "sample now"; where neither is available the error
// wraps errors.ErrUnsupported and the watcher samples at a fixed pace. The
// package is pure Go and builds with CGO_ENABLED=0; elsewhere than Linux
// the wake-ups return that error.
//
// # Where each job lives
//
//	cgroup.go          ReadFunc, Version, Group, ErrMalformed
//	locate.go          Locate, LocateProc: /proc/<pid>/cgroup and
//	                   mountinfo to the group's directory and, on v2, the
//	                   directories whose memory.max count
//	read.go            Reading, Group.Read: the files of each version and
//	                   their parsing into one Reading
//	parse.go           allocation-free parsing of the kernel's text files
//	sampler.go         Sampler: a Group's files kept open, one buffer
//	sampler_unix.go    the positioned read a Sampler takes a file with
//	sampler_other.go   the same read where there is no pread
//	resident.go        ProcessResident, ProcessResidentProc:
//	                   /proc/<pid>/status's RssAnon + RssShmem
//	tree.go            TreeReader, Tree, ProcPIDs: a process tree's resident
//	                   pages (/proc/<pid>/stat), as YARN's container
//	                   monitor sums them
//	watch.go           Watch: the channel and the idempotent Close
//	notify_linux.go    NotifyAbove (v1 threshold eventfd), NotifyPressure
//	                   (v2 PSI trigger), the polling goroutine
//	notify_other.go    both wake-ups as unsupported elsewhere than Linux
//
// # Tests
//
// Most tests read fixture trees, maps of file name to content copied from
// real kernels' formats (fixtures_test.go). real_linux_test.go runs against
// the kernel: as root with a writable v1 memory controller it creates
// cgroups, moves a helper process (the test binary run again) into them
// and checks what Read and the wake-ups report as the helper allocates,
// spills and is OOM-killed; without those it is skipped.
package cgroup
