package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Locate finds the memory cgroup of the calling process from
// /proc/self/cgroup and /proc/self/mountinfo, both read through read. It is
// LocateProc(read, "/proc/self").
func Locate(read ReadFunc) (g Group, ok bool, err error) {
	return LocateProc(read, "/proc/self")
}

// LocateProc finds the memory cgroup of the process whose /proc directory is
// proc ("/proc/self", "/proc/1234"): Locate for another process, which is
// how tests look at a child they moved into a cgroup.
//
//   - cgroup v1: the line of proc/cgroup whose controllers include
//     "memory", and a mount of fstype "cgroup" whose super options include
//     "memory".
//   - cgroup v2: the "0::<path>" line, and a mount of fstype "cgroup2"
//     (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host) whose
//     group lists "memory" in its cgroup.controllers.
//   - v1's memory controller wins when it is mounted: on a hybrid host it is
//     the one that limits, and the unified hierarchy has no memory
//     controller.
//   - The directory is the mount point joined with the process's path made
//     relative to the mount's root (mountinfo's fourth field). That also
//     covers cgroup namespaces and bind-mounted groups: inside a container
//     the path is often "/" and the container's own group is what is
//     mounted at the mount point.
//
// ok is false, with no error, when the process has no memory cgroup that
// can be read: no proc/cgroup (not Linux, no /proc), no memory controller
// in either hierarchy, or no mount of it that holds the process's group.
// An error is returned when a file cannot be read for another reason than
// its absence, or when mountinfo is absent while proc/cgroup names a group.
func LocateProc(read ReadFunc, proc string) (g Group, ok bool, err error) {
	cg, err := read(proc + "/cgroup")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Group{}, false, nil
		}
		return Group{}, false, fmt.Errorf("cgroup: locate: %w", err)
	}
	v1Path, v2Path := parseProcCgroup(cg)
	if v1Path == "" && v2Path == "" {
		return Group{}, false, nil
	}
	mi, err := read(proc + "/mountinfo")
	if err != nil {
		return Group{}, false, fmt.Errorf("cgroup: locate: %w", err)
	}
	mounts := parseMountinfo(mi)
	if v1Path != "" {
		if dir, _, found := mountDir(mounts, V1, v1Path); found {
			return Group{Version: V1, Path: v1Path, Dir: dir}, true, nil
		}
	}
	if v2Path == "" {
		return Group{}, false, nil
	}
	dir, mountPoint, found := mountDir(mounts, V2, v2Path)
	if !found {
		return Group{}, false, nil
	}
	ctl, err := read(dir + "/cgroup.controllers")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Group{}, false, nil
		}
		return Group{}, false, fmt.Errorf("cgroup: locate: %w", err)
	}
	if !hasField(ctl, "memory") {
		return Group{}, false, nil
	}
	var limitDirs []string
	for d := dir; ; d = path.Dir(d) {
		limitDirs = append(limitDirs, d)
		if d == mountPoint || d == "/" || d == "." {
			break
		}
	}
	return Group{Version: V2, Path: v2Path, Dir: dir, LimitDirs: limitDirs}, true, nil
}

// parseProcCgroup returns the path of the v1 memory controller's line and
// of the v2 line ("0::path") of a /proc/<pid>/cgroup, "" for a line that is
// not there. Lines are "hierarchy-ID:controller-list:path"; malformed ones
// are skipped.
func parseProcCgroup(b []byte) (v1, v2 string) {
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		id, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		controllers, p, ok := bytes.Cut(rest, []byte(":"))
		if !ok || len(p) == 0 || p[0] != '/' {
			continue
		}
		switch {
		case string(id) == "0" && len(controllers) == 0:
			if v2 == "" {
				v2 = string(p)
			}
		case v1 == "" && hasListItem(controllers, "memory"):
			v1 = string(p)
		}
	}
	return v1, v2
}

// mount is one cgroup mount of a mountinfo: the version of its hierarchy
// (V1 only for one with the memory controller attached), the path of the
// hierarchy mounted there (root), and where (point).
type mount struct {
	version     Version
	root, point string
}

// parseMountinfo returns the cgroup mounts of a /proc/<pid>/mountinfo:
// fstype "cgroup2", and fstype "cgroup" with "memory" among its super
// options. A line is "ID parent major:minor root mount-point options
// [optional fields...] - fstype source super-options"; malformed lines are
// skipped.
func parseMountinfo(b []byte) []mount {
	var out []mount
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		f := strings.Fields(string(line))
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) {
			continue
		}
		var v Version
		switch f[sep+1] {
		case "cgroup2":
			v = V2
		case "cgroup":
			if sep+3 < len(f) && hasListItem([]byte(f[sep+3]), "memory") {
				v = V1
			}
		}
		if v == 0 {
			continue
		}
		out = append(out, mount{version: v, root: unescapeMount(f[3]), point: unescapeMount(f[4])})
	}
	return out
}

// mountDir returns the directory of the group at path p (as
// /proc/<pid>/cgroup lists it) under the mounts of version v, and the mount
// point it is under. When several mounts hold it (bind mounts of a
// subtree), the one whose root is the longest wins: its mount point is the
// closest to the group.
func mountDir(mounts []mount, v Version, p string) (dir, point string, ok bool) {
	if strings.Contains(p+"/", "/../") {
		return "", "", false // above the namespace's root: not reachable through a mount
	}
	best := -1
	for _, m := range mounts {
		if m.version != v || !strings.HasPrefix(m.point, "/") {
			// The kernel writes absolute mount points; a relative one would make
			// the group's files relative to the working directory.
			continue
		}
		rel, in := relativeTo(m.root, p)
		if !in || len(m.root) <= best {
			continue
		}
		best = len(m.root)
		dir, point, ok = path.Join(m.point, rel), path.Clean(m.point), true
	}
	return dir, point, ok
}

// relativeTo returns p relative to root ("/" for root itself), and whether
// p is root or under it.
func relativeTo(root, p string) (string, bool) {
	root, p = path.Clean(root), path.Clean(p)
	switch {
	case root == "/":
		return p, true
	case p == root:
		return "/", true
	case strings.HasPrefix(p, root+"/"):
		return p[len(root):], true
	}
	return "", false
}

// unescapeMount undoes mountinfo's octal escapes of a path (\040 for a
// space, \011, \012, \134 for a backslash). A malformed escape is kept as
// it is.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// hasListItem reports whether the comma-separated list holds item.
func hasListItem(list []byte, item string) bool {
	for len(list) > 0 {
		var it []byte
		it, list, _ = bytes.Cut(list, []byte(","))
		if string(it) == item {
			return true
		}
	}
	return false
}

// hasField reports whether the space-separated b (cgroup.controllers)
// holds word.
func hasField(b []byte, word string) bool {
	for _, f := range bytes.Fields(b) {
		if string(f) == word {
			return true
		}
	}
	return false
}
