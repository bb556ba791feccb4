//go:build linux

package writeback

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncAndDrop writes the file's dirty pages and waits for them
// (sync_file_range over the whole file: no metadata, no journal commit, as
// fdatasync would), then advises the kernel to drop its pages from the
// page cache. A read-only descriptor is enough for both.
func syncAndDrop(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fd := int(f.Fd())
	if err := unix.SyncFileRange(fd, 0, 0,
		unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER); err != nil {
		return err
	}
	return unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
}
