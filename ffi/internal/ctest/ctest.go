// Package ctest is test scaffolding for package ffi, not for direct use: a C
// consumer of the Arrow C Data Interface that stands in for the JVM (it
// holds exported arrays, reads them, and releases them, also from threads
// the Go runtime has never seen). It lives in an ordinary package because
// _test.go files cannot use cgo (STYLE.md rule 20); only ffi's tests import
// it, so it is never linked into the library.
package ctest

/*
#cgo CFLAGS: -Werror -Wall
#cgo LDFLAGS: -lpthread
#include <stdlib.h>
#include "consumer.h"
*/
import "C"

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/cdata"
)

func carr(a *cdata.CArrowArray) *C.struct_ArrowArray {
	return (*C.struct_ArrowArray)(unsafe.Pointer(a))
}

func cstream(s *cdata.CArrowArrayStream) *C.struct_ArrowArrayStream {
	return (*C.struct_ArrowArrayStream)(unsafe.Pointer(s))
}

// NewArray returns a zeroed ArrowArray in C memory; free it with Free once
// released.
func NewArray() *cdata.CArrowArray {
	return (*cdata.CArrowArray)(C.calloc(1, C.sizeof_struct_ArrowArray))
}

// NewSchema returns a zeroed ArrowSchema in C memory; free it with Free.
func NewSchema() *cdata.CArrowSchema {
	return (*cdata.CArrowSchema)(C.calloc(1, C.sizeof_struct_ArrowSchema))
}

// NewStream returns a zeroed ArrowArrayStream in C memory; free it with Free.
func NewStream() *cdata.CArrowArrayStream {
	return (*cdata.CArrowArrayStream)(C.calloc(1, C.sizeof_struct_ArrowArrayStream))
}

// Free frees a struct from NewArray, NewSchema, NewStream or Hold.
func Free[T cdata.CArrowArray | cdata.CArrowSchema | cdata.CArrowArrayStream](p *T) {
	C.free(unsafe.Pointer(p))
}

// Hold moves src into a new C struct, as a consumer keeping the data does.
func Hold(src *cdata.CArrowArray) *cdata.CArrowArray {
	return (*cdata.CArrowArray)(unsafe.Pointer(C.np_ctest_hold(carr(src))))
}

// Release calls arr's release callback from C on this thread.
func Release(arr *cdata.CArrowArray) { C.np_ctest_release(carr(arr)) }

// ReleaseOnNewThread calls arr's release callback on a new pthread unknown
// to the Go runtime, as a JVM thread would; it returns 0 or an errno.
func ReleaseOnNewThread(arr *cdata.CArrowArray) int {
	return int(C.np_ctest_release_on_new_thread(carr(arr)))
}

// ReleaseTwice calls arr's release callback twice through a saved function
// pointer: a consumer bug.
func ReleaseTwice(arr *cdata.CArrowArray) { C.np_ctest_release_twice(carr(arr)) }

// Released reports whether arr is marked released.
func Released(arr *cdata.CArrowArray) bool { return carr(arr).release == nil }

// SumInt64 reads column col of an exported record batch from C.
func SumInt64(arr *cdata.CArrowArray, col int) int64 {
	return int64(C.np_ctest_sum_int64(carr(arr), C.int64_t(col)))
}

// Drain takes up to max arrays from the stream. It returns them (each in C
// memory: release, then Free), whether the stream ended, and 0 or the errno
// get_next returned.
func Drain(s *cdata.CArrowArrayStream, max int) (arrs []*cdata.CArrowArray, end bool, errno int) {
	outs := (*C.struct_ArrowArray)(C.calloc(C.size_t(max), C.sizeof_struct_ArrowArray))
	defer C.free(unsafe.Pointer(outs))
	var cend C.int
	n := int(C.np_ctest_drain(cstream(s), outs, C.int(max), &cend))
	if n < 0 {
		errno, n = -n, 0
	}
	all := unsafe.Slice(outs, max)
	for i := range n {
		arrs = append(arrs, Hold((*cdata.CArrowArray)(unsafe.Pointer(&all[i]))))
	}
	return arrs, cend == 1, errno
}

// StreamError returns the stream's last error message, or "".
func StreamError(s *cdata.CArrowArrayStream) string {
	if msg := C.np_ctest_stream_error(cstream(s)); msg != nil {
		return C.GoString(msg)
	}
	return ""
}

// ReleaseStream calls the stream's release callback from C.
func ReleaseStream(s *cdata.CArrowArrayStream) { C.np_ctest_release_stream(cstream(s)) }
