package writeback

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// MappedFiles returns the files a process maps, from the text of its
// /proc/<pid>/maps: each absolute path once, in the order first listed.
// Anonymous mappings, pseudo-paths ([heap], [stack]) and files deleted since
// they were mapped are left out; a line that does not parse is skipped.
func MappedFiles(maps io.Reader) []string {
	var paths []string
	seen := make(map[string]bool)
	sc := bufio.NewScanner(maps)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		// address perms offset dev inode pathname; the path may hold spaces.
		line := sc.Text()
		rest := line
		ok := true
		for range 5 {
			rest = strings.TrimLeft(rest, " \t")
			i := strings.IndexAny(rest, " \t")
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i:]
		}
		path := strings.TrimLeft(rest, " \t")
		if !ok || !strings.HasPrefix(path, "/") || strings.HasSuffix(path, " (deleted)") {
			continue
		}
		path = filepath.Clean(path)
		if !seen[path] {
			seen[path] = true
			paths = append(paths, path)
		}
	}
	return paths
}

// WriteBackMapped writes back and drops from the page cache every regular
// file listed in maps (the text of /proc/self/maps) that was modified within
// Recent of now: the native libraries that the JVM's engines extract into
// its temporary directory when they load (Comet's libcomet.so is 145 MB,
// nativepool's own library 11 MB) and then map. Written once at start,
// their pages stay dirty, charged to the memory group, until the kernel's
// own writeback about 30 s later, which a pod near its limit may not
// live to see. Older files (the JDK's, the system's) are left alone. Like
// WriteBack, it never fails, and runs one call at a time with it.
func (d *Dirs) WriteBackMapped(now time.Time, maps io.Reader) Result {
	files := MappedFiles(maps)
	d.writing.Lock()
	defer d.writing.Unlock()
	var r Result
	since := now.Add(-Recent)
	for _, path := range files {
		if info, err := os.Stat(path); err == nil {
			r.add(path, info, since)
		}
	}
	return r
}
