//go:build unix

package bridge

import "syscall"

// writebackFunc is ProcessRuntime.Writeback: sync(2).
func writebackFunc() func() { return syscall.Sync }
