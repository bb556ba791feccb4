package jni

/*
#include <stdint.h>
#include "np.h"

// npa_throw_exhausted makes a new
// org.nativepool.spark.jni.ArrowMemoryExhaustedException(msg) pending in
// env. FindClass runs inside a native of Natives, so it resolves with
// Natives's class loader. Returns 0 if thrown; 1 if the class or its
// (String) constructor is missing (nothing pending: the caller throws
// something else); 2 if the JVM failed building it (an exception pending).
static int npa_throw_exhausted(JNIEnv *env, const jchar *msg, jsize len) {
	jclass cls = (*env)->FindClass(env, "org/nativepool/spark/jni/ArrowMemoryExhaustedException");
	if (cls == NULL) {
		(*env)->ExceptionClear(env);
		return 1;
	}
	jmethodID ctor = (*env)->GetMethodID(env, cls, "<init>", "(Ljava/lang/String;)V");
	if (ctor == NULL) {
		(*env)->ExceptionClear(env);
		(*env)->DeleteLocalRef(env, cls);
		return 1;
	}
	jstring s = (*env)->NewString(env, msg, len);
	if (s == NULL) {
		(*env)->DeleteLocalRef(env, cls);
		return 2;
	}
	jobject e = (*env)->NewObject(env, cls, ctor, s);
	(*env)->DeleteLocalRef(env, s);
	(*env)->DeleteLocalRef(env, cls);
	if (e == NULL) {
		return 2;
	}
	(*env)->Throw(env, (jthrowable)e);
	(*env)->DeleteLocalRef(env, e);
	return 0;
}
*/
import "C"

import (
	"unicode/utf16"
	"unsafe"

	"github.com/nativepool/nativepool/internal/bridge"
)

// This file holds the JNI helpers of the Arrow natives (arrow_exports.go):
// the refusal exception. (C Data struct addresses from Java stay uintptrs
// until internal/cdatacheck has accepted them: arrowruntime.ImportBatchAt.)

// exhaustedClass is the Java class copyBatch0 throws on a refusal (in
// spark/src/main/java/org/nativepool/spark/jni/); its (String) constructor
// is called from npa_throw_exhausted.
const exhaustedClass = "org.nativepool.spark.jni.ArrowMemoryExhaustedException"

// throwExhausted makes an ArrowMemoryExhaustedException with msg pending in
// env, or a RuntimeException with msg if that class cannot be built (the
// Arrow jars are missing from the class path), unless an exception is
// pending already.
func throwExhausted(env *jniEnv, msg string) {
	if exceptionPending(env) {
		return
	}
	u := utf16.Encode([]rune(msg))
	var p *C.jchar
	if len(u) > 0 {
		p = (*C.jchar)(unsafe.Pointer(&u[0]))
	}
	if C.npa_throw_exhausted(env, p, C.jsize(len(u))) == 1 {
		throwNew(env, bridge.ThrowRuntime, msg+" (and "+exhaustedClass+" could not be loaded)")
	}
}
