// Package arrowruntime is the bridge's Arrow runtime made of package ffi:
// ffi.Allocator as the batch registry's ArrowAllocator (FFI, Wrap), the
// process's resident-set sample, and the C Data import, export and copy
// that the registry (internal/bridge, arrow.go) runs inside its calls
// (ImportBatchAt, ExportBatchAt, CopyBatch; jni/API.md, "Arrow batches").
// Addresses from Java are checked by cdatacheck before anything here turns
// them into pointers. jni's Arrow natives are thin wrappers over these
// functions on the process's Bridge.
//
// It needs no JVM, but ffi and arrow-go's cdata need cgo, so its tests run
// with cgo (make test-go's race run), not in the CGO_ENABLED=0 run.
//
// # Where each job lives
//
//	arrowruntime.go  FFI, Wrap and the ffiAllocator adapter; ImportBatchAt,
//	                 ExportBatchAt, CopyBatch and the column copy
package arrowruntime
