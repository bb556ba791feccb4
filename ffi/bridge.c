/*
 * bridge.c: C helpers of package ffi (declared and documented in bridge.h).
 * The Go callbacks npffiArrayReleased, npffiStreamNext and
 * npffiStreamReleased are defined in exports.go.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.h"
#include "_cgo_export.h"

void* np_ffi_alloc(size_t size, size_t align, void** base) {
  /* calloc, like arrow-go's Mallocator: zeroed memory, and large requests
   * come from fresh mmap'ed pages that need no memset. */
  char* p = calloc(size + align, 1);
  if (p == NULL) {
    return NULL;
  }
  *base = p;
  return (void*)(((uintptr_t)p + (align - 1)) & ~(uintptr_t)(align - 1));
}

/* A wrapped array: the producer's original struct, moved here, and the Go
 * handle to report the release to. */
struct np_ffi_wrapped_array {
  struct ArrowArray inner;
  uintptr_t handle;
};

static void np_ffi_wrapped_array_release(struct ArrowArray* arr) {
  if (arr->release == NULL) {
    return; /* released already: see bridge.h */
  }
  struct np_ffi_wrapped_array* w = (struct np_ffi_wrapped_array*)arr->private_data;
  arr->release = NULL;
  arr->private_data = NULL;
  /* Go releases the inner array (recovering any panic of the Go code that
   * runs then, so none unwinds into a JVM thread), then settles its books. */
  npffiArrayReleased(w->handle, &w->inner);
  free(w);
}

int np_ffi_wrap_array(struct ArrowArray* arr, uintptr_t handle) {
  struct np_ffi_wrapped_array* w = calloc(1, sizeof(*w));
  if (w == NULL) {
    return ENOMEM;
  }
  memcpy(&w->inner, arr, sizeof(*arr));
  w->handle = handle;
  /* buffers, children and dictionary stay visible in *arr: they are the
   * same pointers, owned (and released) by w->inner. */
  arr->release = np_ffi_wrapped_array_release;
  arr->private_data = w;
  return 0;
}

int np_ffi_array_is_wrapped(const struct ArrowArray* arr) {
  return arr->release == np_ffi_wrapped_array_release;
}

void np_ffi_release_array(struct ArrowArray* arr) {
  if (arr->release != NULL) {
    arr->release(arr);
  }
}

struct np_ffi_wrapped_stream {
  struct ArrowArrayStream inner;
  uintptr_t handle;
};

static int np_ffi_stream_get_schema(struct ArrowArrayStream* s, struct ArrowSchema* out) {
  struct np_ffi_wrapped_stream* w = (struct np_ffi_wrapped_stream*)s->private_data;
  return w->inner.get_schema(&w->inner, out);
}

static int np_ffi_stream_get_next(struct ArrowArrayStream* s, struct ArrowArray* out) {
  struct np_ffi_wrapped_stream* w = (struct np_ffi_wrapped_stream*)s->private_data;
  int rc = w->inner.get_next(&w->inner, out);
  if (rc != 0 || out->release == NULL) {
    return rc; /* an error, or the end of the stream */
  }
  return npffiStreamNext(w->handle, out);
}

static const char* np_ffi_stream_get_last_error(struct ArrowArrayStream* s) {
  struct np_ffi_wrapped_stream* w = (struct np_ffi_wrapped_stream*)s->private_data;
  return w->inner.get_last_error(&w->inner);
}

static void np_ffi_stream_release(struct ArrowArrayStream* s) {
  if (s->release == NULL) {
    return;
  }
  struct np_ffi_wrapped_stream* w = (struct np_ffi_wrapped_stream*)s->private_data;
  s->release = NULL;
  s->private_data = NULL;
  npffiStreamReleased(w->handle, &w->inner);
  free(w);
}

int np_ffi_wrap_stream(struct ArrowArrayStream* stream, uintptr_t handle) {
  struct np_ffi_wrapped_stream* w = calloc(1, sizeof(*w));
  if (w == NULL) {
    return ENOMEM;
  }
  memcpy(&w->inner, stream, sizeof(*stream));
  w->handle = handle;
  stream->get_schema = np_ffi_stream_get_schema;
  stream->get_next = np_ffi_stream_get_next;
  stream->get_last_error = np_ffi_stream_get_last_error;
  stream->release = np_ffi_stream_release;
  stream->private_data = w;
  return 0;
}

void np_ffi_release_stream(struct ArrowArrayStream* stream) {
  if (stream->release != NULL) {
    stream->release(stream);
  }
}
