package main

import (
	"fmt"
	"math"
	"sync"

	"github.com/nativepool/nativepool/jni"
)

// handleTag is the top byte of every sorter handle ('S'), so a pool or
// reservation handle of package jni (tags 'P' and 'R') passed by mistake is
// told apart, and no handle is ever 0 (Java's "no handle").
const handleTag = 0x53

// handleTable maps 64-bit handles to sorters: tag (8 bits), slot (24 bits),
// generation (32 bits). A slot is reused with the next generation, so a
// closed handle stays stale forever and never reaches the slot's next
// occupant; a forged one is rejected. It is jni's handle table in miniature
// (that one is private to its package): a mutex instead of lock-free
// lookups, because a sorter is looked up once per Arrow batch, not once per
// byte reserved.
//
// A handleTable is safe for concurrent use. The zero value is empty and
// ready to use.
type handleTable[T any] struct {
	mu    sync.Mutex
	slots []handleSlot[T]
	free  []uint32
	live  int
}

type handleSlot[T any] struct {
	gen  uint32 // generation last issued (0: never)
	val  T
	used bool
}

const maxHandleSlots = 1 << 24

func (t *handleTable[T]) insert(v T) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var slot uint32
	if n := len(t.free); n > 0 {
		slot, t.free = t.free[n-1], t.free[:n-1]
	} else {
		if len(t.slots) == maxHandleSlots {
			return 0, fmt.Errorf("nativesort: %d sorters open, the handle table is full", t.live)
		}
		slot = uint32(len(t.slots))
		t.slots = append(t.slots, handleSlot[T]{})
	}
	s := &t.slots[slot]
	s.gen++
	s.val, s.used = v, true
	t.live++
	return int64(uint64(handleTag)<<56 | uint64(slot)<<32 | uint64(s.gen)), nil
}

// get returns the value of a live handle; an error wrapping
// jni.ErrIllegalArgument for a handle never issued (zero, forged, another
// table's) and jni.ErrIllegalState for a closed one.
func (t *handleTable[T]) get(h int64) (T, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, err := t.lookupLocked(h)
	if err != nil {
		var zero T
		return zero, err
	}
	return s.val, nil
}

// remove removes a live handle and returns its value; exactly one of
// several concurrent removes of one handle succeeds. Errors are get's.
func (t *handleTable[T]) remove(h int64) (T, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var zero T
	s, err := t.lookupLocked(h)
	if err != nil {
		return zero, err
	}
	v := s.val
	s.val, s.used = zero, false
	if s.gen < math.MaxUint32 { // a slot that used every generation is retired
		t.free = append(t.free, uint32(uint64(h)>>32)&(maxHandleSlots-1))
	}
	t.live--
	return v, nil
}

// each calls fn for every live value, under the table's lock: fn must not
// call back into the table.
func (t *handleTable[T]) each(fn func(T)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.slots {
		if t.slots[i].used {
			fn(t.slots[i].val)
		}
	}
}

// len is the number of live handles.
func (t *handleTable[T]) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.live
}

func (t *handleTable[T]) lookupLocked(h int64) (*handleSlot[T], error) {
	u := uint64(h)
	tag, slot, gen := u>>56, uint32(u>>32)&(maxHandleSlots-1), uint32(u)
	if tag != handleTag || gen == 0 || int(slot) >= len(t.slots) || gen > t.slots[slot].gen {
		return nil, fmt.Errorf("nativesort: invalid sorter handle 0x%x: %w", u, jni.ErrIllegalArgument)
	}
	s := &t.slots[slot]
	if !s.used || s.gen != gen {
		return nil, fmt.Errorf("nativesort: sorter handle 0x%x is closed: %w", u, jni.ErrIllegalState)
	}
	return s, nil
}
