package bridge

import (
	"errors"
	"runtime"
	"sync/atomic"
)

// JavaException is a Java throwable raised inside an upcall (acquireMemory,
// releaseMemory, spill), turned into a Go error. It travels back to the
// export that made the upcall as (part of) the error its call returns: the
// pools return upstream and spiller failures through their reporting forms
// (pool.Reservation.GrowReporting and the others), so no side channel is
// needed. It is deliberately not
// pool.ErrResourcesExhausted: a refusal is a normal answer, an exception is
// a failure of the task (an InterruptedException when Spark kills the task
// while it waits for memory, a SparkOutOfMemoryError, a bug).
//
// It holds a global ref to the original throwable so that the export whose
// call raised it can rethrow exactly that object (JNI Throw) and then delete
// the ref. Exactly one party takes the ref (take), so it is thrown or
// deleted once. A JavaException is safe for concurrent use; the zero value
// has no class, no message and no ref.
type JavaException struct {
	// Class is the throwable's class name, e.g. "java.lang.InterruptedException".
	Class string
	// Message is its getMessage(), "" when null.
	Message string
	// Upcall names the Java method that threw: "acquireMemory",
	// "releaseMemory" or "spill".
	Upcall string

	// ref holds the global ref to the throwable; 0 once taken.
	ref *thrownRef
}

// thrownRef is a JavaException's global ref, apart from the exception so
// that a cleanup can delete it once the exception is unreachable.
type thrownRef struct {
	ref atomic.Uintptr
	// deleteRef deletes a global ref from any thread (np_delete_global).
	deleteRef func(uintptr)
}

// drop deletes the ref unless it was taken.
func (t *thrownRef) drop() {
	if ref := t.ref.Swap(0); ref != 0 && t.deleteRef != nil {
		t.deleteRef(ref)
	}
}

// NewJavaException wraps a global ref taken from an upcall. deleteRef
// deletes it when the exception is discarded instead of rethrown, also when
// the exception is dropped on the way without either (the pool swallows an
// upcall's failure it only logs, such as a failed release of surplus slack
// after a successful TryGrow): a cleanup then deletes the ref after the
// exception becomes unreachable, so no global ref outlives its error.
func NewJavaException(class, message, upcall string, ref uintptr, deleteRef func(uintptr)) *JavaException {
	t := &thrownRef{deleteRef: deleteRef}
	t.ref.Store(ref)
	e := &JavaException{Class: class, Message: message, Upcall: upcall, ref: t}
	if ref != 0 {
		runtime.AddCleanup(e, (*thrownRef).drop, t)
	}
	return e
}

// Error renders "<Class>: <Message> (in <Upcall>)", like Throwable.toString
// plus where it came from.
func (e *JavaException) Error() string {
	s := e.Class
	if s == "" {
		s = "java exception"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Upcall != "" {
		s += " (in " + e.Upcall + ")"
	}
	return s
}

// Take returns the global ref and forgets it; only the first caller gets a
// non-zero ref, which it must rethrow and then delete.
func (e *JavaException) Take() uintptr {
	if e.ref == nil {
		return 0
	}
	return e.ref.ref.Swap(0)
}

// Discard deletes the global ref unless it was already taken.
func (e *JavaException) Discard() {
	if e.ref != nil {
		e.ref.drop()
	}
}

// JavaExceptions lists, depth first, every *JavaException in err's tree
// (through Unwrap() error and Unwrap() []error, as errors.As walks it).
func JavaExceptions(err error) []*JavaException {
	var out []*JavaException
	var walk func(error)
	walk = func(err error) {
		switch x := err.(type) {
		case nil:
			return
		case *JavaException:
			out = append(out, x)
			return
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				walk(e)
			}
		default:
			walk(errors.Unwrap(err))
		}
	}
	walk(err)
	return out
}
