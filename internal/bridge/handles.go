package bridge

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Handle errors. An export maps ErrInvalidHandle to IllegalArgumentException
// and ErrStaleHandle to IllegalStateException (jni/API.md "Handles").
var (
	// ErrInvalidHandle is wrapped when a handle was never issued by the
	// table: zero, forged, or of another type (a reservation handle passed as
	// a pool).
	ErrInvalidHandle = errors.New("invalid handle")
	// ErrStaleHandle is wrapped when a handle was issued but has been closed
	// (its slot may since hold another object under a newer generation).
	ErrStaleHandle = errors.New("stale handle")
)

// HandleTag is the type tag in the top byte of a handle. Tags are non-zero,
// so no handle is ever 0 (Java's "no handle").
type HandleTag uint8

const (
	tagPool        HandleTag = 0x50 // 'P'
	tagReservation HandleTag = 0x52 // 'R'
	tagBatch       HandleTag = 0x42 // 'B': Arrow batches (arrow.go)
	tagTask        HandleTag = 0x54 // 'T': task pools, held by the task's owner (tasks.go)
)

// OwnTag reports whether tag is one of the bridge's own (pools,
// reservations, Arrow batches, tasks), which an engine's table must not use.
func OwnTag(tag HandleTag) bool {
	return tag == tagPool || tag == tagReservation || tag == tagBatch || tag == tagTask
}

// String names the tag by the handles it marks.
func (t HandleTag) String() string {
	switch t {
	case tagPool:
		return "pool"
	case tagReservation:
		return "reservation"
	case tagBatch:
		return "batch"
	case tagTask:
		return "task"
	default:
		return fmt.Sprintf("tag 0x%02x", uint8(t))
	}
}

// Handle layout, from the most significant bit:
//
//	63..56 tag (HandleTag, never 0)
//	55..32 slot index (24 bits: up to 16M live handles per table)
//	31..0  generation of the slot (starts at 1; 0 is never issued)
//
// A forged value passes only if its tag, slot and generation all match a
// live entry; a random 64-bit value does so with probability
// live/2^56. A closed handle keeps failing after its slot is reused, because
// the generation moved on.
const (
	slotBits  = 24
	genBits   = 32
	maxSlots  = 1 << slotBits
	pageBits  = 10
	pageSize  = 1 << pageBits
	maxPages  = maxSlots / pageSize
	maxGen    = 1<<genBits - 1
	slotShift = genBits
	tagShift  = genBits + slotBits
)

func makeHandle(tag HandleTag, slot uint32, gen uint32) int64 {
	return int64(uint64(tag)<<tagShift | uint64(slot)<<slotShift | uint64(gen))
}

func splitHandle(h int64) (tag HandleTag, slot uint32, gen uint32) {
	u := uint64(h)
	return HandleTag(u >> tagShift), uint32(u>>slotShift) & (maxSlots - 1), uint32(u)
}

// HandleTable maps 64-bit handles to values of one type. Lookups are
// lock-free (two atomic loads); Insert and Remove take a mutex. Freed slots
// are reused with a bumped generation, so a stale handle is told apart from
// a forged one and never reaches the slot's new occupant.
//
// A HandleTable is safe for concurrent use by multiple goroutines. It must
// not be copied after first use; build one with NewHandleTable (the zero
// value has no tag and issues nothing).
type HandleTable[T any] struct {
	tag HandleTag
	// pages holds the slots in fixed pages, allocated on demand under mu and
	// published with an atomic store, so lookups never see a moving slice.
	pages [maxPages]atomic.Pointer[handlePage[T]]

	// live counts the handles issued and not yet removed.
	live atomic.Int64

	mu struct {
		sync.Mutex
		next uint32   // slots [0, next) have been used at least once
		free []uint32 // slots free for reuse, LIFO
	}
}

type handlePage[T any] [pageSize]handleSlot[T]

type handleSlot[T any] struct {
	// cur is the live entry, or nil when the slot is free. Written under
	// HandleTable.mu; read without it.
	cur atomic.Pointer[handleEntry[T]]
	// gen is the generation most recently issued for this slot (0: never).
	// Written under HandleTable.mu; read without it on the error path.
	gen atomic.Uint32
}

type handleEntry[T any] struct {
	gen uint32
	val T
}

// NewHandleTable returns an empty table whose handles carry tag in their
// top byte. It panics if tag is 0.
func NewHandleTable[T any](tag HandleTag) *HandleTable[T] {
	if tag == 0 {
		panic("jni: NewHandleTable(0): the tag must be non-zero")
	}
	return &HandleTable[T]{tag: tag}
}

// Insert stores v and returns its new handle. It fails only when every slot
// is in use (16M live handles of this type); the table is then unchanged.
func (t *HandleTable[T]) Insert(v T) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		var slot uint32
		if n := len(t.mu.free); n > 0 {
			slot = t.mu.free[n-1]
			t.mu.free = t.mu.free[:n-1]
		} else if t.mu.next < maxSlots {
			slot = t.mu.next
			t.mu.next++
			if p := slot >> pageBits; t.pages[p].Load() == nil {
				t.pages[p].Store(new(handlePage[T]))
			}
		} else {
			return 0, fmt.Errorf("jni: %s handle table full (%d live handles)", t.tag, t.live.Load())
		}
		s := t.slot(slot)
		last := s.gen.Load()
		if last == maxGen {
			continue // this slot has used every generation: retire it for good
		}
		gen := last + 1
		s.gen.Store(gen)
		s.cur.Store(&handleEntry[T]{gen: gen, val: v})
		t.live.Add(1)
		return makeHandle(t.tag, slot, gen), nil
	}
}

// Get returns the value of a live handle. It returns an error wrapping
// ErrInvalidHandle for a handle this table never issued (zero, forged, wrong
// type) and ErrStaleHandle for a handle that has been removed.
func (t *HandleTable[T]) Get(h int64) (T, error) {
	tag, slot, gen := splitHandle(h)
	if tag == t.tag {
		if p := t.pages[slot>>pageBits].Load(); p != nil {
			if e := p[slot&(pageSize-1)].cur.Load(); e != nil && e.gen == gen {
				return e.val, nil
			}
		}
	}
	var zero T
	return zero, t.classify(h)
}

// Remove removes a live handle and returns its value, so that exactly one of
// several concurrent Removes of the same handle succeeds. The others, and
// any later Get, fail with ErrStaleHandle. Errors are those of Get.
func (t *HandleTable[T]) Remove(h int64) (T, error) {
	var zero T
	tag, slot, gen := splitHandle(h)
	if tag != t.tag || slot >= maxSlots {
		return zero, t.classify(h)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if slot >= t.mu.next {
		return zero, t.classify(h)
	}
	s := t.slot(slot)
	e := s.cur.Load()
	if e == nil || e.gen != gen {
		return zero, t.classify(h)
	}
	s.cur.Store(nil)
	t.mu.free = append(t.mu.free, slot)
	t.live.Add(-1)
	return e.val, nil
}

// Len is the number of live handles.
func (t *HandleTable[T]) Len() int { return int(t.live.Load()) }

// slot returns the slot at index i; its page must exist.
func (t *HandleTable[T]) slot(i uint32) *handleSlot[T] {
	return &t.pages[i>>pageBits].Load()[i&(pageSize-1)]
}

// classify explains why h is not a live handle of this table, in the words
// of jni's own natives (jni/API.md "Handles").
func (t *HandleTable[T]) classify(h int64) error {
	f, other := t.fault(h)
	switch f {
	case faultStale:
		return fmt.Errorf("nativepool: %s handle 0x%x is stale (closed; its slot was reused): %w", t.tag, uint64(h), ErrStaleHandle)
	case faultClosed:
		return fmt.Errorf("nativepool: %s handle 0x%x is closed: %w", t.tag, uint64(h), ErrStaleHandle)
	case faultNeverIssued:
		return fmt.Errorf("nativepool: invalid %s handle 0x%x: never issued: %w", t.tag, uint64(h), ErrInvalidHandle)
	}
	if other != "" {
		return fmt.Errorf("nativepool: invalid %s handle 0x%x: a %s handle: %w", t.tag, uint64(h), other, ErrInvalidHandle)
	}
	return fmt.Errorf("nativepool: invalid %s handle 0x%x: %w", t.tag, uint64(h), ErrInvalidHandle)
}

// handleFault is why a handle is not live in a table.
type handleFault int

const (
	faultInvalid     handleFault = iota // zero, or another table's tag
	faultNeverIssued                    // this table's tag, but no such slot or generation yet
	faultClosed                         // removed; its slot holds nothing newer
	faultStale                          // removed, and its slot was reused
)

// fault classifies a handle that Get or Remove did not find. For a handle
// of one of jni's own other tables it also names that table's type, so a
// reservation handle passed as a pool says so.
func (t *HandleTable[T]) fault(h int64) (f handleFault, other string) {
	tag, slot, gen := splitHandle(h)
	if h == 0 || tag != t.tag {
		if h != 0 && OwnTag(tag) {
			other = tag.String()
		}
		return faultInvalid, other
	}
	p := t.pages[slot>>pageBits].Load()
	if gen == 0 || p == nil {
		return faultNeverIssued, ""
	}
	switch issued := p[slot&(pageSize-1)].gen.Load(); {
	case gen > issued:
		return faultNeverIssued, ""
	case gen == issued:
		return faultClosed, ""
	default:
		return faultStale, ""
	}
}

// IsClosed reports whether h was issued by t and is closed now (also once
// its slot was reused): the handle was real, unlike a forged one.
func (t *HandleTable[T]) IsClosed(h int64) bool {
	f, _ := t.fault(h)
	return f == faultClosed || f == faultStale
}

// Values returns the live values, in slot order. It reads under the
// table's lock, so the caller may act on them (even Remove them) without
// holding anything.
func (t *HandleTable[T]) Values() []T {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []T
	for i := uint32(0); i < t.mu.next; i++ {
		if e := t.slot(i).cur.Load(); e != nil {
			out = append(out, e.val)
		}
	}
	return out
}
