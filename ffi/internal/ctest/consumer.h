/*
 * consumer.h: a C consumer of the Arrow C Data Interface, standing in for the
 * JVM in package ffi's tests. Every symbol has the np_ctest_ prefix.
 * Structs passed in are owned by the caller unless a function says it moves
 * them.
 */
#ifndef NATIVEPOOL_FFI_CTEST_CONSUMER_H
#define NATIVEPOOL_FFI_CTEST_CONSUMER_H

#include <stdint.h>

#include "../../abi.h" /* the one copy of the Arrow C ABI structs: ffi/abi.h */

/* np_ctest_hold moves *src into a new calloc'ed struct and returns it, as a
 * consumer that keeps imported data does; *src is left released. */
struct ArrowArray* np_ctest_hold(struct ArrowArray* src);

/* np_ctest_release calls arr->release on this thread unless released. */
void np_ctest_release(struct ArrowArray* arr);

/* np_ctest_release_on_new_thread calls arr->release on a new pthread, which
 * the Go runtime has never seen, and waits for it. Returns 0 or an errno. */
int np_ctest_release_on_new_thread(struct ArrowArray* arr);

/* np_ctest_release_twice calls arr's release callback, then calls the same
 * function pointer again on the now released struct (a consumer bug). */
void np_ctest_release_twice(struct ArrowArray* arr);

/* np_ctest_sum_int64 reads child col of a struct array as int64 values and
 * returns their sum (ignoring validity). */
int64_t np_ctest_sum_int64(const struct ArrowArray* arr, int64_t col);

/* np_ctest_drain takes up to max arrays from stream into outs (calloc'ed by
 * the caller). Returns the number taken, or -errno; *end is set to 1 when the
 * stream reported its end. */
int np_ctest_drain(struct ArrowArrayStream* stream, struct ArrowArray* outs, int max, int* end);

/* np_ctest_stream_error returns the stream's last error message, or NULL. */
const char* np_ctest_stream_error(struct ArrowArrayStream* stream);

/* np_ctest_release_stream calls stream->release unless released. */
void np_ctest_release_stream(struct ArrowArrayStream* stream);

#endif /* NATIVEPOOL_FFI_CTEST_CONSUMER_H */
