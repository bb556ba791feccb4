package writeback

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// ErrInvalidDir is wrapped by Add's errors: the directory is not an
// absolute path, or not a directory.
var ErrInvalidDir = errors.New("writeback: not a spill directory")

// Recent is how far back a file's last write makes it a candidate: the
// kernel writes dirty pages back by itself once they are older than its
// dirty_expire interval (30 s by default), so older files are clean or
// being written already.
const Recent = 35 * time.Second

// MaxDepth is how deep under a directory the walk looks: Spark's spill
// files sit at depth 3 under a local directory (blockmgr-<uuid>/<two hex
// digits>/temp_…), an engine's one or two levels down.
const MaxDepth = 4

// Dirs is the set of directories spills write in. The zero value is an
// empty set ready for use. A Dirs is safe for concurrent use; WriteBack
// calls run one at a time (a second waits for the first).
type Dirs struct {
	mu   sync.Mutex // guards dirs
	dirs []string   // cleaned absolute paths, in the order added, no duplicates
	// writing serialises WriteBack: each call walks and syncs alone.
	writing sync.Mutex
}

// Add adds dir (an absolute path to an existing directory) to the set; a
// directory already in it is not added twice. On error the set is
// unchanged.
func (d *Dirs) Add(dir string) error {
	if dir == "" || !filepath.IsAbs(dir) {
		return fmt.Errorf("%w: %q is not an absolute path", ErrInvalidDir, dir)
	}
	clean := filepath.Clean(dir)
	st, err := os.Stat(clean)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidDir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%w: %q is not a directory", ErrInvalidDir, dir)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Contains(d.dirs, clean) {
		d.dirs = append(d.dirs, clean)
	}
	return nil
}

// List returns the directories, in the order added.
func (d *Dirs) List() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.dirs)
}

// Result is what one WriteBack did.
type Result struct {
	// Files is how many recently written files it wrote back and dropped
	// from the page cache; Bytes their sizes.
	Files int
	Bytes int64
	// Failed counts files it could not open or sync (gone meanwhile, or
	// not readable); they are skipped.
	Failed int
}

// WriteBack writes back and drops from the page cache every regular file
// modified within Recent of now under the directories, at most MaxDepth
// levels down, and returns when their pages are written. A directory or
// file that vanished meanwhile is skipped. It never fails: what it could
// not do is counted in Result.Failed.
func (d *Dirs) WriteBack(now time.Time) Result {
	d.writing.Lock()
	defer d.writing.Unlock()
	var r Result
	since := now.Add(-Recent)
	for _, root := range d.List() {
		_ = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				if path == root {
					return fs.SkipDir
				}
				return nil // a directory that vanished or cannot be read
			}
			if e.IsDir() {
				if depth(root, path) >= MaxDepth {
					return fs.SkipDir
				}
				return nil
			}
			if info, err := e.Info(); err == nil {
				r.add(path, info, since)
			}
			return nil
		})
	}
	return r
}

// add writes back and drops path, described by info, if it is a regular
// file modified since since, and counts it in r: written, or failed.
func (r *Result) add(path string, info fs.FileInfo, since time.Time) {
	if !info.Mode().IsRegular() || info.ModTime().Before(since) {
		return
	}
	if err := syncAndDrop(path); err != nil {
		r.Failed++
		return
	}
	r.Files++
	r.Bytes += info.Size()
}

// depth is how many levels path is below root.
func depth(root, path string) int {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == "." {
		return 0
	}
	n := 1
	for _, c := range rel {
		if c == filepath.Separator {
			n++
		}
	}
	return n
}
