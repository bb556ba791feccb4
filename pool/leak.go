package pool

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrLeaked is matched (errors.Is) by a *LeakError: a pool was closed while
// reservations still recorded bytes.
var ErrLeaked = errors.New("memory leaked")

// LeakedConsumer is one consumer's share of a leak.
type LeakedConsumer struct {
	Name  string // Consumer.Name
	ID    uint64 // Consumer.ID
	Bytes int64  // bytes its reservations still recorded at Close
}

// LeakError reports what was still reserved when a unified pool was closed.
// The pool has already released those bytes upstream when it returns the
// error, so the error is a report, not a request to act; reservations that
// later shrink are counted as late releases. It matches ErrLeaked.
//
// A LeakError is immutable once returned and safe to share; the zero
// LeakError reports an unnamed pool with nothing leaked.
type LeakError struct {
	// Pool is the pool's name as its logs show it, e.g. "fair_unified[task 42]".
	Pool string
	// Bytes is the total still reserved.
	Bytes int64
	// Consumers holds one entry per consumer with bytes, largest first
	// (ties by ID).
	Consumers []LeakedConsumer
}

// Error names the pool, the total and every consumer with its bytes, e.g.
// "pool fair_unified[task 42] closed with 1536 bytes still reserved: sort#3 holds 1024 bytes, agg#4 holds 512 bytes".
func (e *LeakError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pool %s closed with %d bytes still reserved", e.Pool, e.Bytes)
	for i, c := range e.Consumers {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s#%d holds %d bytes", c.Name, c.ID, c.Bytes)
	}
	return b.String()
}

// Is reports whether target is ErrLeaked.
func (e *LeakError) Is(target error) bool { return target == ErrLeaked }

// sort orders the consumers largest first, ties by ID.
func (e *LeakError) sort() {
	slices.SortFunc(e.Consumers, func(a, b LeakedConsumer) int {
		if c := cmp.Compare(b.Bytes, a.Bytes); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}
