package main

/*
#include <stdint.h>
#include <string.h>
#include <jni.h>

// The Arrow C Data Interface structs: the one copy is ffi/abi.h.
#include "abi.h"

// na_prepare_out zeroes an output struct pair for an export (arrow-go
// writes into zeroed structs) unless either still holds live data, which
// it reports with 0 so that nothing Java owns is overwritten.
static inline int na_prepare_out(jlong arr, jlong schema) {
	struct ArrowArray* a = (struct ArrowArray*)(intptr_t)arr;
	struct ArrowSchema* s = (struct ArrowSchema*)(intptr_t)schema;
	if (a->release != NULL || s->release != NULL) {
		return 0;
	}
	memset(a, 0, sizeof(struct ArrowArray));
	memset(s, 0, sizeof(struct ArrowSchema));
	return 1;
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/nativepool/nativepool/jni"
)

// The natives of org.nativepool.spark.example.AggBridge: the streaming
// aggregation of the soak (agg.go), driven by Java's NativeAgg.
//
//	create0(taskAttemptId, name, version, stateDir, tempDir, batchRows,
//	        allocationSites, retainBytes) long        an aggregation on the task's pool
//	push0(agg, arrayAddr, schemaAddr)                 import a batch (key, value), add it, release it
//	finish0(agg)                                      end of input: open the merge with the state
//	next0(agg, outArrayAddr, outSchemaAddr) boolean   export the next batch of updated groups
//	                                                  (key, count, sum); false at the end, when
//	                                                  the new state version is committed
//	stats0(agg) long[]                                AggStat (aggs.go)
//	close0(agg)                                       release everything; a leaked output batch throws
//	sample0() long[]                                  SAMPLE_*: open aggregations, retained batches
//
// The rules are those of SortBridge (main.go): the producer pays across the
// C Data Interface, every export ends with jni.EngineCall.

// aggs is the engine of AggBridge's natives: the aggregations of every task
// in this process. The JVM loads the library once, so this is the one
// instance, as sorts is SortBridge's; tests build their own.
var aggs = newAggEngine(jni.Logger(), joinTaskPool)

// Java_org_nativepool_spark_example_AggBridge_create0 is AggBridge.create0: an
// aggregation of micro-batch version on the pool of task taskAttemptID.
//
//export Java_org_nativepool_spark_example_AggBridge_create0
func Java_org_nativepool_spark_example_AggBridge_create0(env *C.JNIEnv, _ C.jclass, taskAttemptID C.jlong, name C.jstring, version C.jlong, stateDir, tempDir C.jstring, batchRows C.jint, allocationSites C.jboolean, retainBytes C.jlong) (h C.jlong) {
	var err error
	c := jni.BeginEngineCall() // a new consumer registers in the task's pool
	defer func() { c.End(unsafe.Pointer(env), recover(), err) }()
	n, ok, err := jni.JavaString(unsafe.Pointer(env), uintptr(name))
	if err != nil {
		return 0
	}
	if !ok {
		err = fmt.Errorf("nativeagg: create0: null consumer name: %w", jni.ErrIllegalArgument)
		return 0
	}
	sd, ok, err := jni.JavaString(unsafe.Pointer(env), uintptr(stateDir))
	if err != nil {
		return 0
	}
	if !ok {
		err = fmt.Errorf("nativeagg: create0: null state directory: %w", jni.ErrIllegalArgument)
		return 0
	}
	td, _, err := jni.JavaString(unsafe.Pointer(env), uintptr(tempDir))
	if err != nil {
		return 0
	}
	id, err := aggs.create(int64(taskAttemptID), aggCreate{
		name: n, version: int64(version), stateDir: sd, tempDir: td, batchRows: int(batchRows),
		allocationSites: allocationSites != 0, retainBytes: int64(retainBytes),
	})
	return C.jlong(id)
}

// Java_org_nativepool_spark_example_AggBridge_push0 is AggBridge.push0: import a
// batch (key, value), add its rows to their groups, release it.
//
//export Java_org_nativepool_spark_example_AggBridge_push0
func Java_org_nativepool_spark_example_AggBridge_push0(env *C.JNIEnv, _ C.jclass, h, arrayAddr, schemaAddr C.jlong) {
	var err error
	c := jni.BeginEngineCall() // a bigger table is an upcall, and Spark may spill
	defer func() { c.End(unsafe.Pointer(env), recover(), err) }()
	if err = checkAddr("push0", arrayAddr, schemaAddr); err != nil {
		return
	}
	err = aggs.push(int64(h), arrayAt(arrayAddr), schemaAt(schemaAddr))
}

// Java_org_nativepool_spark_example_AggBridge_finish0 is AggBridge.finish0: end
// of input, the merge with the state opens.
//
//export Java_org_nativepool_spark_example_AggBridge_finish0
func Java_org_nativepool_spark_example_AggBridge_finish0(env *C.JNIEnv, _ C.jclass, h C.jlong) {
	var err error
	c := jni.BeginEngineCall()
	defer func() { c.End(unsafe.Pointer(env), recover(), err) }()
	err = aggs.finish(int64(h))
}

// Java_org_nativepool_spark_example_AggBridge_next0 is AggBridge.next0: export
// the next batch of updated groups, or return false after the last.
//
//export Java_org_nativepool_spark_example_AggBridge_next0
func Java_org_nativepool_spark_example_AggBridge_next0(env *C.JNIEnv, _ C.jclass, h, outArrayAddr, outSchemaAddr C.jlong) (more C.jboolean) {
	var err error
	c := jni.BeginEngineCall()
	defer func() { c.End(unsafe.Pointer(env), recover(), err) }()
	if err = checkAddr("next0", outArrayAddr, outSchemaAddr); err != nil {
		return 0
	}
	if C.na_prepare_out(outArrayAddr, outSchemaAddr) == 0 {
		err = fmt.Errorf("nativeagg: next0: the output ArrowArray or ArrowSchema holds live data (release it first): %w", jni.ErrIllegalArgument)
		return 0
	}
	ok, err := aggs.next(int64(h), arrayAt(outArrayAddr), schemaAt(outSchemaAddr))
	if ok && err == nil {
		return 1
	}
	return 0
}

// Java_org_nativepool_spark_example_AggBridge_stats0 is AggBridge.stats0: the
// aggregation's figures, in AggStat order.
//
//export Java_org_nativepool_spark_example_AggBridge_stats0
func Java_org_nativepool_spark_example_AggBridge_stats0(env *C.JNIEnv, _ C.jclass, h C.jlong) (stats C.jlongArray) {
	var err error
	var c jni.EngineCall // reads only: no upcall
	defer func() { c.End(unsafe.Pointer(env), recover(), err) }()
	a, err := aggs.stats(int64(h))
	if err != nil {
		return 0
	}
	return C.jlongArray(jni.NewJavaLongArray(unsafe.Pointer(env), a))
}

// Java_org_nativepool_spark_example_AggBridge_close0 is AggBridge.close0:
// release everything the aggregation holds.
//
//export Java_org_nativepool_spark_example_AggBridge_close0
func Java_org_nativepool_spark_example_AggBridge_close0(env *C.JNIEnv, _ C.jclass, h C.jlong) {
	var err error
	c := jni.BeginEngineCall() // releases reach Spark: upcalls
	defer func() { c.End(unsafe.Pointer(env), recover(), err) }()
	err = aggs.close(int64(h))
}

// Java_org_nativepool_spark_example_AggBridge_sample0 is AggBridge.sample0:
// SAMPLE_* over the process.
//
//export Java_org_nativepool_spark_example_AggBridge_sample0
func Java_org_nativepool_spark_example_AggBridge_sample0(env *C.JNIEnv, _ C.jclass) (sample C.jlongArray) {
	var c jni.EngineCall // reads only: no upcall
	defer func() { c.End(unsafe.Pointer(env), recover(), nil) }()
	return C.jlongArray(jni.NewJavaLongArray(unsafe.Pointer(env), aggs.sample()))
}
