// Package ffitest has test helpers for code that uses package ffi's
// allocator. It is ordinary code (not a _test.go file) so that any
// package's tests can use it.
package ffitest

import (
	"github.com/nativepool/nativepool/ffi"
)

// TestingT is the part of *testing.T (or *testing.B, or a testify mock) the
// helpers use.
type TestingT interface {
	Helper()
	Errorf(format string, args ...any)
}

// AssertNoLeak fails t if a still holds anything: live buffers, batches
// exported to a consumer that has not released them, imported batches Go
// still holds, or imported bytes still charged. The failure message is the
// leak report with every allocation site's stack when a records sites
// (ffi.WithAllocationSites(true)); it names the consumer either way. Use it
// as the first line of a test:
//
//	defer ffitest.AssertNoLeak(t, alloc)
//
// It does not close a.
func AssertNoLeak(t TestingT, a *ffi.Allocator) {
	t.Helper()
	if leak := a.Leaks(); leak != nil {
		t.Errorf("%s", leak.Report())
		return
	}
	if s := a.Snapshot(); s.Allocated != 0 || s.ImportCharged != 0 {
		t.Errorf("ffi: %s holds %d bytes allocated and %d import bytes charged with no live buffer or import: %s",
			s.Consumer, s.Allocated, s.ImportCharged, s)
	}
}
