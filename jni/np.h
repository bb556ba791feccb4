/*
 * np.h: the seam between the Go side of package jni and the JVM.
 *
 * Every JNI call that Go needs goes through one np_ function, so that the
 * JNI rules of jni/doc.go ("Threads and the JNIEnv") hold in one place:
 *   - JNIEnv is never cached: np_env() does GetEnv on every upcall and, on a
 *     thread the JVM does not know, AttachCurrentThreadAsDaemon; a pthread_key
 *     destructor detaches that thread when it exits (else the JVM keeps a
 *     zombie java.lang.Thread per retired Go thread).
 *   - an upcall is ONE C call (env + call + exception check), so the goroutine
 *     cannot migrate to another OS thread between GetEnv and the call;
 *   - classes and method IDs are resolved once, in np_init, on a JVM thread
 *     whose class loader sees org.nativepool.spark.jni; method IDs come from
 *     the interfaces Upstream and Spiller, so CallLongMethod dispatches
 *     virtually to whatever class implements them;
 *   - a Java exception raised by an upcall is taken (ExceptionOccurred),
 *     turned into a global ref, and cleared before the helper returns; the
 *     global ref is owned by the caller (np_throw it, or np_delete_global it);
 *   - strings cross as UTF-16 (jchar) copies, never as modified UTF-8, and
 *     JNI string buffers are released with their JNI release call, never free.
 *
 * Status codes returned by the np_ helpers (int). The other copy of these
 * values is jni/cgotypes.go (status constants).
 */
#ifndef NATIVEPOOL_NP_H
#define NATIVEPOOL_NP_H

#include <jni.h>

/* np_ status codes. */
enum {
	NP_OK = 0,              /* the call completed */
	NP_EXCEPTION = 1,       /* a Java exception was raised; *exc holds a global ref to it */
	NP_NO_ENV = 2,          /* this thread could not be attached to the JVM */
	NP_NOT_INITIALIZED = 3, /* init0 has not completed */
	NP_JNI_FAILED = 4       /* a JNI function failed (out of memory in the JVM) */
};

/* Exception classes np_throw_new can raise (the kind argument). */
enum {
	NP_ILLEGAL_ARGUMENT = 0, /* java.lang.IllegalArgumentException */
	NP_ILLEGAL_STATE = 1,    /* java.lang.IllegalStateException */
	NP_RUNTIME = 2           /* java.lang.RuntimeException */
};

/*
 * np_init caches the JavaVM, global refs to the classes named in jni/API.md
 * (init0), the method IDs of the upcalls and the field IDs of the task owner
 * (TaskOwner.taskHandle, .registeredOwner). It must run on a JVM thread
 * inside a native method of Natives (FindClass then uses Natives's class
 * loader). Idempotent and safe to call concurrently. Returns NP_OK, or
 * NP_EXCEPTION with the JVM's NoClassDefFoundError / NoSuchMethodError still
 * pending in env (it names the missing class or method), or NP_JNI_FAILED.
 */
int np_init(JNIEnv *env);

/* np_ready reports whether np_init has completed (1) or not (0). */
int np_ready(void);

/*
 * np_env returns the JNIEnv of the calling OS thread, attaching it to the JVM
 * as a daemon thread named "nativepool-go" if it is not attached yet (the
 * thread is then detached by a pthread_key destructor when it exits). NULL if
 * np_init has not run or attaching failed. The result is valid only on the
 * calling thread and only until the caller returns to Go: never keep it.
 */
JNIEnv *np_env(void);

/*
 * Upcalls. Each one is a single C call doing np_env, the Java call and the
 * exception check, so it is safe from any goroutine. On NP_EXCEPTION, *exc is
 * a new global ref to the throwable (the exception is cleared); otherwise *exc
 * is NULL. On any status other than NP_OK the out value is 0.
 *
 * np_acquire calls upstream.acquireMemory(n) and stores the grant in *granted.
 * np_release calls upstream.releaseMemory(n).
 * np_spill calls spiller.spill(target) and stores the bytes freed in *freed.
 * upstream and spiller must be global refs.
 */
int np_acquire(jobject upstream, jlong n, jlong *granted, jthrowable *exc);
int np_release(jobject upstream, jlong n, jthrowable *exc);
int np_spill(jobject spiller, jlong target, jlong *freed, jthrowable *exc);

/*
 * The pod guard's hold on Spark's off-heap memory (org.nativepool.spark.jni.OffHeap),
 * from the guard's goroutine (keep from a borrowing task's too), on any thread:
 * np_offheap_take calls offheap.take(n, native) and stores the bytes taken in *granted;
 * np_offheap_keep calls offheap.keep(n) and stores the bytes kept in *kept;
 * np_offheap_give calls offheap.giveBack(n);
 * np_offheap_free calls offheap.free() and stores the bytes free in *free.
 * Same status codes and exception hand-over as np_acquire.
 */
int np_offheap_take(jobject offheap, jlong n, jlong native, jlong *granted, jthrowable *exc);
int np_offheap_keep(jobject offheap, jlong n, jlong *kept, jthrowable *exc);
int np_offheap_give(jobject offheap, jlong n, jthrowable *exc);
int np_offheap_free(jobject offheap, jlong *free, jthrowable *exc);

/*
 * np_new_global returns a new global ref to obj (NULL if obj is NULL or the
 * JVM is out of memory). env is the JNIEnv of the calling native method.
 */
jobject np_new_global(JNIEnv *env, jobject obj);

/*
 * np_delete_global deletes a global ref from any thread (attaching it if
 * needed). A NULL ref is ignored. Returns NP_OK or NP_NO_ENV (the ref is then
 * leaked: there is no way to delete it without a JNIEnv).
 */
int np_delete_global(jobject ref);

/*
 * np_describe copies the class name (Class.getName) and message
 * (Throwable.getMessage, NULL when the message is null) of a throwable, held
 * as a global or local ref, into malloc'ed UTF-16 buffers that the caller
 * frees with free(). Lengths are in jchars. Local refs made on the way are
 * deleted (a local frame), and an exception raised while describing is
 * cleared. Any thread. Returns NP_OK, NP_NO_ENV, NP_NOT_INITIALIZED or
 * NP_JNI_FAILED (buffers NULL).
 */
int np_describe(jthrowable t, jchar **cls, jsize *cls_len, jchar **msg, jsize *msg_len);

/*
 * np_throw makes t (a global ref from an upcall) the pending exception of
 * env, so that the native method returning next rethrows the ORIGINAL
 * throwable. It does not delete t. Returns NP_OK or NP_JNI_FAILED.
 */
int np_throw(JNIEnv *env, jthrowable t);

/*
 * np_throw_new makes a new exception of the given kind (NP_ILLEGAL_ARGUMENT,
 * NP_ILLEGAL_STATE, NP_RUNTIME) with the UTF-16 message msg[0:len] pending
 * in env. Works before np_init (it then resolves the class on the spot). If
 * an exception is already pending, it is left in place and nothing is thrown.
 * Returns NP_OK or NP_JNI_FAILED.
 */
int np_throw_new(JNIEnv *env, int kind, const jchar *msg, jsize len);

/*
 * np_string_copy copies a Java String into a malloc'ed UTF-16 buffer that the
 * caller frees with free(); *len is in jchars. A NULL string gives NP_OK with
 * *out NULL and *len 0. Returns NP_OK or NP_JNI_FAILED (a JVM exception may
 * then be pending in env; if none is, malloc failed and the caller throws).
 */
int np_string_copy(JNIEnv *env, jstring s, jchar **out, jsize *len);

/*
 * np_new_string returns a new local ref to a Java String holding the UTF-16
 * text s[0:len], or NULL with an OutOfMemoryError pending.
 */
jstring np_new_string(JNIEnv *env, const jchar *s, jsize len);

/*
 * np_new_long_array returns a new local ref to a long[] holding v[0:len], or
 * NULL with an exception pending.
 */
jlongArray np_new_long_array(JNIEnv *env, const jlong *v, jsize len);

/*
 * np_long_array_copy copies a Java long[] into a malloc'ed buffer the caller
 * frees with free(). A NULL array gives NP_OK with *out NULL and *len 0.
 * Returns NP_OK or NP_JNI_FAILED (as np_string_copy).
 */
int np_long_array_copy(JNIEnv *env, jlongArray a, jlong **out, jsize *len);

/*
 * The task owner (org.nativepool.spark.jni.TaskOwner, jni/API.md
 * "openPool0"): field IDs cached by np_init. Both helpers do nothing when
 * the object is not a TaskOwner (an upstream of another class, as tests
 * pass to openPool0), and always return NP_OK. env is the JNIEnv of
 * the calling native method; owner and candidate are local or global refs.
 *
 * np_set_task_handle stores the Go task handle in owner.taskHandle.
 * np_set_registered_owner stores owner (the object the task's pool borrows
 * from) in candidate.registeredOwner.
 */
int np_set_task_handle(JNIEnv *env, jobject owner, jlong task);
int np_set_registered_owner(JNIEnv *env, jobject candidate, jobject owner);

/* np_exception_pending reports whether env has a pending exception (1) or not (0). */
int np_exception_pending(JNIEnv *env);

/*
 * Go's log records through SLF4J (np_log.c; jni/log.go, internal/logsink).
 *
 * np_log_init resolves org.nativepool.spark.jni.GoLog and its static method
 * log(ILjava/lang/String;JLjava/lang/String;)V (a global ref and a method ID,
 * kept for the process). Like np_init it must run inside a native method of
 * Natives (configureLog0), so FindClass uses Natives's class loader. Idempotent. Returns NP_OK, or NP_EXCEPTION with the JVM's
 * NoClassDefFoundError / NoSuchMethodError pending in env, or NP_JNI_FAILED.
 *
 * np_log calls GoLog.log(level, logger, task, text) from any thread
 * (np_env attaches a Go thread if needed); logger and text are UTF-16,
 * lengths in jchars. It never leaves an exception behind: one GoLog.log
 * raises is cleared (NP_EXCEPTION). If an exception is already pending on the
 * thread (a record made inside a native method after it threw), the JVM is
 * not called at all (NP_EXCEPTION). Local refs are made in a local frame.
 * Returns NP_OK, NP_EXCEPTION, NP_NO_ENV, NP_NOT_INITIALIZED (np_log_init has
 * not run) or NP_JNI_FAILED.
 */
int np_log_init(JNIEnv *env);
int np_log(jint level, const jchar *logger, jsize logger_len, jlong task, const jchar *text, jsize text_len);

#endif /* NATIVEPOOL_NP_H */
