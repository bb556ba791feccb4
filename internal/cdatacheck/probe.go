package cdatacheck

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Reading memory at addresses Java hands over without ever faulting
// (validate.go uses these). A fault in Go code at a bad address is a fatal
// error, not a panic, in a c-shared library inside the JVM; so nothing here
// dereferences an address: the kernel copies (process_vm_readv) and answers
// EFAULT for an unreadable one. Where a seccomp filter forbids
// process_vm_readv (ENOSYS, EPERM), write(2) into a pipe does the same job.

const (
	probePage      = 4096 // the smallest Linux page: one probe per 4 KiB touches every page
	maxProbeIovecs = 1024 // IOV_MAX
)

// errUnreadable is the cause of every address validation finds unreadable.
var errUnreadable = errors.New("address not readable")

// readMem copies len(dst) bytes at addr into dst without touching addr
// itself: the kernel copies, and answers EFAULT for an unreadable address.
func readMem(addr uintptr, dst []byte) error {
	if len(dst) == 0 {
		return nil
	}
	local := []unix.Iovec{{Base: &dst[0]}}
	local[0].SetLen(len(dst))
	remote := []unix.RemoteIovec{{Base: addr, Len: len(dst)}}
	n, err := unix.ProcessVMReadv(os.Getpid(), local, remote, 0)
	if err == nil && n == len(dst) {
		return nil
	}
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		return readMemPipe(addr, dst) // process_vm_readv filtered (seccomp)
	}
	return fmt.Errorf("0x%x (%d bytes): %w", addr, len(dst), errUnreadable)
}

// readMemPipe is readMem through a pipe, a page at a time: write(2) from
// addr fails with EFAULT instead of faulting.
func readMemPipe(addr uintptr, dst []byte) error {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("0x%x: pipe: %w", addr, err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	for off := 0; off < len(dst); off += probePage {
		chunk := dst[off:min(off+probePage, len(dst))]
		at := addr + uintptr(off)
		n, _, errno := unix.Syscall(unix.SYS_WRITE, uintptr(p[1]), at, uintptr(len(chunk)))
		if errno != 0 || int(n) != len(chunk) {
			return fmt.Errorf("0x%x (%d bytes): %w", at, len(chunk), errUnreadable)
		}
		if _, err := unix.Read(p[0], chunk); err != nil {
			return fmt.Errorf("0x%x: %w", at, err)
		}
	}
	return nil
}

// readStruct reads the struct T at addr, which must be 8-byte aligned.
func readStruct[T any](what string, addr uintptr) (T, error) {
	var v T
	if addr == 0 {
		return v, fmt.Errorf("%s: null address", what)
	}
	if addr%8 != 0 {
		return v, fmt.Errorf("%s at 0x%x: not 8-byte aligned", what, addr)
	}
	if err := readMem(addr, unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v))); err != nil {
		return v, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

// readPointers reads n pointers at addr (8-byte aligned).
func readPointers(what string, addr uintptr, n int64) ([]uintptr, error) {
	if n == 0 {
		return nil, nil
	}
	if addr == 0 {
		return nil, fmt.Errorf("%s: null with %d entries", what, n)
	}
	if addr%8 != 0 {
		return nil, fmt.Errorf("%s at 0x%x: not 8-byte aligned", what, addr)
	}
	out := make([]uintptr, n)
	if err := readMem(addr, unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 8*n)); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// readCString reads the NUL-terminated string at addr, at most limit bytes,
// a page at a time so that a string ending just before an unmapped page
// reads.
func readCString(what string, addr uintptr, limit int) (string, error) {
	var sb strings.Builder
	for sb.Len() < limit {
		chunk := probePage - int(addr%probePage)
		buf := make([]byte, min(chunk, 256))
		if err := readMem(addr, buf); err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		if i := strings.IndexByte(string(buf), 0); i >= 0 {
			sb.Write(buf[:i])
			return sb.String(), nil
		}
		sb.Write(buf)
		addr += uintptr(len(buf))
	}
	return "", fmt.Errorf("%s: no terminating NUL within %d bytes", what, limit)
}

// probeRange checks that n bytes at addr are readable: one byte of every
// page they touch (readability is per page), IOV_MAX pages per system call.
// It stops at the first unreadable page, so a forged huge length costs no
// more than the mapped memory after addr.
func probeRange(what string, addr uintptr, n int64) error {
	if n <= 0 {
		return nil
	}
	if addr == 0 {
		return fmt.Errorf("%s: null, %d bytes needed", what, n)
	}
	end := addr + uintptr(n)
	if end < addr {
		return fmt.Errorf("%s at 0x%x: %d bytes overflow the address space", what, addr, n)
	}
	sink := make([]byte, maxProbeIovecs)
	remote := make([]unix.RemoteIovec, 0, maxProbeIovecs)
	for p := addr; p < end && p >= addr; {
		remote = remote[:0]
		for ; p < end && p >= addr && len(remote) < maxProbeIovecs; p = (p &^ (probePage - 1)) + probePage {
			remote = append(remote, unix.RemoteIovec{Base: p, Len: 1})
		}
		local := []unix.Iovec{{Base: &sink[0]}}
		local[0].SetLen(len(remote))
		got, err := unix.ProcessVMReadv(os.Getpid(), local, remote, 0)
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
			for _, r := range remote {
				if err := readMemPipe(r.Base, sink[:1]); err != nil {
					return fmt.Errorf("%s (%d bytes at 0x%x): %w", what, n, addr, err)
				}
			}
			continue
		}
		if err != nil || got != len(remote) {
			bad := remote[min(max(got, 0), len(remote)-1)].Base
			return fmt.Errorf("%s (%d bytes at 0x%x): 0x%x: %w", what, n, addr, bad, errUnreadable)
		}
	}
	return nil
}
