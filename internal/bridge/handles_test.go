package bridge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
)

func TestHandleIsNeverZeroAndCarriesItsTag(t *testing.T) {
	pools := NewHandleTable[string](tagPool)
	res := NewHandleTable[string](tagReservation)
	for i := range 3000 { // crosses page boundaries
		h, err := pools.Insert(fmt.Sprint(i))
		require.NoError(t, err)
		require.NotZero(t, h)
		tag, slot, gen := splitHandle(h)
		require.Equal(t, tagPool, tag)
		require.Equal(t, uint32(i), slot)
		require.Equal(t, uint32(1), gen)
		v, err := pools.Get(h)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint(i), v)
	}
	h, err := res.Insert("r")
	require.NoError(t, err)
	tag, _, _ := splitHandle(h)
	require.Equal(t, tagReservation, tag)
	require.Equal(t, 3000, pools.Len())
	require.Equal(t, 1, res.Len())
}

func TestHandleErrorsAreClassifiedWithWholeMessages(t *testing.T) {
	pools := NewHandleTable[string](tagPool)
	res := NewHandleTable[string](tagReservation)
	p, err := pools.Insert("p")
	require.NoError(t, err)
	r, err := res.Insert("r")
	require.NoError(t, err)
	closed, err := pools.Insert("closed")
	require.NoError(t, err)
	_, err = pools.Remove(closed)
	require.NoError(t, err)

	reused, err := pools.Insert("reused") // takes closed's slot with generation 2
	require.NoError(t, err)
	_, slotClosed, _ := splitHandle(closed)
	_, slotReused, genReused := splitHandle(reused)
	require.Equal(t, slotClosed, slotReused)
	require.Equal(t, uint32(2), genReused)

	for _, tc := range []struct {
		name    string
		h       int64
		want    string
		invalid bool // else stale
	}{
		{"zero", 0, "nativepool: invalid pool handle 0x0: invalid handle", true},
		{"wrong type", r, fmt.Sprintf("nativepool: invalid pool handle 0x%x: a reservation handle: invalid handle", uint64(r)), true},
		{"unknown tag", 0x1234, "nativepool: invalid pool handle 0x1234: invalid handle", true},
		{"negative", -1, "nativepool: invalid pool handle 0xffffffffffffffff: invalid handle", true},
		{"generation zero", makeHandle(tagPool, 0, 0), "nativepool: invalid pool handle 0x5000000000000000: never issued: invalid handle", true},
		{"future generation", p + 1, "nativepool: invalid pool handle 0x5000000000000002: never issued: invalid handle", true},
		{"slot never used", makeHandle(tagPool, 7, 1), "nativepool: invalid pool handle 0x5000000700000001: never issued: invalid handle", true},
		{"page never allocated", makeHandle(tagPool, maxSlots-1, 1), "nativepool: invalid pool handle 0x50ffffff00000001: never issued: invalid handle", true},
		{"closed then reused", closed, fmt.Sprintf("nativepool: pool handle 0x%x is stale (closed; its slot was reused): stale handle", uint64(closed)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pools.Get(tc.h)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.Equal(t, tc.invalid, isInvalidHandle(err))
			assert.Equal(t, !tc.invalid, isStaleHandle(err))
			_, err = pools.Remove(tc.h)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}

	_, err = pools.Remove(reused)
	require.NoError(t, err)
	_, err = pools.Get(reused)
	assert.Equal(t, fmt.Sprintf("nativepool: pool handle 0x%x is closed: stale handle", uint64(reused)), err.Error())
	_, err = pools.Remove(reused)
	assert.Equal(t, fmt.Sprintf("nativepool: pool handle 0x%x is closed: stale handle", uint64(reused)), err.Error(),
		"a second remove of the same handle is a stale-handle error")

	v, err := pools.Get(p)
	require.NoError(t, err, "other handles are untouched")
	assert.Equal(t, "p", v)
}

func TestHandleStaleNeverReachesTheSlotsNewOccupant(t *testing.T) {
	tab := NewHandleTable[int](tagReservation)
	old, err := tab.Insert(1)
	require.NoError(t, err)
	for i := 2; i < 50; i++ {
		_, err := tab.Remove(old)
		require.NoError(t, err)
		h, err := tab.Insert(i)
		require.NoError(t, err)
		_, oldSlot, _ := splitHandle(old)
		_, slot, _ := splitHandle(h)
		require.Equal(t, oldSlot, slot, "LIFO reuse")
		_, err = tab.Get(old)
		require.True(t, isStaleHandle(err), "%v", err)
		v, err := tab.Get(h)
		require.NoError(t, err)
		require.Equal(t, i, v)
		old = h
	}
}

func TestHandleSlotIsRetiredAfterItsLastGeneration(t *testing.T) {
	tab := NewHandleTable[int](tagPool)
	h, err := tab.Insert(1)
	require.NoError(t, err)
	_, slot, _ := splitHandle(h)
	// Fast-forward the slot to its last generation.
	tab.slot(slot).gen.Store(maxGen - 1)
	tab.slot(slot).cur.Store(&handleEntry[int]{gen: maxGen - 1, val: 1})
	h = makeHandle(tagPool, slot, maxGen-1)
	_, err = tab.Remove(h)
	require.NoError(t, err)
	last, err := tab.Insert(2)
	require.NoError(t, err)
	_, s, g := splitHandle(last)
	require.Equal(t, slot, s)
	require.Equal(t, uint32(maxGen), g)
	_, err = tab.Remove(last)
	require.NoError(t, err)
	next, err := tab.Insert(3)
	require.NoError(t, err)
	_, s, g = splitHandle(next)
	require.NotEqual(t, slot, s, "an exhausted slot is never reused")
	require.Equal(t, uint32(1), g)
	_, err = tab.Get(last)
	require.True(t, isStaleHandle(err), "%v", err)
}

// TestHandleRandomForgedValuesAreRejected checks that random 64-bit values
// (and random values carrying the right tag) are never accepted unless they
// equal a live handle, and never panic. The seed is logged; rerun with it to
// reproduce.
func TestHandleRandomForgedValuesAreRejected(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	tab := NewHandleTable[int](tagPool)
	live := map[int64]int{}
	for i := range 2500 {
		h, err := tab.Insert(i)
		require.NoError(t, err)
		live[h] = i
		if i%3 == 0 {
			_, err := tab.Remove(h)
			require.NoError(t, err)
			delete(live, h)
		}
	}
	for i := range 200_000 {
		var h int64
		switch i % 3 {
		case 0:
			h = int64(rng.Uint64())
		case 1: // right tag, random rest
			h = int64(uint64(tagPool)<<tagShift | rng.Uint64()&(1<<tagShift-1))
		default: // right tag, a used slot, small generation
			h = makeHandle(tagPool, uint32(rng.IntN(2600)), uint32(rng.IntN(4)))
		}
		v, err := tab.Get(h)
		if want, ok := live[h]; ok {
			require.NoError(t, err)
			require.Equal(t, want, v)
			continue
		}
		require.Error(t, err, "forged handle 0x%x accepted", uint64(h))
		require.True(t, isInvalidHandle(err) || isStaleHandle(err), "%v", err)
	}
}

// TestHandleConcurrentInsertGetRemove hammers one table from several
// goroutines; each goroutine checks that its own handles resolve to its own
// values until removed and are stale afterwards, and that a double remove
// fails. Run with -race. Returning before the deadline means no deadlock.
func TestHandleConcurrentInsertGetRemove(t *testing.T) {
	tab := NewHandleTable[[2]int](tagReservation)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, ctx := errgroup.WithContext(ctx)
	const workers, rounds = 6, 3000
	var removedTwice sync.Map
	for w := range workers {
		g.Go(func() error {
			var mine []int64
			for i := range rounds {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				h, err := tab.Insert([2]int{w, i})
				if err != nil {
					return err
				}
				mine = append(mine, h)
				for _, x := range mine[max(0, len(mine)-4):] {
					v, err := tab.Get(x)
					if err != nil {
						return fmt.Errorf("live handle 0x%x: %w", uint64(x), err)
					}
					if v[0] != w {
						return fmt.Errorf("handle 0x%x resolved to another goroutine's value %v", uint64(x), v)
					}
				}
				if i%2 == 1 {
					x := mine[0]
					mine = mine[1:]
					if _, err := tab.Remove(x); err != nil {
						return err
					}
					if _, err := tab.Remove(x); !isStaleHandle(err) {
						return fmt.Errorf("second remove of 0x%x: %v", uint64(x), err)
					}
					if _, err := tab.Get(x); !isStaleHandle(err) {
						return fmt.Errorf("get after remove of 0x%x: %v", uint64(x), err)
					}
					removedTwice.Store(x, true)
				}
			}
			for _, x := range mine {
				if _, err := tab.Remove(x); err != nil {
					return err
				}
			}
			return nil
		})
	}
	// Concurrent removes of the same handles: exactly one wins each.
	hs := make([]int64, 200)
	for i := range hs {
		var err error
		hs[i], err = tab.Insert([2]int{-1, i})
		require.NoError(t, err)
	}
	var wins sync.Map
	for range 2 {
		g.Go(func() error {
			for _, h := range hs {
				if _, err := tab.Remove(h); err == nil {
					if _, dup := wins.LoadOrStore(h, true); dup {
						return fmt.Errorf("handle 0x%x removed twice", uint64(h))
					}
				} else if !isStaleHandle(err) {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	n := 0
	wins.Range(func(any, any) bool { n++; return true })
	require.Equal(t, len(hs), n)
	require.Equal(t, 0, tab.Len())
}
