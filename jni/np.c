/*
 * np.c: every JNI call of package jni (see np.h for the contract of each
 * helper and jni/doc.go for the thread and signal rules).
 */
#include "np.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Written once by np_init under np_init_mu, before np_initialized is set
 * (release); read after np_ready() observed it (acquire). */
static JavaVM *np_vm;
static jclass np_cls_upstream; /* org.nativepool.spark.jni.Upstream (global ref) */
static jclass np_cls_spiller;  /* org.nativepool.spark.jni.Spiller (global ref) */
static jclass np_cls_owner;    /* org.nativepool.spark.jni.TaskOwner (global ref) */
static jclass np_cls_offheap;  /* org.nativepool.spark.jni.OffHeap (global ref) */
static jfieldID np_fid_task_handle; /* TaskOwner.taskHandle J */
static jfieldID np_fid_owner;       /* TaskOwner.registeredOwner Lorg/nativepool/spark/jni/TaskOwner; */
static jclass np_cls_exc[3];   /* indexed by NP_ILLEGAL_ARGUMENT.. NP_RUNTIME (global refs) */
static jmethodID np_exc_ctor[3];
static jmethodID np_mid_acquire;     /* Upstream.acquireMemory(J)J */
static jmethodID np_mid_release;     /* Upstream.releaseMemory(J)V */
static jmethodID np_mid_spill;       /* Spiller.spill(J)J */
static jmethodID np_mid_oh_take;     /* OffHeap.take(JJ)J */
static jmethodID np_mid_oh_keep;     /* OffHeap.keep(J)J */
static jmethodID np_mid_oh_give;     /* OffHeap.giveBack(J)V */
static jmethodID np_mid_oh_free;     /* OffHeap.free()J */
static jmethodID np_mid_class_name;  /* java.lang.Class.getName()Ljava/lang/String; */
static jmethodID np_mid_get_message; /* java.lang.Throwable.getMessage()Ljava/lang/String; */
static int np_initialized;

static pthread_mutex_t np_init_mu = PTHREAD_MUTEX_INITIALIZER;

/* np_detach_key's destructor detaches threads that np_env attached. */
static pthread_key_t np_detach_key;
static pthread_once_t np_detach_once = PTHREAD_ONCE_INIT;
static int np_detach_key_ok;

static const char *const np_exc_names[3] = {
	"java/lang/IllegalArgumentException",
	"java/lang/IllegalStateException",
	"java/lang/RuntimeException",
};

static void np_detach(void *unused) {
	(void)unused;
	/* Runs when an OS thread that np_env attached exits (a Go thread retired
	 * by the runtime). Without it the JVM keeps a zombie java.lang.Thread. */
	if (np_vm != NULL) {
		(*np_vm)->DetachCurrentThread(np_vm);
	}
}

static void np_make_detach_key(void) {
	np_detach_key_ok = pthread_key_create(&np_detach_key, np_detach) == 0;
}

int np_ready(void) {
	return __atomic_load_n(&np_initialized, __ATOMIC_ACQUIRE);
}

/* np_global_class finds a class with the caller's class loader and returns a
 * global ref to it, or NULL with the exception pending. */
static jclass np_global_class(JNIEnv *env, const char *name) {
	jclass local = (*env)->FindClass(env, name);
	if (local == NULL) {
		return NULL;
	}
	jclass global = (jclass)(*env)->NewGlobalRef(env, local);
	(*env)->DeleteLocalRef(env, local);
	return global;
}

int np_init(JNIEnv *env) {
	if (np_ready()) {
		return NP_OK;
	}
	pthread_mutex_lock(&np_init_mu);
	int rc = NP_OK;
	if (np_ready()) {
		goto out;
	}
	rc = NP_EXCEPTION;
	if ((*env)->GetJavaVM(env, &np_vm) != JNI_OK) {
		rc = NP_JNI_FAILED;
		goto out;
	}
	if (np_cls_upstream == NULL && (np_cls_upstream = np_global_class(env, "org/nativepool/spark/jni/Upstream")) == NULL) {
		goto out;
	}
	if (np_cls_spiller == NULL && (np_cls_spiller = np_global_class(env, "org/nativepool/spark/jni/Spiller")) == NULL) {
		goto out;
	}
	if (np_cls_owner == NULL && (np_cls_owner = np_global_class(env, "org/nativepool/spark/jni/TaskOwner")) == NULL) {
		goto out;
	}
	if (np_cls_offheap == NULL && (np_cls_offheap = np_global_class(env, "org/nativepool/spark/jni/OffHeap")) == NULL) {
		goto out;
	}
	if ((np_fid_task_handle = (*env)->GetFieldID(env, np_cls_owner, "taskHandle", "J")) == NULL) {
		goto out;
	}
	if ((np_fid_owner = (*env)->GetFieldID(env, np_cls_owner, "registeredOwner", "Lorg/nativepool/spark/jni/TaskOwner;")) == NULL) {
		goto out;
	}
	for (int i = 0; i < 3; i++) {
		if (np_cls_exc[i] == NULL && (np_cls_exc[i] = np_global_class(env, np_exc_names[i])) == NULL) {
			goto out;
		}
		if ((np_exc_ctor[i] = (*env)->GetMethodID(env, np_cls_exc[i], "<init>", "(Ljava/lang/String;)V")) == NULL) {
			goto out;
		}
	}
	/* From the interfaces, so CallLongMethod dispatches to any implementation. */
	if ((np_mid_acquire = (*env)->GetMethodID(env, np_cls_upstream, "acquireMemory", "(J)J")) == NULL) {
		goto out;
	}
	if ((np_mid_release = (*env)->GetMethodID(env, np_cls_upstream, "releaseMemory", "(J)V")) == NULL) {
		goto out;
	}
	if ((np_mid_spill = (*env)->GetMethodID(env, np_cls_spiller, "spill", "(J)J")) == NULL) {
		goto out;
	}
	if ((np_mid_oh_take = (*env)->GetMethodID(env, np_cls_offheap, "take", "(JJ)J")) == NULL) {
		goto out;
	}
	if ((np_mid_oh_keep = (*env)->GetMethodID(env, np_cls_offheap, "keep", "(J)J")) == NULL) {
		goto out;
	}
	if ((np_mid_oh_give = (*env)->GetMethodID(env, np_cls_offheap, "giveBack", "(J)V")) == NULL) {
		goto out;
	}
	if ((np_mid_oh_free = (*env)->GetMethodID(env, np_cls_offheap, "free", "()J")) == NULL) {
		goto out;
	}
	{
		jclass cls = (*env)->FindClass(env, "java/lang/Class");
		if (cls == NULL) {
			goto out;
		}
		np_mid_class_name = (*env)->GetMethodID(env, cls, "getName", "()Ljava/lang/String;");
		(*env)->DeleteLocalRef(env, cls);
		if (np_mid_class_name == NULL) {
			goto out;
		}
		jclass thr = (*env)->FindClass(env, "java/lang/Throwable");
		if (thr == NULL) {
			goto out;
		}
		np_mid_get_message = (*env)->GetMethodID(env, thr, "getMessage", "()Ljava/lang/String;");
		(*env)->DeleteLocalRef(env, thr);
		if (np_mid_get_message == NULL) {
			goto out;
		}
	}
	pthread_once(&np_detach_once, np_make_detach_key);
	__atomic_store_n(&np_initialized, 1, __ATOMIC_RELEASE);
	rc = NP_OK;
out:
	pthread_mutex_unlock(&np_init_mu);
	return rc;
}

JNIEnv *np_env(void) {
	if (!np_ready()) {
		return NULL;
	}
	JNIEnv *env = NULL;
	jint rc = (*np_vm)->GetEnv(np_vm, (void **)&env, JNI_VERSION_1_8);
	if (rc == JNI_OK) {
		return env;
	}
	if (rc != JNI_EDETACHED || !np_detach_key_ok) {
		return NULL;
	}
	JavaVMAttachArgs args = {JNI_VERSION_1_8, (char *)"nativepool-go", NULL};
	if ((*np_vm)->AttachCurrentThreadAsDaemon(np_vm, (void **)&env, &args) != JNI_OK) {
		return NULL;
	}
	/* Any non-NULL value makes the destructor run at thread exit. */
	pthread_setspecific(np_detach_key, (void *)1);
	return env;
}

/* np_take_exception moves a pending exception into a new global ref. */
static int np_take_exception(JNIEnv *env, jthrowable *exc) {
	if (!(*env)->ExceptionCheck(env)) {
		return NP_OK;
	}
	jthrowable t = (*env)->ExceptionOccurred(env);
	(*env)->ExceptionClear(env);
	*exc = (jthrowable)(*env)->NewGlobalRef(env, t);
	(*env)->DeleteLocalRef(env, t);
	return *exc != NULL ? NP_EXCEPTION : NP_JNI_FAILED;
}

int np_acquire(jobject upstream, jlong n, jlong *granted, jthrowable *exc) {
	*granted = 0;
	*exc = NULL;
	if (!np_ready()) {
		return NP_NOT_INITIALIZED;
	}
	JNIEnv *env = np_env();
	if (env == NULL) {
		return NP_NO_ENV;
	}
	jlong got = (*env)->CallLongMethod(env, upstream, np_mid_acquire, n);
	int rc = np_take_exception(env, exc);
	if (rc == NP_OK) {
		*granted = got;
	}
	return rc;
}

int np_release(jobject upstream, jlong n, jthrowable *exc) {
	*exc = NULL;
	if (!np_ready()) {
		return NP_NOT_INITIALIZED;
	}
	JNIEnv *env = np_env();
	if (env == NULL) {
		return NP_NO_ENV;
	}
	(*env)->CallVoidMethod(env, upstream, np_mid_release, n);
	return np_take_exception(env, exc);
}

int np_offheap_take(jobject offheap, jlong n, jlong native, jlong *granted, jthrowable *exc) {
	*granted = 0;
	*exc = NULL;
	if (!np_ready()) {
		return NP_NOT_INITIALIZED;
	}
	JNIEnv *env = np_env();
	if (env == NULL) {
		return NP_NO_ENV;
	}
	jlong got = (*env)->CallLongMethod(env, offheap, np_mid_oh_take, n, native);
	int rc = np_take_exception(env, exc);
	if (rc == NP_OK) {
		*granted = got;
	}
	return rc;
}

int np_offheap_keep(jobject offheap, jlong n, jlong *kept, jthrowable *exc) {
	*kept = 0;
	*exc = NULL;
	if (!np_ready()) {
		return NP_NOT_INITIALIZED;
	}
	JNIEnv *env = np_env();
	if (env == NULL) {
		return NP_NO_ENV;
	}
	jlong got = (*env)->CallLongMethod(env, offheap, np_mid_oh_keep, n);
	int rc = np_take_exception(env, exc);
	if (rc == NP_OK) {
		*kept = got;
	}
	return rc;
}

int np_offheap_give(jobject offheap, jlong n, jthrowable *exc) {
	*exc = NULL;
	if (!np_ready()) {
		return NP_NOT_INITIALIZED;
	}
	JNIEnv *env = np_env();
	if (env == NULL) {
		return NP_NO_ENV;
	}
	(*env)->CallVoidMethod(env, offheap, np_mid_oh_give, n);
	return np_take_exception(env, exc);
}

int np_offheap_free(jobject offheap, jlong *free, jthrowable *exc) {
	*free = 0;
	*exc = NULL;
	if (!np_ready()) {
		return NP_NOT_INITIALIZED;
	}
	JNIEnv *env = np_env();
	if (env == NULL) {
		return NP_NO_ENV;
	}
	jlong got = (*env)->CallLongMethod(env, offheap, np_mid_oh_free);
	int rc = np_take_exception(env, exc);
	if (rc == NP_OK) {
		*free = got;
	}
	return rc;
}

int np_spill(jobject spiller, jlong target, jlong *freed, jthrowable *exc) {
	*freed = 0;
	*exc = NULL;
	if (!np_ready()) {
		return NP_NOT_INITIALIZED;
	}
	JNIEnv *env = np_env();
	if (env == NULL) {
		return NP_NO_ENV;
	}
	jlong got = (*env)->CallLongMethod(env, spiller, np_mid_spill, target);
	int rc = np_take_exception(env, exc);
	if (rc == NP_OK) {
		*freed = got;
	}
	return rc;
}

jobject np_new_global(JNIEnv *env, jobject obj) {
	if (obj == NULL) {
		return NULL;
	}
	return (*env)->NewGlobalRef(env, obj);
}

int np_delete_global(jobject ref) {
	if (ref == NULL) {
		return NP_OK;
	}
	JNIEnv *env = np_env();
	if (env == NULL) {
		return NP_NO_ENV;
	}
	(*env)->DeleteGlobalRef(env, ref);
	return NP_OK;
}

/* np_copy_chars copies a Java String (local ref, may be NULL) into malloc'ed UTF-16. */
static int np_copy_chars(JNIEnv *env, jstring s, jchar **out, jsize *len) {
	*out = NULL;
	*len = 0;
	if (s == NULL) {
		return NP_OK;
	}
	jsize n = (*env)->GetStringLength(env, s);
	jchar *buf = malloc(sizeof(jchar) * (size_t)(n > 0 ? n : 1));
	if (buf == NULL) {
		return NP_JNI_FAILED;
	}
	/* GetStringRegion copies into our buffer: nothing to release. */
	(*env)->GetStringRegion(env, s, 0, n, buf);
	if ((*env)->ExceptionCheck(env)) {
		free(buf);
		return NP_JNI_FAILED;
	}
	*out = buf;
	*len = n;
	return NP_OK;
}

int np_describe(jthrowable t, jchar **cls, jsize *cls_len, jchar **msg, jsize *msg_len) {
	*cls = NULL;
	*msg = NULL;
	*cls_len = 0;
	*msg_len = 0;
	if (!np_ready()) {
		return NP_NOT_INITIALIZED;
	}
	JNIEnv *env = np_env();
	if (env == NULL) {
		return NP_NO_ENV;
	}
	if ((*env)->PushLocalFrame(env, 8) != 0) {
		(*env)->ExceptionClear(env);
		return NP_JNI_FAILED;
	}
	int rc = NP_OK;
	jclass c = (*env)->GetObjectClass(env, t);
	jstring name = (jstring)(*env)->CallObjectMethod(env, c, np_mid_class_name);
	if ((*env)->ExceptionCheck(env)) {
		(*env)->ExceptionClear(env);
		name = NULL;
	}
	jstring m = (jstring)(*env)->CallObjectMethod(env, t, np_mid_get_message);
	if ((*env)->ExceptionCheck(env)) {
		/* a getMessage override that throws: report no message */
		(*env)->ExceptionClear(env);
		m = NULL;
	}
	if (np_copy_chars(env, name, cls, cls_len) != NP_OK || np_copy_chars(env, m, msg, msg_len) != NP_OK) {
		(*env)->ExceptionClear(env);
		free(*cls);
		free(*msg);
		*cls = NULL;
		*msg = NULL;
		*cls_len = 0;
		*msg_len = 0;
		rc = NP_JNI_FAILED;
	}
	(*env)->PopLocalFrame(env, NULL);
	return rc;
}

int np_throw(JNIEnv *env, jthrowable t) {
	return (*env)->Throw(env, t) == 0 ? NP_OK : NP_JNI_FAILED;
}

int np_throw_new(JNIEnv *env, int kind, const jchar *msg, jsize len) {
	if (kind < 0 || kind > 2) {
		kind = NP_RUNTIME;
	}
	if ((*env)->ExceptionCheck(env)) {
		return NP_OK; /* the earlier exception wins */
	}
	jclass cls;
	jmethodID ctor;
	int local = 0;
	if (np_ready()) {
		cls = np_cls_exc[kind];
		ctor = np_exc_ctor[kind];
	} else {
		/* before init0 (or after it failed): resolve on the spot */
		cls = (*env)->FindClass(env, np_exc_names[kind]);
		if (cls == NULL) {
			return NP_JNI_FAILED;
		}
		local = 1;
		ctor = (*env)->GetMethodID(env, cls, "<init>", "(Ljava/lang/String;)V");
		if (ctor == NULL) {
			(*env)->DeleteLocalRef(env, cls);
			return NP_JNI_FAILED;
		}
	}
	int rc = NP_JNI_FAILED;
	jstring s = (*env)->NewString(env, msg, len);
	if (s != NULL) {
		jthrowable t = (jthrowable)(*env)->NewObject(env, cls, ctor, s);
		if (t != NULL) {
			rc = (*env)->Throw(env, t) == 0 ? NP_OK : NP_JNI_FAILED;
			(*env)->DeleteLocalRef(env, t);
		}
		(*env)->DeleteLocalRef(env, s);
	}
	if (local) {
		(*env)->DeleteLocalRef(env, cls);
	}
	return rc;
}

int np_string_copy(JNIEnv *env, jstring s, jchar **out, jsize *len) {
	return np_copy_chars(env, s, out, len);
}

jstring np_new_string(JNIEnv *env, const jchar *s, jsize len) {
	return (*env)->NewString(env, s, len);
}

jlongArray np_new_long_array(JNIEnv *env, const jlong *v, jsize len) {
	jlongArray a = (*env)->NewLongArray(env, len);
	if (a == NULL) {
		return NULL;
	}
	(*env)->SetLongArrayRegion(env, a, 0, len, v);
	if ((*env)->ExceptionCheck(env)) {
		(*env)->DeleteLocalRef(env, a);
		return NULL;
	}
	return a;
}

int np_long_array_copy(JNIEnv *env, jlongArray a, jlong **out, jsize *len) {
	*out = NULL;
	*len = 0;
	if (a == NULL) {
		return NP_OK;
	}
	jsize n = (*env)->GetArrayLength(env, a);
	jlong *buf = malloc(sizeof(jlong) * (size_t)(n > 0 ? n : 1));
	if (buf == NULL) {
		return NP_JNI_FAILED;
	}
	(*env)->GetLongArrayRegion(env, a, 0, n, buf);
	if ((*env)->ExceptionCheck(env)) {
		free(buf);
		return NP_JNI_FAILED;
	}
	*out = buf;
	*len = n;
	return NP_OK;
}

/* np_is_owner reports whether obj is a TaskOwner (np_init has run: the
 * export calling us is a native of Natives or LibraryLoader after init0). */
static int np_is_owner(JNIEnv *env, jobject obj) {
	return obj != NULL && np_ready() && (*env)->IsInstanceOf(env, obj, np_cls_owner);
}

int np_set_task_handle(JNIEnv *env, jobject owner, jlong task) {
	if (np_is_owner(env, owner)) {
		(*env)->SetLongField(env, owner, np_fid_task_handle, task);
	}
	return NP_OK;
}

int np_set_registered_owner(JNIEnv *env, jobject candidate, jobject owner) {
	if (np_is_owner(env, candidate) && np_is_owner(env, owner)) {
		(*env)->SetObjectField(env, candidate, np_fid_owner, owner);
	}
	return NP_OK;
}

int np_exception_pending(JNIEnv *env) {
	return (*env)->ExceptionCheck(env) ? 1 : 0;
}
