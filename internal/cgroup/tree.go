package cgroup

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Tree is one reading of a process tree's resident memory as YARN's
// NodeManager measures a container without cgroups (its container monitor,
// yarn.nodemanager.pmem-check-enabled, ProcfsBasedProcessTree): the sum,
// over the tree's processes, of the resident pages of /proc/<pid>/stat
// (its rss field: anonymous, file-backed and shared pages alike) times the
// page size. That is more than the kernel could not reclaim (page cache of
// mapped files counts) and more than one process holds (Python workers a
// JVM started count), and it is what YARN kills a container over.
type Tree struct {
	// Root is the process the tree is rooted at (TreeReader says which).
	Root int
	// Resident is the tree's resident memory, in bytes: every process's.
	Resident int64
	// Self is the resident memory of the process the reader was made for.
	Self int64
	// Processes is how many processes the tree has, Self's included.
	Processes int
	// Others are the tree's other processes, largest first.
	Others []TreeProcess
}

// TreeProcess is one process of a Tree other than the reader's own.
type TreeProcess struct {
	PID int
	// Command is the process's name (/proc/<pid>/stat's comm, at most 15
	// bytes: "python3", "bash").
	Command string
	// Resident is its resident memory, in bytes.
	Resident int64
}

// TreeReader reads the resident memory of the process tree a process
// belongs to, as YARN measures its container: Read sums the tree's
// processes. The tree is rooted at the process itself, or at the
// outermost of its ancestors that YARN's launch scripts are (a shell,
// "bash", "sh" or "dash", in the process's own session, up to the session's
// leader: with setsid, as YARN's container executors start a container,
// that leader is the container's root, the process whose pid YARN records);
// every descendant of the root counts, the Python workers a Spark executor
// forks included.
//
// The tree's membership is found by listing /proc at most once per rescan
// period (a new process is counted from the first rescan after it
// started), and between rescans only the known processes' stat files are
// read: a few reads per sample. A TreeReader is safe for concurrent use;
// the zero TreeReader is not usable: use NewTreeReader.
type TreeReader struct {
	read     ReadFunc
	list     func() ([]int, error)
	self     int
	pageSize int64
	rescan   time.Duration
	now      func() time.Time

	mu struct {
		sync.Mutex
		root    int
		members []int // the tree's pids, self's included, found at scanned
		scanned time.Time
	}
}

// TreeRescan is how often a TreeReader lists /proc again for new members:
// once a second, three times as often as YARN's monitor samples by default
// (yarn.nodemanager.container-monitor.interval-ms, 3 s).
const TreeRescan = time.Second

// NewTreeReader reads the tree of process self through read (files such as
// "/proc/1234/stat") and list (the pids under /proc), with pages of
// pageSize bytes, listing /proc again every rescan (0: TreeRescan).
func NewTreeReader(read ReadFunc, list func() ([]int, error), self int, pageSize int64, rescan time.Duration) *TreeReader {
	if rescan <= 0 {
		rescan = TreeRescan
	}
	return &TreeReader{read: read, list: list, self: self, pageSize: pageSize, rescan: rescan, now: time.Now}
}

// procStat is what a Tree needs of /proc/<pid>/stat.
type procStat struct {
	comm    string
	ppid    int
	session int
	rss     int64 // pages
}

// readStat reads /proc/<pid>/stat.
func (t *TreeReader) readStat(pid int) (procStat, error) {
	b, err := t.read("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// parseStat reads the fields of a /proc/<pid>/stat line a Tree needs:
// "pid (comm) state ppid pgrp session … rss …", where comm may hold spaces
// and parentheses (the last ')' ends it) and rss is the 24th field.
func parseStat(b []byte) (procStat, error) {
	open := slices.Index(b, '(')
	end := -1
	for i := len(b) - 1; i > open; i-- {
		if b[i] == ')' {
			end = i
			break
		}
	}
	if open < 0 || end < 0 {
		return procStat{}, fmt.Errorf("cgroup: stat %q: %w", b, ErrMalformed)
	}
	s := procStat{comm: string(b[open+1 : end])}
	// the fields after comm: state (3), ppid (4), pgrp (5), session (6), …, rss (24)
	rest := b[end+1:]
	var f []byte
	for field := 3; field <= 24; field++ {
		for len(rest) > 0 && isSpace(rest[0]) {
			rest = rest[1:]
		}
		f, rest = cutByte(rest, ' ')
		if len(f) == 0 {
			return procStat{}, fmt.Errorf("cgroup: stat %q: field %d missing: %w", b, field, ErrMalformed)
		}
		if field != 4 && field != 6 && field != 24 {
			continue
		}
		v, ok := parseInt(trimSpace(f))
		if !ok {
			return procStat{}, fmt.Errorf("cgroup: stat field %d %q: %w", field, f, ErrMalformed)
		}
		switch field {
		case 4:
			s.ppid = int(v)
		case 6:
			s.session = int(v)
		default:
			s.rss = v
		}
	}
	return s, nil
}

// ProcPIDs lists the processes under /proc.
func ProcPIDs() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(entries))
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// launchShell says whether comm is a shell of the kind YARN's launch
// scripts run in.
func launchShell(comm string) bool {
	switch comm {
	case "bash", "sh", "dash":
		return true
	}
	return false
}

// scanLocked lists /proc and finds the tree: its root and every member.
// The caller holds t.mu.
func (t *TreeReader) scanLocked() error {
	pids, err := t.list()
	if err != nil {
		return fmt.Errorf("cgroup: process tree: %w", err)
	}
	stats := make(map[int]procStat, len(pids))
	children := make(map[int][]int, len(pids))
	for _, pid := range pids {
		s, err := t.readStat(pid)
		if err != nil {
			continue // gone since the listing, or not ours to read
		}
		stats[pid] = s
		children[s.ppid] = append(children[s.ppid], pid)
	}
	me, ok := stats[t.self]
	if !ok {
		return fmt.Errorf("cgroup: process tree: no /proc/%d/stat", t.self)
	}
	root := t.self
	for cur := me; root != cur.session; {
		parent, ok := stats[cur.ppid]
		if !ok || parent.session != me.session || !launchShell(parent.comm) {
			break
		}
		root, cur = cur.ppid, parent
	}
	members := []int{root}
	for i := 0; i < len(members); i++ {
		members = append(members, children[members[i]]...)
	}
	t.mu.root, t.mu.members, t.mu.scanned = root, members, t.now()
	return nil
}

// Read reads the tree now: every member's resident pages, the members
// listed again when the last listing is a rescan period old. A member that
// has exited since counts nothing.
func (t *TreeReader) Read() (Tree, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.members == nil || t.now().Sub(t.mu.scanned) >= t.rescan {
		if err := t.scanLocked(); err != nil {
			return Tree{}, err
		}
	}
	tr := Tree{Root: t.mu.root}
	for _, pid := range t.mu.members {
		s, err := t.readStat(pid)
		if err != nil {
			if pid == t.self {
				return Tree{}, fmt.Errorf("cgroup: process tree: %w", err)
			}
			continue
		}
		bytes := s.rss * t.pageSize
		tr.Resident += bytes
		tr.Processes++
		if pid == t.self {
			tr.Self = bytes
		} else {
			tr.Others = append(tr.Others, TreeProcess{PID: pid, Command: s.comm, Resident: bytes})
		}
	}
	slices.SortFunc(tr.Others, func(a, b TreeProcess) int {
		if a.Resident != b.Resident {
			if a.Resident > b.Resident {
				return -1
			}
			return 1
		}
		return a.PID - b.PID
	})
	return tr, nil
}
