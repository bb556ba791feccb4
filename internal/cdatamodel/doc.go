// Package cdatamodel is test support for fuzzing the C Data door (the
// addresses importBatch0 takes from Java; internal/cdatacheck,
// internal/arrowruntime): not for direct use.
//
// A fuzz input decodes (Decode, total: every byte string is some Batch)
// into a description of an ArrowSchema and an ArrowArray tree: every
// field of every struct, the strings and buffers they point to, and how
// each pointer points (valid, NULL, at a no-access page, misaligned).
// Materialize lays the Batch out in fresh anonymous memory in which every
// object ends where a no-access page begins, so that reading one byte past
// any object faults. Judge then decides, from the C Data Interface
// specification alone (https://arrow.apache.org/docs/format/CDataInterface.html
// and the Columnar format's layouts), whether a consumer may read the batch:
// it walks the materialised structs through the arena's own record of what
// is readable, never through the kernel, so it is a second validator written
// independently of cdatacheck's, and a fuzz target compares the two
// verdicts. Encode is Decode's inverse; the seed corpora are Encode's output
// for batches exported by Arrow Java and arrow-go.
//
// # Encoding
//
// Integers are varints (encoding/binary: zig-zag for signed ones); a
// missing byte reads as 0, so a truncated input is the same input padded
// with zeros. A pointer mode is one byte (its low two bits: 0 valid, 1
// NULL, 2 a no-access page, 3 the valid address plus 4).
//
//	batch    = schema array
//	schema   = mode flags(bit0 released, bit1 name, bit2 metadata,
//	           bit3 dictionary) string(format) [string(name)]
//	           [mode uvarint(len) bytes(metadata)] varint(flags)
//	           children(schema) [schema(dictionary)]
//	array    = mode flags(bit0 released, bit1 dictionary) varint(length)
//	           varint(null_count) varint(offset)
//	           count(buffers) varint(delta) mode {mode uvarint(len) bytes}
//	           children(array) [array(dictionary)]
//	string   = mode byte(len) bytes   (the NUL is added)
//	children = byte(count, at most 16) varint(delta) mode {node}
//
// A struct's n_buffers and n_children are the count encoded plus delta,
// so a struct can claim more or fewer entries than its pointer array has.
//
// # Where each job lives
//
//	model.go  Batch, Schema, Array, Buffer, PtrMode; Decode and Encode
//	arena.go  Materialize: the objects, their pages and guard pages
//	judge.go  Judge: the specification's rules over the arena's memory
package cdatamodel
