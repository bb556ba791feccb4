package bridge

import (
	"sync"
	"sync/atomic"
)

// callGate counts the Bridge calls in flight on one task pool, so that the
// pool's close waits for them instead of closing under them. Closing under
// a call breaks both sides' accounting: a tryGrow0 waiting in Spark's 1/2N
// wait has already booked its bytes in the pool's books, so the
// close would report them as leaked though they were never granted, and the
// grant Spark hands out afterwards could not go back, because the upstream's
// global ref is closed with the pool: Spark would hold bytes Go no longer
// counts until the task ends.
//
// Calls are of two kinds:
//
//   - acquiring calls (tryGrow0, grow0, newReservation0, reclaim0,
//     reclaimTask0) may wait
//     in Spark; they are refused once the close has begun (enterAcquire
//     returns false), so the close cannot be starved;
//   - releasing calls (shrink0, closeReservation0) never wait in
//     Spark; they are admitted and counted while the close waits, so that
//     their releases reach Spark through the open upstream, and once the
//     pool is closed they run uncounted as late releases (counted by the
//     pool, never forwarded: the pool's close already gave upstream
//     everything it held).
//
// The close (closeAndWait) waits for every counted call, on any goroutine.
// It must not run on a goroutine that is itself inside a counted call of the
// same pool (it would wait for itself): Java's TaskPool refuses such a
// close before it reaches Go (a TaskPool counts the native calls of its
// reservations, and the task's owner counts Spark's spills, which every
// TaskPool of the task consults), and the natives are package-private.
//
// A callGate is safe for concurrent use; build one with newCallGate.
type callGate struct {
	// state is calls<<2 | gateClosing | gateClosed. Written only by CAS
	// (enter, exit, closeAndWait).
	state atomic.Int64
	// drained is closed once the gate is closing with no call in flight
	// (the transition that sets gateClosed), by the goroutine that made it.
	drained chan struct{}
	once    sync.Once
}

const (
	// gateClosing: the close has begun; acquiring calls are refused.
	gateClosing = 1
	// gateClosed: closing and drained; releasing calls are no longer
	// counted.
	gateClosed = 2
	// gateCall is one call in flight.
	gateCall = 4
)

func newCallGate() *callGate { return &callGate{drained: make(chan struct{})} }

// enterAcquire admits an acquiring call and returns true, or returns false
// once the close has begun. Every true must be paired with exit.
func (g *callGate) enterAcquire() bool {
	for {
		st := g.state.Load()
		if st&(gateClosing|gateClosed) != 0 {
			return false
		}
		if g.state.CompareAndSwap(st, st+gateCall) {
			return true
		}
	}
}

// enterRelease admits a releasing call and returns true (also while the
// close waits), or returns false once the gate is closed: the call then
// runs uncounted, as a late release. Every true must be paired with exit.
func (g *callGate) enterRelease() bool {
	for {
		st := g.state.Load()
		if st&gateClosed != 0 {
			return false
		}
		if g.state.CompareAndSwap(st, st+gateCall) {
			return true
		}
	}
}

// exit ends a counted call; the last call out of a closing gate closes it
// and wakes the close.
func (g *callGate) exit() {
	for {
		st := g.state.Load()
		next := st - gateCall
		if next == gateClosing {
			next |= gateClosed
		}
		if g.state.CompareAndSwap(st, next) {
			if next&gateClosed != 0 && st&gateClosed == 0 {
				g.signal()
			}
			return
		}
	}
}

// closeAndWait refuses new acquiring calls and returns once no counted call
// is in flight; the gate is then closed for good. A second call waits as
// well.
func (g *callGate) closeAndWait() {
	for {
		st := g.state.Load()
		if st&gateClosing != 0 {
			break
		}
		next := st | gateClosing
		if st == 0 {
			next |= gateClosed
		}
		if g.state.CompareAndSwap(st, next) {
			if next&gateClosed != 0 {
				g.signal()
			}
			break
		}
	}
	<-g.drained
}

func (g *callGate) signal() { g.once.Do(func() { close(g.drained) }) }
