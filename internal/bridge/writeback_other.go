//go:build !unix

package bridge

// writebackFunc is ProcessRuntime.Writeback where there is no sync(2): none.
func writebackFunc() func() { return nil }
