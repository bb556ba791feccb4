/*
 * crelease.h: release callbacks for C Data structs that package cdatamodel
 * lays out in its own memory (the arena owns every byte, so releasing only
 * marks the struct released). Every symbol has the np_crelease_ prefix.
 */
#ifndef NATIVEPOOL_CDATAMODEL_CRELEASE_H
#define NATIVEPOOL_CDATAMODEL_CRELEASE_H

#include <stdint.h>

#include "../../../ffi/abi.h" /* the one copy of the Arrow C ABI structs */

/* np_crelease_schema marks schema released (release = NULL) and counts the call. */
void np_crelease_schema(struct ArrowSchema* schema);

/* np_crelease_array marks array released (release = NULL) and counts the call. */
void np_crelease_array(struct ArrowArray* array);

/* np_crelease_calls returns the calls counted so far: schemas in *schemas,
 * arrays in *arrays. */
void np_crelease_calls(int64_t* schemas, int64_t* arrays);

#endif /* NATIVEPOOL_CDATAMODEL_CRELEASE_H */
