package ffi

/*
#cgo CFLAGS: -Werror -Wall
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/cdata"
)

// The C types of this package under Go names, so that no Go signature says
// C. (STYLE.md rule 13). They are layout-identical to arrow-go's
// cdata.CArrowArray and cdata.CArrowArrayStream (both are the C Data
// Interface's structs), so pointers convert with unsafe.Pointer.
type (
	// cArray is struct ArrowArray.
	cArray = C.struct_ArrowArray
	// cStream is struct ArrowArrayStream.
	cStream = C.struct_ArrowArrayStream
)

// alignment is the byte alignment of every buffer this package allocates in
// C memory: Arrow's recommended 64, as arrow-go's allocators use.
const alignment = 64

func toCArray(p *cdata.CArrowArray) *cArray         { return (*cArray)(unsafe.Pointer(p)) }
func toCStream(p *cdata.CArrowArrayStream) *cStream { return (*cStream)(unsafe.Pointer(p)) }

// cAlloc returns size bytes (size > 0) of zeroed C memory aligned to
// alignment, and the distance from the pointer libc returned, which cFree
// needs. ok is false when libc is out of memory.
func cAlloc(size int) (b []byte, off uint32, ok bool) {
	if size > math.MaxInt-alignment {
		return nil, 0, false
	}
	base := C.calloc(C.size_t(size+alignment), 1)
	if base == nil {
		return nil, 0, false
	}
	p := uintptr(base)
	off = uint32((alignment - p%alignment) % alignment)
	return unsafe.Slice((*byte)(unsafe.Add(base, off)), size), off, true
}

// cFree frees a buffer cAlloc returned; off is the distance cAlloc reported.
func cFree(b []byte, off uint32) {
	C.free(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), -int(off)))
}

// wrapArray wraps the live array arr (bridge.h): its release will report to
// Go through h. It returns false, leaving arr unchanged, if C is out of memory.
func wrapArray(arr *cArray, h uintptr) bool {
	return C.np_ffi_wrap_array(arr, C.uintptr_t(h)) == 0
}

// wrapStream wraps the live stream s (bridge.h); see wrapArray.
func wrapStream(s *cStream, h uintptr) bool {
	return C.np_ffi_wrap_stream(s, C.uintptr_t(h)) == 0
}

// releaseArray calls arr's release callback unless arr is released.
func releaseArray(arr *cArray) { C.np_ffi_release_array(arr) }

// releaseStream calls s's release callback unless s is released.
func releaseStream(s *cStream) { C.np_ffi_release_stream(s) }

// arrayReleased reports whether arr is marked released (release == NULL).
func arrayReleased(arr *cArray) bool { return arr.release == nil }
