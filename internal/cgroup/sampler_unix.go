//go:build unix

package cgroup

import (
	"errors"
	"os"
	"syscall"
)

// readAt0 reads f from offset 0 into buf with one pread: the kernel
// regenerates a cgroup or proc file's content on a read at offset 0, so a
// file kept open reads as fresh as a new open. os.File.ReadAt would issue
// a second pread to see the end of the file.
func readAt0(f *os.File, buf []byte) (int, error) {
	for {
		n, err := syscall.Pread(int(f.Fd()), buf, 0)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		return max(n, 0), err
	}
}
