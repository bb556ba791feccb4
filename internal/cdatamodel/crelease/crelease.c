#include "crelease.h"

static int64_t schema_calls, array_calls;

void np_crelease_schema(struct ArrowSchema* schema) {
  __atomic_add_fetch(&schema_calls, 1, __ATOMIC_SEQ_CST);
  schema->release = 0;
}

void np_crelease_array(struct ArrowArray* array) {
  __atomic_add_fetch(&array_calls, 1, __ATOMIC_SEQ_CST);
  array->release = 0;
}

void np_crelease_calls(int64_t* schemas, int64_t* arrays) {
  *schemas = __atomic_load_n(&schema_calls, __ATOMIC_SEQ_CST);
  *arrays = __atomic_load_n(&array_calls, __ATOMIC_SEQ_CST);
}
