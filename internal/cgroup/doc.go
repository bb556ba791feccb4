// Package cgroup reads what the Linux kernel's OOM killer acts on for the
// memory cgroup a process is in. It serves the pod guard: a goroutine in an
// executor's JVM that keeps native memory below the container's limit.
//
// Both hierarchies are read: cgroup v1's memory controller, which wins on a
// hybrid host, and cgroup v2. Locate finds the group once from
// /proc/self/cgroup and /proc/self/mountinfo, which also places it
// correctly inside a cgroup namespace or a bind mount. Every file is read
// through a ReadFunc, so the parsers run on fixture files in tests.
//
// # Where each job lives
//
//	cgroup.go          ReadFunc, Version, Group
//	locate.go          Locate, LocateProc: /proc/<pid>/cgroup and
//	                   mountinfo to the group's directory and, on v2, the
//	                   directories whose memory.max count
//	parse.go           allocation-free parsing of the kernel's text files
package cgroup
