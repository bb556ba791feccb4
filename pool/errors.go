package pool

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match them with errors.Is; every decorator in this
// package wraps, never replaces, the error it adds context to.
var (
	// ErrResourcesExhausted is wrapped by every refusal of a TryGrow: the
	// pool (or its upstream) has no room for the request. The caller should
	// spill and retry, or fail the operation.
	ErrResourcesExhausted = errors.New("resources exhausted")
	// ErrInvalidSize is wrapped when a size is negative or a shrink exceeds
	// what is reserved: a caller bug, reported without changing anything.
	ErrInvalidSize = errors.New("invalid size")
	// ErrClosed is wrapped when a closed reservation or pool is used.
	ErrClosed = errors.New("closed")
	// ErrReclaimReentered is wrapped by Unified.ReclaimReporting when a
	// reclaim of the pool is already running on the calling goroutine (a
	// Spiller grew its own pool and upstream spilled the pool again): the
	// nested call did nothing and returned 0. It is not a failure; a
	// caller hands 0 on, as for a pool with nothing to give.
	ErrReclaimReentered = errors.New("reclaim re-entered during its own spill")
)

// ExhaustedError is a refusal: it matches ErrResourcesExhausted and prints
// as DataFusion's ResourcesExhausted does ("Resources exhausted: " + Msg).
// Decorators that add context build a new ExhaustedError whose Err is the
// inner refusal, so errors.Is and errors.As see both.
type ExhaustedError struct {
	// Msg is the message without the "Resources exhausted: " prefix.
	Msg string
	// Err is the refusal this one decorates, or nil.
	Err error
}

// Error renders the refusal in DataFusion's words.
func (e *ExhaustedError) Error() string { return "Resources exhausted: " + e.Msg }

// Is reports whether target is ErrResourcesExhausted.
func (e *ExhaustedError) Is(target error) bool { return target == ErrResourcesExhausted }

// Unwrap returns the decorated refusal, if any.
func (e *ExhaustedError) Unwrap() error { return e.Err }

// insufficientCapacity builds the refusal every finite pool in this package
// returns, in DataFusion's exact wording. It reports n (the request), the
// reservation's size before the request, the bytes still available to this
// reservation as the pool computed them, and the pool's String form.
func insufficientCapacity(r *Reservation, n, available int64, p Pool) error {
	return &ExhaustedError{Msg: fmt.Sprintf(
		"Failed to allocate additional %s for %s with %s already allocated for this reservation - %s remain available for the total memory pool: %s",
		HumanReadableSize(n), r.Consumer().Name(), HumanReadableSize(r.Size()),
		HumanReadableSize(available), p)}
}
