package ffi

import (
	"errors"
	"fmt"

	"github.com/nativepool/nativepool/pool"
)

// ErrOutOfMemory is wrapped by an AllocationError when the reservation
// granted the bytes but libc could not provide them (calloc returned NULL).
var ErrOutOfMemory = errors.New("out of C memory")

// ErrAccountCharged is returned by the C Data Interface calls of an
// allocator that charges an operator's account (NewAccountAllocator): the
// account is not safe for concurrent use, and a C consumer frees on its
// own thread.
var ErrAccountCharged = errors.New("allocator charges an operator's account, whose buffers do not cross the C Data Interface")

// AllocationError is the refusal of an Allocate or Reallocate. arrow-go's
// memory.Allocator cannot return an error (apache/arrow#36186), so the
// allocator panics with a *AllocationError and Catch turns that panic back
// into this error at the operator's boundary, where the operator can spill
// and retry (the frostdb#464 and CockroachDB colexec pattern).
//
// Err is what the reservation returned: it matches pool.ErrResourcesExhausted
// for a refusal (with the pool's message, naming the pool and consumer),
// pool.ErrClosed after Close, or ErrOutOfMemory. Nothing was charged and no
// buffer was handed out or freed: the slice given to a refused Reallocate is
// still valid and still charged.
type AllocationError struct {
	// Op is "Allocate" or "Reallocate".
	Op string
	// Requested is the byte count asked for.
	Requested int64
	// Consumer is the reservation's consumer (name#id).
	Consumer string
	// Allocated is the allocator's live bytes when the request was refused.
	Allocated int64
	// Err is the cause; see the type's doc.
	Err error
}

// Error names the request, the consumer and the cause.
func (e *AllocationError) Error() string {
	return fmt.Sprintf("ffi: %s(%d) for %s with %d bytes allocated: %v",
		e.Op, e.Requested, e.Consumer, e.Allocated, e.Err)
}

// Unwrap returns the cause, so errors.Is(err, pool.ErrResourcesExhausted)
// holds for a refusal.
func (e *AllocationError) Unwrap() error { return e.Err }

// Exhausted reports whether the request was refused for lack of memory in
// the pool: the case where spilling and retrying can help.
func (e *AllocationError) Exhausted() bool { return errors.Is(e.Err, pool.ErrResourcesExhausted) }

// Catch runs fn and returns its error, or the *AllocationError that an
// allocator panicked with while fn ran (also when the panic value is an error
// that wraps one). Any other panic propagates unchanged. Use it at an
// operator's boundary, around the code that builds Arrow data:
//
//	err := ffi.Catch(func() error { return op.buildBatch() })
//	var ae *ffi.AllocationError
//	if errors.As(err, &ae) && ae.Exhausted() { op.spill(); /* retry */ }
//
// Code between the allocation and the boundary unwinds as for any panic:
// deferred Releases run, so buffers already built are freed.
func Catch(fn func() error) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if e, ok := r.(error); ok {
			var ae *AllocationError
			if errors.As(e, &ae) {
				err = e
				return
			}
		}
		panic(r)
	}()
	return fn()
}
