package ffi

/*
#include "bridge.h"
*/
import "C"

import "runtime/cgo"

// The Go side of the C wrappers of bridge.c. Each runs on whatever thread
// the C consumer or producer calls from (a JVM thread, for exports) and
// never lets a panic unwind into it (STYLE.md rule 14).

//export npffiArrayReleased
func npffiArrayReleased(h C.uintptr_t, inner *C.struct_ArrowArray) {
	hd := cgo.Handle(h)
	x := hd.Value().(*xfer)
	hd.Delete()
	x.a.runRelease(x.kind.String(), func() { releaseArray(inner) })
	x.a.settle(x)
}

//export npffiStreamNext
func npffiStreamNext(h C.uintptr_t, out *C.struct_ArrowArray) C.int {
	x := cgo.Handle(h).Value().(*xfer)
	return C.int(x.a.wrapStreamBatch(x, out))
}

//export npffiStreamReleased
func npffiStreamReleased(h C.uintptr_t, inner *C.struct_ArrowArrayStream) {
	hd := cgo.Handle(h)
	x := hd.Value().(*xfer)
	hd.Delete()
	x.a.runRelease(x.kind.String(), func() { releaseStream(inner) })
	x.a.settle(x)
}
