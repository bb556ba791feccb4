//go:build !unix

package cgroup

import (
	"errors"
	"io"
	"os"
)

// readAt0 reads f from offset 0 into buf.
func readAt0(f *os.File, buf []byte) (int, error) {
	n, err := f.ReadAt(buf, 0)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}
