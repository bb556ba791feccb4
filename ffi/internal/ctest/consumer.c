/* consumer.c: see consumer.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "consumer.h"

struct ArrowArray* np_ctest_hold(struct ArrowArray* src) {
  struct ArrowArray* dst = calloc(1, sizeof(*dst));
  if (dst == NULL) {
    return NULL;
  }
  memcpy(dst, src, sizeof(*src));
  src->release = NULL;
  return dst;
}

void np_ctest_release(struct ArrowArray* arr) {
  if (arr->release != NULL) {
    arr->release(arr);
  }
}

static void* np_ctest_release_thread(void* arg) {
  np_ctest_release((struct ArrowArray*)arg);
  return NULL;
}

int np_ctest_release_on_new_thread(struct ArrowArray* arr) {
  pthread_t t;
  int rc = pthread_create(&t, NULL, np_ctest_release_thread, arr);
  if (rc != 0) {
    return rc;
  }
  return pthread_join(t, NULL);
}

void np_ctest_release_twice(struct ArrowArray* arr) {
  void (*release)(struct ArrowArray*) = arr->release;
  if (release == NULL) {
    return;
  }
  release(arr);
  release(arr);
}

int64_t np_ctest_sum_int64(const struct ArrowArray* arr, int64_t col) {
  const struct ArrowArray* c = arr->children[col];
  const int64_t* values = (const int64_t*)c->buffers[1];
  int64_t sum = 0;
  for (int64_t i = 0; i < c->length; i++) {
    sum += values[c->offset + arr->offset + i];
  }
  return sum;
}

int np_ctest_drain(struct ArrowArrayStream* stream, struct ArrowArray* outs, int max, int* end) {
  *end = 0;
  for (int i = 0; i < max; i++) {
    int rc = stream->get_next(stream, &outs[i]);
    if (rc != 0) {
      return -rc;
    }
    if (outs[i].release == NULL) {
      *end = 1;
      return i;
    }
  }
  return max;
}

const char* np_ctest_stream_error(struct ArrowArrayStream* stream) {
  return stream->get_last_error(stream);
}

void np_ctest_release_stream(struct ArrowArrayStream* stream) {
  if (stream->release != NULL) {
    stream->release(stream);
  }
}
