package jni

/*
#cgo CFLAGS: -Werror -Wall -I/usr/lib/jvm/java-17-openjdk-amd64/include -I/usr/lib/jvm/java-17-openjdk-amd64/include/linux
#include "np.h"
*/
import "C"

// The C types of the JNI boundary under Go names, so that no Go signature in
// this package says C. (STYLE.md rule 13). jobject and its family are
// uintptr in cgo (Go 1.10+, cmd/cgo jniTypes): compare them with 0, not nil.
type (
	// jniEnv is the per-thread JNI function table; valid only on the thread
	// and during the native call that received it.
	jniEnv     = C.JNIEnv
	jclass     = C.jclass
	jobject    = C.jobject
	jstring    = C.jstring
	jlongArray = C.jlongArray
	jlong      = C.jlong
	jint       = C.jint
	jboolean   = C.jboolean
)
