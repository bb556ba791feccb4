package jni

import "C"

import (
	"fmt"

	"github.com/nativepool/nativepool/internal/bridge"
)

// The leak and live-memory natives of org.nativepool.spark.jni.Natives
// (jni/API.md, "Leaks"), and nothing else. They follow exports.go: a
// deferred recover and endCall settle every outcome, so no panic crosses
// into the JVM.

//export Java_org_nativepool_spark_jni_Natives_reportLeak0
func Java_org_nativepool_spark_jni_Natives_reportLeak0(env *jniEnv, _ jclass, taskAttemptID jlong, consumer, kind jstring, bytes, resident jlong, site jstring) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	var l bridge.Leak
	var ok bool
	if l.Consumer, ok, err = javaStringToGo(env, consumer); err != nil {
		return
	} else if !ok {
		err = fmt.Errorf("nativepool: reportLeak: consumer is null: %w", bridge.ErrInvalidArgument)
		return
	}
	if l.Kind, _, err = javaStringToGo(env, kind); err != nil {
		return
	}
	if l.Site, _, err = javaStringToGo(env, site); err != nil {
		return
	}
	l.TaskAttemptID, l.Bytes, l.Resident = int64(taskAttemptID), int64(bytes), int64(resident)
	err = process.RecordLeak(l)
}

//export Java_org_nativepool_spark_jni_Natives_leakResident0
func Java_org_nativepool_spark_jni_Natives_leakResident0(env *jniEnv, _ jclass, bytes jlong) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	err = process.SetJavaLeakResident(int64(bytes))
}

//export Java_org_nativepool_spark_jni_Natives_recentLeaks0
func Java_org_nativepool_spark_jni_Natives_recentLeaks0(env *jniEnv, _ jclass) (leaks jstring) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	return goStringToJava(env, bridge.FormatLeaks(process.RecentLeaks()))
}

//export Java_org_nativepool_spark_jni_Natives_liveNative0
func Java_org_nativepool_spark_jni_Natives_liveNative0(env *jniEnv, _ jclass, max jint) (owners jstring) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	if max < 0 {
		err = fmt.Errorf("nativepool: liveNative(%d): negative count: %w", max, bridge.ErrInvalidArgument)
		return 0
	}
	return goStringToJava(env, bridge.FormatLiveOwners(process.LiveNative(int(max))))
}
