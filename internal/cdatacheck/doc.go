// Package cdatacheck validates Arrow C Data Interface addresses that Java
// hands to the bridge (importBatch0, exportBatch0; jni/API.md, "Bad C Data
// addresses") before anything dereferences them. A bad address would
// otherwise kill the JVM (a fault in Go code is a fatal error, not a
// panic) or reach arrow-go with lengths that panic. It is pure Go (the
// kernel reads for it), so it builds and is tested with CGO_ENABLED=0.
//
// Everything that can be checked is checked, and a failure is an error
// naming the struct path and the field (the caller wraps it as an
// IllegalArgumentException):
//
//   - every struct address is 8-byte aligned and readable, and is read
//     through process_vm_readv (a system call that answers EFAULT instead of
//     faulting), so an unmapped or unreadable address is an error, not a
//     signal; the same goes for the buffers and children pointer arrays, the
//     schema's strings and metadata, and one byte of every page of every
//     buffer range the array's layout needs;
//   - release callbacks are set (a live struct), format strings are known
//     Arrow formats, the top-level schema is a struct ("+s");
//   - n_buffers and n_children agree with the schema's type, and
//     n_children with the schema's own n_children; a dictionary is present
//     exactly when the schema has one;
//   - length, offset and null_count are non-negative (null_count may be -1)
//     and do not overflow; a validity buffer is present when null_count > 0;
//     variable-length offsets are non-negative and non-decreasing over the
//     range used, and children are long enough for what the parent's
//     offsets address; every column of a batch has the same row count;
//   - views lie within the data buffers they name (whose sizes are read),
//     list views within their child, union type ids are codes the format
//     declares and dense offsets lie within their child, run ends are
//     positive, increasing and reach the array's end, and a valid slot's
//     dictionary index names an entry of the dictionary;
//   - a map's child is a struct of two, run ends are int16/32/64, a
//     dictionary's indices are integers, decimals and union type ids are
//     numbers;
//   - an export target is aligned, readable, writable and not a live struct.
//
// What cannot be detected is in jni/API.md: a pointer to mapped memory that
// is not what it claims to be (a data pointer into the wrong object, a
// release callback pointing at garbage), and concurrent writes by the
// producer. Those may still crash the process.
//
// # Where each job lives
//
//	probe.go     reading memory without faulting: process_vm_readv, the pipe
//	             fallback, structs, pointer arrays, C strings, page probes
//	validate.go  the checks: schemas, arrays and their layouts by format,
//	             offsets, ValidateImport and ValidateExportTarget
//	layouts.go   the layouts whose buffers hold positions: views, list
//	             views, unions, run ends, dictionary indices
//
// The package's fuzz target (FuzzValidateImport) holds the validator to
// the specification: package cdatamodel lays out what its input describes
// and judges it with a second validator written from the specification.
package cdatacheck
