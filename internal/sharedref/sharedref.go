package sharedref

import "sync/atomic"

// Ref guards one reference that upcalls use while its owner may close it
// concurrently: a reclaim snapshots its spill candidates and may call a
// spiller whose reservation was closed a moment ago, and a grow may still
// be acquiring when the last pool handle closes. Each upcall brackets its
// use with Use and Done; Close marks the reference closed, and it is
// deleted exactly once, by whichever of Close or the last Done comes last.
// No lock is held across the upcall (an upcall may block in Spark and
// re-enter Go on the same thread, even to close this very Ref).
//
// A Ref is safe for concurrent use. The zero value and a nil *Ref hold no
// reference and are closed for use; build one with New.
type Ref struct {
	ref uintptr
	// state is users<<1 | closedBit.
	state atomic.Int64
	// deleted makes the delete happen once.
	deleted atomic.Bool
	// deleteRef deletes the reference; it runs on the goroutine that
	// brought the Ref to closed-and-unused.
	deleteRef func(uintptr)
}

const closedBit = 1

// New returns an open Ref to ref, which deleteRef deletes once the Ref is
// closed and no longer in use. deleteRef may be nil (nothing to delete).
func New(ref uintptr, deleteRef func(uintptr)) *Ref {
	return &Ref{ref: ref, deleteRef: deleteRef}
}

// Use returns the reference for one upcall and true, or false once the Ref
// is closed (or was never set). Every true must be paired with Done.
func (s *Ref) Use() (uintptr, bool) {
	if s == nil || s.ref == 0 {
		return 0, false
	}
	for {
		st := s.state.Load()
		if st&closedBit != 0 {
			return 0, false
		}
		if s.state.CompareAndSwap(st, st+2) {
			return s.ref, true
		}
	}
}

// Done ends one use; the last use after Close deletes the reference.
func (s *Ref) Done() {
	if st := s.state.Add(-2); st == closedBit {
		s.delete()
	}
}

// Close forbids new uses and deletes the reference once the uses in flight
// are done. A second Close, or a Close of a nil Ref, is a no-op.
func (s *Ref) Close() {
	if s == nil {
		return
	}
	for {
		st := s.state.Load()
		if st&closedBit != 0 {
			return
		}
		if s.state.CompareAndSwap(st, st|closedBit) {
			if st == 0 {
				s.delete()
			}
			return
		}
	}
}

func (s *Ref) delete() {
	if s.ref != 0 && !s.deleted.Swap(true) && s.deleteRef != nil {
		s.deleteRef(s.ref)
	}
}
