package jni

import "sync/atomic"

// sharedRef guards a JVM global ref (an upstream or a spiller) that
// upcalls use while its owner may close it concurrently: Reclaim snapshots
// its spill candidates and may call a spiller whose reservation was closed a
// moment ago, and a Grow may still be acquiring when the last pool handle
// closes. Each upcall brackets its use with use/done; close marks the ref
// closed, and the ref is deleted exactly once, by whichever of close or the
// last done comes last. No lock is held across the upcall (an upcall may
// block in Spark and re-enter Go on the same thread, even to close this
// very ref).
//
// A sharedRef is safe for concurrent use. The zero value holds no ref and is
// closed for use; build one with newSharedRef.
type sharedRef struct {
	ref uintptr
	// state is users<<1 | closedBit.
	state atomic.Int64
	// deleted makes the delete happen once.
	deleted atomic.Bool
	// deleteRef deletes the global ref; it runs on the goroutine that
	// brought the ref to closed-and-unused.
	deleteRef func(uintptr)
}

const closedBit = 1

func newSharedRef(ref uintptr, deleteRef func(uintptr)) *sharedRef {
	return &sharedRef{ref: ref, deleteRef: deleteRef}
}

// use returns the ref for one upcall and true, or false once the ref is
// closed (or was never set). Every true must be paired with done.
func (s *sharedRef) use() (uintptr, bool) {
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

// done ends one use; the last use after close deletes the ref.
func (s *sharedRef) done() {
	if st := s.state.Add(-2); st == closedBit {
		s.delete()
	}
}

// close forbids new uses and deletes the ref once the uses in flight are
// done. A second close is a no-op.
func (s *sharedRef) close() {
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

func (s *sharedRef) delete() {
	if s.ref != 0 && !s.deleted.Swap(true) && s.deleteRef != nil {
		s.deleteRef(s.ref)
	}
}
