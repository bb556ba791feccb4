//go:build !linux

package writeback

// syncAndDrop does nothing where the platform has no sync_file_range.
func syncAndDrop(string) error { return nil }
