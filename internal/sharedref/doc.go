// Package sharedref guards a reference that calls keep using while its
// owner may close it at any moment: a JVM global ref (a Spark upstream, a
// spiller) that JNI upcalls use, and that the pool or reservation owning it
// deletes when it closes. It is pure Go: the reference is a uintptr and the
// delete a function value, so jni supplies the JVM's DeleteGlobalRef and
// tests a recorder.
//
// # Where each job lives
//
//	sharedref.go  Ref: New, Use, Done, Close, and the delete done once
package sharedref
