package cgroup

import "fmt"

// ProcessResident returns the calling process's resident memory that the
// kernel cannot drop, in bytes: RssAnon + RssShmem of /proc/self/status
// (anonymous and shared-memory pages; clean file-backed pages, RssFile,
// do not count, as page cache does not count in Reading.Unreclaimable). It
// is the figure to hold against a configured limit where there is no
// memory cgroup to read (local mode, YARN's process-tree check). On a
// kernel without the split (before Linux 4.5) it is VmRSS, all resident
// pages. It is ProcessResidentProc(read, "/proc/self").
func ProcessResident(read ReadFunc) (anonAndShmem int64, err error) {
	return ProcessResidentProc(read, "/proc/self")
}

// ProcessResidentProc is ProcessResident for the process whose /proc
// directory is proc ("/proc/1234").
func ProcessResidentProc(read ReadFunc, proc string) (anonAndShmem int64, err error) {
	name := proc + "/status"
	b, err := read(name)
	if err != nil {
		return 0, fmt.Errorf("cgroup: resident: %w", err)
	}
	anon, shmem, rss := int64(-1), int64(-1), int64(-1)
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		key, v := cutByte(line, ':')
		var dst *int64
		switch string(key) {
		case "RssAnon":
			dst = &anon
		case "RssShmem":
			dst = &shmem
		case "VmRSS":
			dst = &rss
		default:
			continue
		}
		if n, ok := kiB(v); ok {
			*dst = n
		}
	}
	switch {
	case anon >= 0:
		return anon + part(shmem), nil
	case rss >= 0:
		return rss, nil
	}
	return 0, fmt.Errorf("cgroup: resident: %s has neither RssAnon nor VmRSS: %w", name, ErrMalformed)
}

// kiB parses a /proc/<pid>/status size ("\t  116 kB") into bytes.
func kiB(v []byte) (int64, bool) {
	v = trimSpace(v)
	num, unit := cutByte(v, ' ')
	if string(trimSpace(unit)) != "kB" {
		return 0, false
	}
	n, ok := parseInt(num)
	if !ok || n > (1<<63-1)>>10 {
		return 0, false
	}
	return n << 10, true
}
