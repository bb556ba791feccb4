//go:build linux

package writeback_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/nativepool/nativepool/internal/writeback"
)

// cachedPages counts the file's pages in the page cache (mincore over a
// read-only mapping, which reads nothing).
func cachedPages(t *testing.T, path string) (cached, total int) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	require.Zero(t, errno)
	for _, v := range vec {
		if v&1 != 0 {
			cached++
		}
	}
	return cached, len(vec)
}

// A spill file just written sits in the page cache, partly dirty; after
// WriteBack its pages are on disk and out of the cache, so that a memory
// group no longer holds them.
func TestWriteBackDropsTheSpillFilesPagesFromThePageCache(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run-000001.arrow")
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i)
	}
	require.NoError(t, os.WriteFile(path, data, 0o600))
	cached, total := cachedPages(t, path)
	require.Greater(t, cached, total/2, "a file just written is in the page cache")

	var d writeback.Dirs
	require.NoError(t, d.Add(dir))
	r := d.WriteBack(time.Now())
	assert.Equal(t, 1, r.Files)
	cached, _ = cachedPages(t, path)
	assert.Less(t, cached, total/8, "written back and dropped: %d of %d pages left", cached, total)
}

// A file the process maps right after writing it (a native library
// extracted at load) is in /proc/self/maps, and WriteBackMapped writes it
// back and drops its unmapped pages.
func TestAFileJustWrittenAndMappedIsWrittenBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "libextracted.so")
	require.NoError(t, os.WriteFile(path, make([]byte, 1<<20), 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer unix.Munmap(m)

	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	assert.Contains(t, writeback.MappedFiles(bytes.NewReader(maps)), path)
	var d writeback.Dirs
	r := d.WriteBackMapped(time.Now(), bytes.NewReader(maps))
	assert.GreaterOrEqual(t, r.Files, 1)
	assert.Zero(t, r.Failed)
	cached, total := cachedPages(t, path)
	assert.Less(t, cached, total/2, "its pages left the page cache, but for the one page mapped")
}
