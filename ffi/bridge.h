/*
 * bridge.h: the seam between package ffi's Go code and its C helpers
 * (bridge.c). Every symbol has the np_ffi_ prefix; the Go functions the
 * helpers call back are npffi* in exports.go.
 *
 * Ownership. np_ffi_wrap_array and np_ffi_wrap_stream MOVE the struct they
 * are given into a calloc'ed wrapper and turn the caller's struct into a
 * wrapper of it: same length, offset, buffers and children (for an array),
 * but whose release callback marks the struct released and hands the
 * original to Go through the handle (a runtime/cgo.Handle value, never a Go
 * pointer: STYLE.md rule 15). Go runs the original release under a recover,
 * so no panic unwinds into the releasing thread (a JVM thread, for exports),
 * then settles its books; the wrapper is freed last.
 *
 * A release callback of a wrapper called on a struct already marked released
 * (release == NULL) returns at once; that is undefined behaviour in the
 * specification and a no-op here, so the Go charge is never released twice.
 */
#ifndef NATIVEPOOL_FFI_BRIDGE_H
#define NATIVEPOOL_FFI_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"

/*
 * np_ffi_alloc returns size bytes of zeroed C memory aligned to align (a
 * power of two), or NULL when libc is out of memory. *base receives the
 * pointer to pass to free(); it differs from the result by less than align.
 */
void* np_ffi_alloc(size_t size, size_t align, void** base);

/*
 * np_ffi_wrap_array wraps the live array *arr as described above, reporting
 * its release to Go with handle. Returns 0, or ENOMEM with *arr unchanged.
 */
int np_ffi_wrap_array(struct ArrowArray* arr, uintptr_t handle);

/*
 * np_ffi_wrap_stream wraps the live stream *stream: get_schema and
 * get_last_error delegate; get_next delegates and then, for every array it
 * produces, calls Go (npffiStreamNext) which wraps that array; release
 * delegates and then reports to Go. Returns 0, or ENOMEM with *stream
 * unchanged.
 */
int np_ffi_wrap_stream(struct ArrowArrayStream* stream, uintptr_t handle);

/* np_ffi_release_array calls arr->release unless arr is already released. */
void np_ffi_release_array(struct ArrowArray* arr);

/* np_ffi_release_stream calls stream->release unless it is already released. */
void np_ffi_release_stream(struct ArrowArrayStream* stream);

/* np_ffi_array_is_wrapped reports whether arr's release is this package's. */
int np_ffi_array_is_wrapped(const struct ArrowArray* arr);

#endif /* NATIVEPOOL_FFI_BRIDGE_H */
