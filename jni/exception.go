package jni

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
)

// JavaException is a Java throwable raised inside an upcall (acquireMemory,
// releaseMemory, spill), turned into a Go error. It is deliberately not
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

	// ref is the global ref to the throwable; 0 once taken.
	ref atomic.Uintptr
	// deleteRef deletes a global ref from any thread (np_delete_global);
	// nil when ref was never set.
	deleteRef func(uintptr)
}

// newJavaException wraps a global ref taken from an upcall. deleteRef
// deletes it when the exception is discarded instead of rethrown.
func newJavaException(class, message, upcall string, ref uintptr, deleteRef func(uintptr)) *JavaException {
	e := &JavaException{Class: class, Message: message, Upcall: upcall, deleteRef: deleteRef}
	e.ref.Store(ref)
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

// take returns the global ref and forgets it; only the first caller gets a
// non-zero ref, which it must rethrow and then delete.
func (e *JavaException) take() uintptr { return e.ref.Swap(0) }

// discard deletes the global ref unless it was already taken.
func (e *JavaException) discard() {
	if ref := e.take(); ref != 0 && e.deleteRef != nil {
		e.deleteRef(ref)
	}
}

// maxUnclaimed bounds the exceptions an exceptionRouter keeps for goroutines
// that never claim them (upcalls made outside any export); older ones are
// discarded, deleting their global refs.
const maxUnclaimed = 256

// exceptionRouter hands each Java exception raised by an upcall to the
// export whose call raised it, so that the export rethrows the original
// throwable even when the pool had to swallow the error: Grow cannot fail
// (a failed acquire becomes overcommit), and a failed release during Shrink
// or a failed spiller during Reclaim is logged and counted, not returned.
//
// Routing is by goroutine: an export runs on the goroutine bound to its JVM
// thread (cgo keeps that goroutine for every call from the thread), and its
// upcalls run on it too, including nested exports (Spark's spill calling
// reclaim0 from inside acquireMemory). An export takes a mark on entry and
// claims, on exit, the exceptions its goroutine recorded after the mark. A
// nested export's mark is later than its parent's, so each level claims only
// what was raised inside it. Nothing is stored per goroutine between calls
// (no goroutine-local state, see doc.go): the goroutine ID is only a key of
// entries that live for the duration of one export call.
//
// The common path (no exception) costs one atomic load on entry and one on
// exit. An exceptionRouter is safe for concurrent use; the zero value is
// ready to use.
type exceptionRouter struct {
	// seq numbers recorded exceptions; bumped under mu, read without it.
	seq atomic.Uint64
	mu  struct {
		sync.Mutex
		pending []routedException // in seq order
	}
}

type routedException struct {
	goid int64
	seq  uint64
	exc  *JavaException
}

// mark returns the position from which the calling export will claim.
func (r *exceptionRouter) mark() uint64 { return r.seq.Load() }

// since reports whether any exception was recorded (by any goroutine)
// after mark; false means claim(mark) would return nothing.
func (r *exceptionRouter) since(mark uint64) bool { return r.seq.Load() != mark }

// record files e under the calling goroutine.
func (r *exceptionRouter) record(e *JavaException) {
	goid := currentGoroutineID()
	var evicted []*JavaException
	r.mu.Lock()
	seq := r.seq.Add(1)
	r.mu.pending = append(r.mu.pending, routedException{goid: goid, seq: seq, exc: e})
	if n := len(r.mu.pending) - maxUnclaimed; n > 0 {
		for _, x := range r.mu.pending[:n] {
			evicted = append(evicted, x.exc)
		}
		r.mu.pending = append(r.mu.pending[:0], r.mu.pending[n:]...)
	}
	r.mu.Unlock()
	for _, x := range evicted {
		x.discard()
	}
}

// claim removes and returns, oldest first, the exceptions the calling
// goroutine recorded after mark. The caller must rethrow or discard each.
func (r *exceptionRouter) claim(mark uint64) []*JavaException {
	if !r.since(mark) {
		return nil
	}
	goid := currentGoroutineID()
	var out []*JavaException
	r.mu.Lock()
	kept := r.mu.pending[:0]
	for _, x := range r.mu.pending {
		if x.goid == goid && x.seq > mark {
			out = append(out, x.exc)
		} else {
			kept = append(kept, x)
		}
	}
	clear(r.mu.pending[len(kept):])
	r.mu.pending = kept
	r.mu.Unlock()
	return out
}

// unclaimed is the number of exceptions waiting to be claimed.
func (r *exceptionRouter) unclaimed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mu.pending)
}

// currentGoroutineID parses the calling goroutine's ID from the first line
// of its stack trace ("goroutine 18 [running]:"), a format Go has kept since
// 1.0. It costs about a microsecond, and runs only when an upcall raised an
// exception; it avoids timandy/routine's linkname into the runtime at the
// JNI boundary. It returns -1 if the line cannot be parsed.
func currentGoroutineID() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b, ok := bytes.CutPrefix(b, []byte("goroutine "))
	if !ok {
		return -1
	}
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return -1
	}
	return id
}
