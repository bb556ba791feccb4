package ffi

/*
#cgo CFLAGS: -Werror -Wall
#include <stdlib.h>
#include <sys/mman.h>
#include "bridge.h"

// np_ffi_map returns size bytes of fresh zeroed pages, or NULL.
static void* np_ffi_map(size_t size) {
	void* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}
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

// mapThreshold is the size from which a buffer gets its own pages (mmap)
// instead of libc's heap, and goes straight back to the kernel when freed
// (munmap). glibc starts with the same threshold (128 KiB) but raises it to
// the size of every mmap'ed chunk it frees (its "dynamic threshold", up to
// 32 MiB), after which buffers of a few hundred KiB come from the heap and
// their pages stay resident after free: a long-running executor would see
// its RSS hold the high-water mark of freed Arrow buffers. Mapping them here
// keeps the policy inside this package (no mallopt, no MALLOC_* variable: the
// JVM's own mallocs are untouched) and makes RSS follow the buffers this
// allocator holds. Pages are zeroed by the kernel, as calloc's would be.
const mapThreshold = 128 << 10

// mappedOff is the off value (see cAlloc) of a buffer that has its own pages.
const mappedOff = ^uint32(0)

// cAlloc returns size bytes (size > 0) of zeroed C memory aligned to
// alignment, and the distance from the pointer libc returned, which cFree
// needs (mappedOff for a buffer of mapThreshold bytes or more, which has its
// own pages). ok is false when libc or the kernel is out of memory.
func cAlloc(size int) (b []byte, off uint32, ok bool) {
	if size > math.MaxInt-alignment {
		return nil, 0, false
	}
	if size >= mapThreshold {
		p := C.np_ffi_map(C.size_t(size))
		if p == nil {
			return nil, 0, false
		}
		return unsafe.Slice((*byte)(p), size), mappedOff, true
	}
	base := C.calloc(C.size_t(size+alignment), 1)
	if base == nil {
		return nil, 0, false
	}
	p := uintptr(base)
	off = uint32((alignment - p%alignment) % alignment)
	return unsafe.Slice((*byte)(unsafe.Add(base, off)), size), off, true
}

// cFree frees a buffer cAlloc returned; off is the distance cAlloc reported
// and n the size it was asked for.
func cFree(b []byte, off uint32, n int64) {
	p := unsafe.Pointer(unsafe.SliceData(b))
	if off == mappedOff {
		C.munmap(p, C.size_t(n))
		return
	}
	C.free(unsafe.Add(p, -int(off)))
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
