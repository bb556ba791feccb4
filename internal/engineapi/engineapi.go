package engineapi

import (
	"errors"
	"fmt"

	"github.com/nativepool/nativepool/internal/bridge"
	"github.com/nativepool/nativepool/taskshared"
)

// Errors an engine's native method wraps to choose the Java exception its
// EngineCall.End throws. Without them a plain error becomes
// RuntimeException; pool.ErrInvalidSize still becomes
// IllegalArgumentException and pool.ErrClosed IllegalStateException, as for
// the natives of the bridge (jni/API.md).
var (
	// ErrIllegalArgument: java.lang.IllegalArgumentException (a bad handle,
	// size or argument from Java).
	ErrIllegalArgument = errors.New("illegal argument")
	// ErrIllegalState: java.lang.IllegalStateException (a closed handle, a
	// call in the wrong phase).
	ErrIllegalState = errors.New("illegal state")
)

// JoinTaskPool returns a new reference to the pool of task taskAttemptID
// in b (jni.JoinTaskPool on the process's Bridge, which documents it). It
// fails with an error wrapping ErrIllegalState if the task has no open
// pool; nothing is then created.
func JoinTaskPool(b *bridge.Bridge, taskAttemptID int64) (*taskshared.Handle, error) {
	h, err := b.JoinTaskPool(taskAttemptID)
	if err != nil {
		return nil, fmt.Errorf("jni: %w: %w", err, ErrIllegalState)
	}
	return h, nil
}

// BridgeError maps the engine sentinels onto the errors bridge.Classify
// knows, keeping err's text and everything it wraps (a
// *bridge.JavaException inside err still wins): settle the result with
// bridge.Settle. A nil err stays nil.
func BridgeError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrIllegalArgument):
		return classifiedError{err: err, as: bridge.ErrInvalidArgument}
	case errors.Is(err, ErrIllegalState):
		return classifiedError{err: err, as: bridge.ErrStaleHandle}
	default:
		return err
	}
}

// classifiedError is err, also matching as for errors.Is.
type classifiedError struct{ err, as error }

func (c classifiedError) Error() string   { return c.err.Error() }
func (c classifiedError) Unwrap() []error { return []error{c.err, c.as} }

// HandleTable gives an engine's own objects (a sorter, an operator) the
// 64-bit handles that jni's natives use for pools and reservations: a type
// tag, a slot and the slot's generation, checked on every lookup, so a
// zero, forged or other type's handle is an error wrapping
// ErrIllegalArgument, a closed one (even after its slot was reused) an error
// wrapping ErrIllegalState, and neither ever reaches another object.
// Lookups are lock-free. A HandleTable is safe for concurrent use; build one
// with NewHandleTable (the zero value is not usable).
type HandleTable[T any] struct {
	t      *bridge.HandleTable[T]
	prefix string // the engine's name, first in every error ("nativesort")
	name   string // what the handles name ("sorter")
}

// NewHandleTable returns an empty table whose handles carry tag in their
// top byte. Errors read "<prefix>: invalid <name> handle 0x…" and
// "<prefix>: <name> handle 0x… is closed". It panics if tag is 0 or one of
// jni's own tags ('P' pools, 'R' reservations, 'B' Arrow batches, 'T'
// tasks).
func NewHandleTable[T any](tag byte, prefix, name string) *HandleTable[T] {
	if bridge.OwnTag(bridge.HandleTag(tag)) {
		panic(fmt.Sprintf("jni: NewHandleTable(tag 0x%02x): the tag is jni's own (%s)", tag, bridge.HandleTag(tag)))
	}
	return &HandleTable[T]{t: bridge.NewHandleTable[T](bridge.HandleTag(tag)), prefix: prefix, name: name}
}

// Insert stores v and returns its new handle. It fails only when 16M
// handles of the table are live; the table is then unchanged.
func (h *HandleTable[T]) Insert(v T) (int64, error) { return h.t.Insert(v) }

// Get returns the value of a live handle; see HandleTable for the errors.
func (h *HandleTable[T]) Get(handle int64) (T, error) {
	v, err := h.t.Get(handle)
	return v, h.explain(handle, err)
}

// Remove removes a live handle and returns its value; exactly one of several
// concurrent Removes of one handle succeeds, the others fail as for a
// closed handle.
func (h *HandleTable[T]) Remove(handle int64) (T, error) {
	v, err := h.t.Remove(handle)
	return v, h.explain(handle, err)
}

// Each calls fn for every live value, in slot order, from a snapshot taken
// under the table's lock: fn may call back into the table (even Remove).
func (h *HandleTable[T]) Each(fn func(T)) {
	for _, v := range h.t.Values() {
		fn(v)
	}
}

// Len is the number of live handles.
func (h *HandleTable[T]) Len() int { return h.t.Len() }

// explain rewrites a lookup failure in the engine's words.
func (h *HandleTable[T]) explain(handle int64, err error) error {
	if err == nil {
		return nil
	}
	if h.t.IsClosed(handle) {
		return fmt.Errorf("%s: %s handle 0x%x is closed: %w", h.prefix, h.name, uint64(handle), ErrIllegalState)
	}
	return fmt.Errorf("%s: invalid %s handle 0x%x: %w", h.prefix, h.name, uint64(handle), ErrIllegalArgument)
}
