package jni

import "C"

import (
	"errors"

	"github.com/nativepool/nativepool/internal/arrowruntime"
	"github.com/nativepool/nativepool/internal/bridge"

	"github.com/nativepool/nativepool/pool"
)

// The Arrow natives of org.nativepool.spark.jni.Natives (jni/API.md,
// "Arrow batches"), and nothing else. They follow exports.go: a deferred
// recover and endCall settle every outcome, so no panic crosses into the
// JVM.

//export Java_org_nativepool_spark_jni_Natives_importBatch0
func Java_org_nativepool_spark_jni_Natives_importBatch0(env *jniEnv, _ jclass, res, arrayAddr, schemaAddr jlong) (h jlong) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	id, err := arrowruntime.ImportBatchAt(process, int64(res), uintptr(arrayAddr), uintptr(schemaAddr))
	return jlong(id)
}

//export Java_org_nativepool_spark_jni_Natives_exportBatch0
func Java_org_nativepool_spark_jni_Natives_exportBatch0(env *jniEnv, _ jclass, batch, arrayAddr, schemaAddr jlong) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	err = arrowruntime.ExportBatchAt(process, int64(batch), uintptr(arrayAddr), uintptr(schemaAddr))
}

//export Java_org_nativepool_spark_jni_Natives_copyBatch0
func Java_org_nativepool_spark_jni_Natives_copyBatch0(env *jniEnv, _ jclass, res, batch jlong, site jstring) (h jlong) {
	var err error
	var refusal string
	defer func() {
		endCall(env, recover(), err)
		if refusal != "" {
			throwExhausted(env, refusal) // unless a Java exception from an upcall won
		}
	}()
	caller, _, err := javaStringToGo(env, site) // null: no site
	if err != nil {
		return 0
	}
	id, err := arrowruntime.CopyBatch(process, int64(res), int64(batch), caller)
	var je *bridge.JavaException
	if err != nil && !errors.As(err, &je) && errors.Is(err, pool.ErrResourcesExhausted) {
		refusal, err = err.Error(), nil
		return 0
	}
	return jlong(id)
}

//export Java_org_nativepool_spark_jni_Natives_releaseBatch0
func Java_org_nativepool_spark_jni_Natives_releaseBatch0(env *jniEnv, _ jclass, batch jlong) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	err = process.ReleaseBatch(int64(batch))
}

//export Java_org_nativepool_spark_jni_Natives_arrowStats0
func Java_org_nativepool_spark_jni_Natives_arrowStats0(env *jniEnv, _ jclass, res jlong) (stats jlongArray) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	a, err := process.ArrowStats(int64(res))
	if err != nil {
		return 0
	}
	return goLongsToJava(env, a)
}

//export Java_org_nativepool_spark_jni_Natives_processArrowStats0
func Java_org_nativepool_spark_jni_Natives_processArrowStats0(env *jniEnv, _ jclass) (stats jlongArray) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	return goLongsToJava(env, process.ProcessArrowStats())
}

//export Java_org_nativepool_spark_jni_Natives_configureArrow0
func Java_org_nativepool_spark_jni_Natives_configureArrow0(env *jniEnv, _ jclass, allocationSites jboolean) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	process.ConfigureArrow(bridge.ArrowSettings{AllocationSites: allocationSites != 0})
}

//export Java_org_nativepool_spark_jni_Natives_closeArrow0
func Java_org_nativepool_spark_jni_Natives_closeArrow0(env *jniEnv, _ jclass, res jlong) (report jstring) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	r, err := process.CloseArrow(int64(res))
	if err != nil || r == "" {
		return 0
	}
	return goStringToJava(env, r)
}
