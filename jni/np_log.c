/*
 * np_log.c: the upcall that hands Go's log records to
 * org.nativepool.spark.jni.GoLog (see np.h, "Go's log records through SLF4J",
 * and internal/logsink). Kept apart from np.c: np_init does not need GoLog,
 * so a JVM without it still initialises.
 */
#include "np.h"

#include <pthread.h>

/* Written once by np_log_init under np_log_mu, before np_log_ready is set
 * (release); read after np_log observed it (acquire). */
static jclass np_log_cls;      /* org.nativepool.spark.jni.GoLog (global ref) */
static jmethodID np_log_mid;   /* static GoLog.log(ILjava/lang/String;JLjava/lang/String;)V */
static int np_log_ready;
static pthread_mutex_t np_log_mu = PTHREAD_MUTEX_INITIALIZER;

int np_log_init(JNIEnv *env) {
	if (__atomic_load_n(&np_log_ready, __ATOMIC_ACQUIRE)) {
		return NP_OK;
	}
	pthread_mutex_lock(&np_log_mu);
	int rc = NP_OK;
	if (!np_log_ready) {
		rc = NP_EXCEPTION;
		jclass local = (*env)->FindClass(env, "org/nativepool/spark/jni/GoLog");
		if (local != NULL) {
			jmethodID mid = (*env)->GetStaticMethodID(env, local, "log", "(ILjava/lang/String;JLjava/lang/String;)V");
			if (mid != NULL) {
				np_log_cls = (jclass)(*env)->NewGlobalRef(env, local);
				np_log_mid = mid;
				rc = np_log_cls != NULL ? NP_OK : NP_JNI_FAILED;
			}
			(*env)->DeleteLocalRef(env, local);
		}
		if (rc == NP_OK) {
			__atomic_store_n(&np_log_ready, 1, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&np_log_mu);
	return rc;
}

int np_log(jint level, const jchar *logger, jsize logger_len, jlong task, const jchar *text, jsize text_len) {
	if (!np_ready() || !__atomic_load_n(&np_log_ready, __ATOMIC_ACQUIRE)) {
		return NP_NOT_INITIALIZED;
	}
	JNIEnv *env = np_env();
	if (env == NULL) {
		return NP_NO_ENV;
	}
	if ((*env)->ExceptionCheck(env)) {
		/* Not ours to clear, and JNI may not be called with it pending. */
		return NP_EXCEPTION;
	}
	if ((*env)->PushLocalFrame(env, 4) != 0) {
		(*env)->ExceptionClear(env);
		return NP_JNI_FAILED;
	}
	int rc = NP_JNI_FAILED;
	jstring l = (*env)->NewString(env, logger, logger_len);
	jstring t = l != NULL ? (*env)->NewString(env, text, text_len) : NULL;
	if (t != NULL) {
		(*env)->CallStaticVoidMethod(env, np_log_cls, np_log_mid, level, l, task, t);
		rc = NP_OK;
	}
	if ((*env)->ExceptionCheck(env)) {
		(*env)->ExceptionClear(env);
		rc = rc == NP_OK ? NP_EXCEPTION : NP_JNI_FAILED;
	}
	(*env)->PopLocalFrame(env, NULL);
	return rc;
}
