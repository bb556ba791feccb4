// Package spillfile makes the files the examples' operators spill to: the
// external sort's run files (examples/sort) and the streaming aggregation's
// runs (examples/spark/native). It is demo engine code, not part of
// nativepool's API.
//
// Each operator owns one Dir, a private directory made when the operator is
// built and removed, with whatever it still holds, when the operator
// closes. Dir.Create opens the next file, named in the order the files are
// made (run-000001.arrow, run-000002.arrow, ...); the operator writes it
// through the File, which counts the bytes, and closes it. A file that
// cannot be completed is removed, so a directory never holds a partial
// run. Readers open a completed file by its path and remove it when they
// are done with it.
//
// # Files written recently
//
// A Dir remembers the last RecentFiles files it completed (path and
// size): Dir.Recent lists them, oldest first. It is the way for code that
// acts on freshly spilled files (for example, starting the writeback of
// their dirty pages so that page cache does not pile up under a memory
// limit) to find them without the operator telling it. The list keeps
// a file after a reader removed it; a caller must expect a path that no
// longer exists.
package spillfile

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// RecentFiles is how many completed files Dir.Recent lists at most.
const RecentFiles = 32

// Written is a completed spill file: where it is and how many bytes it
// holds.
type Written struct {
	Path  string
	Bytes int64
}

// Dir is an operator's private directory of spill files. It is safe for
// concurrent use by multiple goroutines. The zero Dir is not usable; build
// one with New.
type Dir struct {
	path string
	ext  string

	// mu guards the file numbering and the list of recent files. It is
	// never held across file I/O.
	mu struct {
		sync.Mutex
		seq int // number of the last file Create made; written by Create
		// recent are the last completed files, oldest first, at most
		// RecentFiles; appended by File.Close.
		recent []Written
	}
}

// New makes a private directory in parent (os.TempDir() when parent is
// ""), named pattern as os.MkdirTemp names it (a "*" is replaced by a
// random string). Its files' names end in ext (".arrow", or "" for none).
// On error nothing is created.
func New(parent, pattern, ext string) (*Dir, error) {
	path, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		return nil, fmt.Errorf("spillfile: %w", err)
	}
	return &Dir{path: path, ext: ext}, nil
}

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

// Create opens the next spill file of the directory for writing: a new
// file (never one that exists) readable and writable by this user only.
// On error no file is left behind.
func (d *Dir) Create() (*File, error) {
	d.mu.Lock()
	d.mu.seq++
	seq := d.mu.seq
	d.mu.Unlock()
	path := filepath.Join(d.path, fmt.Sprintf("run-%06d%s", seq, d.ext))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spillfile: create: %w", err)
	}
	return &File{dir: d, path: path, f: f}, nil
}

// WriteFile writes b to the next spill file of the directory, straight from
// b's memory (no buffer of its own), closes it and returns it. On error no
// file is left behind.
func (d *Dir) WriteFile(b []byte) (Written, error) {
	f, err := d.Create()
	if err != nil {
		return Written{}, err
	}
	if _, err := f.Write(b); err != nil {
		f.Abort()
		return Written{}, err
	}
	if err := f.Close(); err != nil {
		return Written{}, err
	}
	return Written{Path: f.Name(), Bytes: f.Bytes()}, nil
}

// Recent lists the files the directory completed last, at most
// RecentFiles, oldest first (see the package doc). The slice is the
// caller's.
func (d *Dir) Recent() []Written {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Written(nil), d.mu.recent...)
}

// RemoveAll removes the directory and every file in it. Files still open
// for writing become unreachable; their later Close or Abort fails or does
// nothing. RemoveAll is idempotent.
func (d *Dir) RemoveAll() error {
	if err := os.RemoveAll(d.path); err != nil {
		return fmt.Errorf("spillfile: %w", err)
	}
	return nil
}

// completed adds w to the recent files.
func (d *Dir) completed(w Written) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.mu.recent) == RecentFiles {
		d.mu.recent = append(d.mu.recent[:0], d.mu.recent[1:]...)
	}
	d.mu.recent = append(d.mu.recent, w)
}

// File is a spill file being written. It is an io.WriteCloser that counts
// the bytes written. It is not safe for concurrent use: one goroutine
// writes it and then calls Close or Abort. The zero File is not usable;
// build one with Dir.Create.
type File struct {
	dir     *Dir
	path    string
	f       *os.File // nil once closed or aborted
	written int64
}

// Name is the file's path.
func (f *File) Name() string { return f.path }

// Bytes is the number of bytes written to the file so far.
func (f *File) Bytes() int64 { return f.written }

// Write writes p to the file. On error the file is incomplete: Abort it.
func (f *File) Write(p []byte) (int, error) {
	if f.f == nil {
		return 0, fmt.Errorf("spillfile: write %s: %w", f.path, os.ErrClosed)
	}
	n, err := f.f.Write(p)
	f.written += int64(n)
	if err != nil {
		return n, fmt.Errorf("spillfile: write %s: %w", f.path, err)
	}
	return n, nil
}

// Close closes the completed file; the directory then lists it among its
// recent files. When closing fails the file is incomplete: Close removes it
// and returns the error. Close after Close or Abort returns an error
// wrapping os.ErrClosed.
func (f *File) Close() error {
	if f.f == nil {
		return fmt.Errorf("spillfile: close %s: %w", f.path, os.ErrClosed)
	}
	err := f.f.Close()
	f.f = nil
	if err != nil {
		os.Remove(f.path)
		return fmt.Errorf("spillfile: close %s: %w", f.path, err)
	}
	f.dir.completed(Written{Path: f.path, Bytes: f.written})
	return nil
}

// Abort closes and removes a file that could not be completed. It is
// idempotent, and does nothing after Close.
func (f *File) Abort() {
	if f.f == nil {
		return
	}
	f.f.Close()
	f.f = nil
	// A file already gone (the directory removed first) is not an error.
	os.Remove(f.path)
}
