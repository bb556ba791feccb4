package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Sampler takes Readings of one Group with the group's files kept open and
// one buffer reused, for a watcher that samples every few tens of
// milliseconds: a sample is one positioned read per file, with no path
// lookup, no open and no allocation. A Sampler is not safe for concurrent
// use.
type Sampler struct {
	g     Group
	files []groupFile
	open  []*os.File // open[i] reads files[i]; nil for an optional file that was absent
	buf   []byte
}

// samplerBuf is a Sampler's first buffer size: a v2 memory.stat, the
// longest file it reads, is about 1.5 KiB.
const samplerBuf = 8 << 10

// maxFile bounds the buffer a Sampler grows to fit a file; a cgroup file
// longer than this is not one of the files it knows.
const maxFile = 1 << 20

// NewSampler opens the files g.Read reads. An essential file (usage,
// memory.stat) that cannot be opened is an error, wrapping the open's
// (fs.ErrNotExist when it is absent); an optional file that is absent
// leaves its figures at -1 in every Reading, as it does in g.Read. Close
// releases the files.
func NewSampler(g Group) (*Sampler, error) {
	files := g.files()
	if files == nil {
		return nil, fmt.Errorf("cgroup: sampler: a Group of no known version (%d), not one Locate returned: %w", int(g.Version), ErrMalformed)
	}
	s := &Sampler{g: g, files: files, open: make([]*os.File, len(files)), buf: make([]byte, samplerBuf)}
	for i, file := range files {
		f, err := os.Open(file.name)
		if err != nil {
			if !file.role.essential() && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			s.Close()
			return nil, fmt.Errorf("cgroup: sampler: %w", err)
		}
		s.open[i] = f
	}
	return s, nil
}

// Group returns the group the Sampler reads.
func (s *Sampler) Group() Group { return s.g }

// Read takes one sample: the figures and the errors of Group.Read, read
// through the files opened by NewSampler.
func (s *Sampler) Read() (Reading, error) {
	if s.files == nil {
		return Reading{}, fmt.Errorf("cgroup: sampler: %w", os.ErrClosed)
	}
	return s.g.sample(s.files, s)
}

// fetch reads file i from its start into the Sampler's buffer, growing the
// buffer while the file fills it.
func (s *Sampler) fetch(i int, name string) ([]byte, error) {
	f := s.open[i]
	if f == nil {
		return nil, fs.ErrNotExist
	}
	for {
		n, err := readAt0(f, s.buf)
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if n < len(s.buf) {
			return s.buf[:n], nil
		}
		if len(s.buf) >= maxFile {
			return nil, fmt.Errorf("cgroup: %s is longer than %d bytes: %w", name, maxFile, ErrMalformed)
		}
		s.buf = make([]byte, 2*len(s.buf))
	}
}

// Close closes the Sampler's files. It may be called more than once; Read
// after Close is an error.
func (s *Sampler) Close() error {
	var errs []error
	for i, f := range s.open {
		if f != nil {
			errs = append(errs, f.Close())
			s.open[i] = nil
		}
	}
	s.files = nil
	return errors.Join(errs...)
}
