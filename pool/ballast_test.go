package pool_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/fakeupstream"
	"github.com/nativepool/nativepool/pool"
)

// spillAll returns a Spiller that frees everything its reservation holds.
func spillAll(r **pool.Reservation) pool.Spiller {
	return pool.SpillerFunc(func(int64) (int64, error) {
		return (*r).Free(), nil
	})
}

// The bytes a spill frees for ballast stay held from upstream, so upstream
// cannot hand them to its other consumers; they are not slack either (a
// trim never hands them back). The pool's own consumers may spend them on
// an admitted grow without asking upstream. ReleaseBallast hands the rest
// back.
func TestUnifiedReclaimToBallastKeepsTheFreedBytesFromUpstream(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New()
			p := unified(t, kind, up, 1<<30, pool.WithChunkSize(1<<20))
			var sorter *pool.Reservation
			sorter = pool.NewConsumer("sorter").WithSpiller(spillAll(&sorter)).Register(p)
			require.NoError(t, sorter.TryGrow(10<<20))
			held := up.Held()

			moved, spills, err := p.ReclaimToBallast(4 << 20)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, moved, int64(4<<20))
			require.Len(t, spills, 1, "one consumer spilled")
			assert.Contains(t, spills[0].Consumer, "sorter")
			assert.Positive(t, spills[0].Bytes)
			assert.Equal(t, int64(0), sorter.Size(), "the sorter spilled")
			assert.Equal(t, held, up.Held(), "upstream kept counting the bytes for the pool")
			s := p.Stats()
			assert.Equal(t, moved, s.Ballast)
			assert.Equal(t, int64(0), s.Slack, "ballast is not slack")
			assert.Equal(t, moved, s.BallastedBytes)

			other := pool.NewConsumer("other").Register(p)
			asks := len(up.Asks())
			require.NoError(t, other.TryGrow(1<<20))
			assert.Len(t, up.Asks(), asks, "the grow spent ballast: upstream never heard of it")
			assert.Equal(t, held, up.Held())
			assert.Equal(t, moved-1<<20, p.Stats().Ballast)

			released, err := p.ReleaseBallast(-1)
			require.NoError(t, err)
			assert.Equal(t, moved-1<<20, released)
			assert.Equal(t, int64(0), p.Stats().Ballast)
			other.Close()
			sorter.Close()
			require.NoError(t, p.Close())
			assert.Equal(t, int64(0), up.Held())
		})
	}
}

// An idle pool holds nothing: when its last consumer leaves, the ballast
// goes back upstream with the slack. Close does the same for a pool closed
// with ballast.
func TestUnifiedBallastGoesBackWhenThePoolIsIdleOrClosed(t *testing.T) {
	up := fakeupstream.New()
	p := unified(t, "greedy", up, 0, pool.WithChunkSize(1<<20))
	var r *pool.Reservation
	r = pool.NewConsumer("op").WithSpiller(spillAll(&r)).Register(p)
	require.NoError(t, r.TryGrow(3<<20))
	_, _, err := p.ReclaimToBallast(1)
	require.NoError(t, err)
	require.Positive(t, p.Stats().Ballast)
	r.Close()
	assert.Equal(t, int64(0), up.Held(), "the last consumer left")
	assert.Equal(t, int64(0), p.Stats().Ballast)

	r = pool.NewConsumer("op2").WithSpiller(spillAll(&r)).Register(p)
	require.NoError(t, r.TryGrow(3<<20))
	_, _, err = p.ReclaimToBallast(1)
	require.NoError(t, err)
	keep := pool.NewConsumer("keep").Register(p)
	defer keep.Close()
	require.NoError(t, p.Close())
	assert.Equal(t, int64(0), up.Held(), "Close returns the ballast with everything")
}

// A Reclaim asked by upstream (Spark spilling the pool for another consumer
// of the same task) hands the ballast back first, before any consumer
// spills: it is memory nobody uses, and held back it could leave that
// consumer with nothing to run on.
func TestAReclaimAskedByUpstreamHandsTheBallastBackFirst(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New()
			p := unified(t, kind, up, 1<<30, pool.WithChunkSize(1<<20))
			var sorter, agg *pool.Reservation
			sorter = pool.NewConsumer("sorter").WithSpiller(spillAll(&sorter)).Register(p)
			agg = pool.NewConsumer("agg").WithSpiller(spillAll(&agg)).Register(p)
			require.NoError(t, sorter.TryGrow(6<<20))
			require.NoError(t, agg.TryGrow(2<<20))
			moved, _, err := p.ReclaimToBallast(6 << 20)
			require.NoError(t, err)
			require.GreaterOrEqual(t, moved, int64(6<<20))
			require.Equal(t, int64(2<<20), agg.Size(), "the guard's spill took the largest")
			held := up.Held()

			freed, err := p.Reclaim(1 << 20)
			require.NoError(t, err)
			assert.Equal(t, moved, freed, "the ballast went back, and it was enough")
			assert.Equal(t, int64(2<<20), agg.Size(), "nobody spilled for it")
			assert.Equal(t, held-moved, up.Held())
			assert.Zero(t, p.Stats().Ballast)
			agg.Close()
			sorter.Close()
			require.NoError(t, p.Close())
		})
	}
}

// denyAll is an Admission that refuses every borrow, saying why.
type denyAll struct{ calls int }

func (d *denyAll) Admit(n int64) error {
	d.calls++
	return errors.New("the pod guard keeps 32.0 MiB of headroom")
}

// The process-wide Admission is asked only for what a TryGrow borrows from
// upstream: its refusal fails the TryGrow with ErrResourcesExhausted naming
// the reason, and upstream never hears of the request. A grow the slack
// covers and Grow (which cannot fail) never ask it.
func TestUnifiedAdmissionIsAskedOnlyForWhatATryGrowBorrows(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New()
			deny := &denyAll{}
			p := unified(t, kind, up, 1<<30, pool.WithChunkSize(1<<20), pool.WithAdmission(deny))
			sorter := pool.NewConsumer("sorter").WithCanSpill(true).Register(p)
			fixed := pool.NewConsumer("arrow-java").Register(p)
			defer sorter.Close()
			defer fixed.Close()

			err := sorter.TryGrow(4 << 20)
			require.ErrorIs(t, err, pool.ErrResourcesExhausted)
			assert.Contains(t, err.Error(), "Failed to acquire 4194304 bytes for sorter")
			assert.Contains(t, err.Error(), "the pod guard keeps 32.0 MiB of headroom")
			assert.Empty(t, up.Asks(), "upstream never heard of it")
			assert.Equal(t, int64(1), p.Stats().AdmissionRefusals)
			assert.Equal(t, int64(0), sorter.Size())
			require.ErrorIs(t, fixed.TryGrow(1), pool.ErrResourcesExhausted)

			sorter.Grow(1<<20 - 10) // Grow cannot fail; it borrows a whole chunk, 10 bytes of slack
			assert.Equal(t, int64(1<<20-10), sorter.Size())
			calls := deny.calls
			require.NoError(t, sorter.TryGrow(10), "covered by slack: no borrow, no question")
			assert.Equal(t, calls, deny.calls)
			requireUnifiedInvariants(t, p, up.Held(), 1<<20, sorter, fixed)
			assert.Equal(t, int64(2), p.Stats().AdmissionRefusals)
		})
	}
}

// waitingAdmission answers Admit as a guard whose wait ran out (it lets the
// borrow through) and AdmitNow with no room; it counts both.
type waitingAdmission struct{ admits, nows int }

func (w *waitingAdmission) Admit(int64) error { w.admits++; return nil }

func (w *waitingAdmission) AdmitNow(n int64) error {
	w.nows++
	return errors.New("no room for it now")
}

// A TryGrow inside WithoutWaiting is put to an ImmediateAdmission's
// AdmitNow instead of Admit: refused, it fails with ErrResourcesExhausted
// and upstream never hears of it. Outside, and once WithoutWaiting has
// returned, Admit is asked. A grow the slack covers asks neither, and an
// Admission without AdmitNow is asked Admit either way.
func TestUnifiedOptionalGrowIsAskedWithoutWaiting(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		t.Run(kind, func(t *testing.T) {
			up := fakeupstream.New()
			adm := &waitingAdmission{}
			p := unified(t, kind, up, 1<<30, pool.WithChunkSize(1<<20), pool.WithAdmission(adm))
			merge := pool.NewConsumer("merge").Register(p)
			defer merge.Close()

			err := merge.WithoutWaiting(func() error { return merge.TryGrow(4 << 20) })
			require.ErrorIs(t, err, pool.ErrResourcesExhausted)
			assert.Contains(t, err.Error(), "no room for it now")
			assert.Equal(t, 1, adm.nows)
			assert.Zero(t, adm.admits)
			assert.Empty(t, up.Asks(), "upstream never heard of it")
			assert.Zero(t, merge.Size())
			assert.Equal(t, int64(1), p.Stats().AdmissionRefusals)

			require.NoError(t, merge.TryGrow(1<<20-10), "outside: Admit lets it through")
			assert.Equal(t, 1, adm.admits)
			require.NoError(t, merge.WithoutWaiting(func() error { return merge.TryGrow(10) }),
				"covered by slack: no borrow, no question")
			assert.Equal(t, 1, adm.nows)
			requireUnifiedInvariants(t, p, up.Held(), 1<<20, merge)

			plain := &denyAll{}
			q := unified(t, kind, fakeupstream.New(), 1<<30, pool.WithAdmission(plain))
			r := pool.NewConsumer("merge").Register(q)
			defer r.Close()
			require.ErrorIs(t, r.WithoutWaiting(func() error { return r.TryGrow(1) }), pool.ErrResourcesExhausted)
			assert.Equal(t, 1, plain.calls, "an Admission without AdmitNow is asked Admit")
		})
	}
}
