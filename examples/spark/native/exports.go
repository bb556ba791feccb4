package main

/*
#cgo CFLAGS: -Wall -Werror -I${SRCDIR}/../../../ffi -I/usr/lib/jvm/java-17-openjdk-amd64/include -I/usr/lib/jvm/java-17-openjdk-amd64/include/linux
#include <stdint.h>
#include <string.h>
#include <jni.h>

// The Arrow C Data Interface structs: the one copy is ffi/abi.h.
#include "abi.h"

// Java passes struct addresses as longs (ArrowArray.memoryAddress()).
static inline struct ArrowArray* ns_array(jlong addr) { return (struct ArrowArray*)(intptr_t)addr; }
static inline struct ArrowSchema* ns_schema(jlong addr) { return (struct ArrowSchema*)(intptr_t)addr; }

// ns_prepare_out zeroes an output struct pair for an export (arrow-go
// writes into zeroed structs) unless either still holds live data, which
// it reports with 0 so that nothing Java owns is overwritten.
static inline int ns_prepare_out(jlong arr, jlong schema) {
	if (ns_array(arr)->release != NULL || ns_schema(schema)->release != NULL) {
		return 0;
	}
	memset(ns_array(arr), 0, sizeof(struct ArrowArray));
	memset(ns_schema(schema), 0, sizeof(struct ArrowSchema));
	return 1;
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/cdata"

	"github.com/nativepool/nativepool/jni"
)

// sorts is the library's engine: the sorters of every task in this
// process. The JVM loads the library once, so this is the one instance the
// natives work on, as jni's process registry is for jni.Natives; tests
// build their own engine. It logs through jni.Logger: to slog's default
// handler until the plugin starts, then through log4j.
var sorts = newSortEngine(jni.Logger(), joinTaskPool)

// The natives of org.nativepool.spark.example.SortBridge, and nothing else;
// main.go has their contract, sorts.go the work.

func arrayAt(addr C.jlong) *cdata.CArrowArray {
	return (*cdata.CArrowArray)(unsafe.Pointer(C.ns_array(addr)))
}

func schemaAt(addr C.jlong) *cdata.CArrowSchema {
	return (*cdata.CArrowSchema)(unsafe.Pointer(C.ns_schema(addr)))
}

func checkAddr(op string, addrs ...C.jlong) error {
	for _, a := range addrs {
		if a == 0 {
			return fmt.Errorf("nativesort: %s: null struct address: %w", op, jni.ErrIllegalArgument)
		}
	}
	return nil
}

//export Java_org_nativepool_spark_example_SortBridge_create0
func Java_org_nativepool_spark_example_SortBridge_create0(env *C.JNIEnv, _ C.jclass, taskAttemptID C.jlong, name C.jstring, batchRows C.jint, tempDir C.jstring) (h C.jlong) {
	var err error
	c := jni.BeginEngineCall() // extsort.New charges its spill buffer: an upcall
	defer func() { c.End(unsafe.Pointer(env), recover(), err) }()
	n, ok, err := jni.JavaString(unsafe.Pointer(env), uintptr(name))
	if err != nil {
		return 0
	}
	if !ok {
		err = fmt.Errorf("nativesort: create0: null consumer name: %w", jni.ErrIllegalArgument)
		return 0
	}
	dir, _, err := jni.JavaString(unsafe.Pointer(env), uintptr(tempDir))
	if err != nil {
		return 0
	}
	if batchRows < 0 {
		err = fmt.Errorf("nativesort: create0: batchRows %d: %w", int32(batchRows), jni.ErrIllegalArgument)
		return 0
	}
	id, err := sorts.create(int64(taskAttemptID), n, int(batchRows), dir)
	return C.jlong(id)
}

//export Java_org_nativepool_spark_example_SortBridge_push0
func Java_org_nativepool_spark_example_SortBridge_push0(env *C.JNIEnv, _ C.jclass, h, arrayAddr, schemaAddr C.jlong) {
	var err error
	c := jni.BeginEngineCall()
	defer func() { c.End(unsafe.Pointer(env), recover(), err) }()
	if err = checkAddr("push0", arrayAddr, schemaAddr); err != nil {
		return
	}
	err = sorts.push(int64(h), arrayAt(arrayAddr), schemaAt(schemaAddr))
}

//export Java_org_nativepool_spark_example_SortBridge_finish0
func Java_org_nativepool_spark_example_SortBridge_finish0(env *C.JNIEnv, _ C.jclass, h C.jlong) {
	var err error
	c := jni.BeginEngineCall()
	defer func() { c.End(unsafe.Pointer(env), recover(), err) }()
	err = sorts.finish(int64(h))
}

//export Java_org_nativepool_spark_example_SortBridge_next0
func Java_org_nativepool_spark_example_SortBridge_next0(env *C.JNIEnv, _ C.jclass, h, outArrayAddr, outSchemaAddr C.jlong) (more C.jboolean) {
	var err error
	c := jni.BeginEngineCall()
	defer func() { c.End(unsafe.Pointer(env), recover(), err) }()
	if err = checkAddr("next0", outArrayAddr, outSchemaAddr); err != nil {
		return 0
	}
	if C.ns_prepare_out(outArrayAddr, outSchemaAddr) == 0 {
		err = fmt.Errorf("nativesort: next0: the output ArrowArray or ArrowSchema holds live data (release it first): %w", jni.ErrIllegalArgument)
		return 0
	}
	ok, err := sorts.next(int64(h), arrayAt(outArrayAddr), schemaAt(outSchemaAddr))
	if ok && err == nil {
		return 1
	}
	return 0
}

//export Java_org_nativepool_spark_example_SortBridge_stats0
func Java_org_nativepool_spark_example_SortBridge_stats0(env *C.JNIEnv, _ C.jclass, h C.jlong) (stats C.jlongArray) {
	var err error
	var c jni.EngineCall // reads only: no upcall
	defer func() { c.End(unsafe.Pointer(env), recover(), err) }()
	a, err := sorts.stats(int64(h))
	if err != nil {
		return 0
	}
	return C.jlongArray(jni.NewJavaLongArray(unsafe.Pointer(env), a))
}

//export Java_org_nativepool_spark_example_SortBridge_close0
func Java_org_nativepool_spark_example_SortBridge_close0(env *C.JNIEnv, _ C.jclass, h C.jlong) {
	var err error
	c := jni.BeginEngineCall() // releases reach Spark: upcalls
	defer func() { c.End(unsafe.Pointer(env), recover(), err) }()
	err = sorts.close(int64(h))
}

//export Java_org_nativepool_spark_example_SortBridge_sample0
func Java_org_nativepool_spark_example_SortBridge_sample0(env *C.JNIEnv, _ C.jclass) (sample C.jlongArray) {
	var c jni.EngineCall // reads only: no upcall
	defer func() { c.End(unsafe.Pointer(env), recover(), nil) }()
	return C.jlongArray(jni.NewJavaLongArray(unsafe.Pointer(env), sorts.sample()))
}
