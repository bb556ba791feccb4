package jni

/*
#include "np.h"
*/
import "C"

// tellRegisteredOwner stores in candidate (the owner openPool0 was given)
// the owner the pool of handle h borrows from: candidate itself if this
// open created the pool, the task's registered owner if it joined. Java's
// TaskPool reads it right after openPool0 (TaskOwner.registeredOwner), so a
// join learns the task's owner from Go in the same crossing. It does nothing
// for objects that are not TaskOwners (np_set_registered_owner),
// and nothing if the owner's ref is already closed (it cannot be while h is
// open). Only an export, with its own env, may call it.
func tellRegisteredOwner(env *jniEnv, candidate jobject, h int64) {
	up, err := process.TaskOwner(h)
	if err != nil {
		return
	}
	ju, ok := up.(*jvmUpstream)
	if !ok {
		return
	}
	ref, ok := ju.ref.Use()
	if !ok {
		return
	}
	defer ju.ref.Done()
	C.np_set_registered_owner(env, candidate, C.jobject(ref))
}
