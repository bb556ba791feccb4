package pool

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Crossing is delivered to a threshold callback when a pool's reserved bytes
// cross the threshold's level.
type Crossing struct {
	Pool     string // the pool's Name
	Level    int64  // the threshold's level
	Reserved int64  // reserved bytes when the crossing was observed
	Up       bool   // true when reserved rose to ≥ Level, false when it fell below Level-Hysteresis
}

// Threshold is a level watched by OnThreshold.
type Threshold struct {
	// Level fires an upward crossing when reserved bytes reach it.
	Level int64
	// Hysteresis: after an upward crossing, the downward crossing fires only
	// once reserved bytes fall below Level-Hysteresis, so a pool hovering at
	// the level does not fire on every call. 0 means Level/16.
	Hysteresis int64
}

// Watcher is implemented by every pool in this package (decorators forward
// to the pool they wrap): a high-water mark and threshold notifications, so
// nobody has to poll.
type Watcher interface {
	// Peak is the highest Reserved value observed since the pool was made.
	Peak() int64
	// OnThreshold calls fn once each time reserved bytes cross t upwards and
	// once each time they fall back below it (with hysteresis). fn runs on
	// the goroutine whose grow or shrink caused the crossing, after the
	// pool's locks are released, so it may call into the pool; but it runs
	// inside the pool's Grow or TryGrow, before the reservation has added the
	// bytes to its own Size, so it must not shrink the reservation whose
	// grow triggered it. It may close it: that grow then fails with
	// ErrClosed and hands its bytes back. If fn panics during a grow, the
	// grow is taken back out of the pool and the panic reaches the grow's
	// caller unchanged. Crossings caused concurrently may be delivered out
	// of order. The returned stop function removes the threshold.
	OnThreshold(t Threshold, fn func(Crossing)) (stop func())
}

// meter keeps a pool's high-water mark and threshold state. Pools embed one,
// call init once, then rise after every increase of reserved bytes and fall
// after every decrease. The fast path is two atomic loads.
type meter struct {
	peak atomic.Int64
	// nextUp is the lowest level not yet crossed upwards (MaxInt64 if none);
	// nextDown the highest Level-Hysteresis of the thresholds crossed upwards
	// (MinInt64 if none). Both are written only under mu.
	nextUp   atomic.Int64
	nextDown atomic.Int64

	name string
	// load reads the pool's current reserved bytes; it must not take a lock
	// that is held while the pool calls rise or fall.
	load func() int64

	mu struct {
		sync.Mutex
		watches []*watch
	}
}

type watch struct {
	t     Threshold
	fn    func(Crossing)
	above bool // guarded by meter.mu
}

func (m *meter) init(name string, load func() int64) {
	m.name = name
	m.load = load
	m.nextUp.Store(math.MaxInt64)
	m.nextDown.Store(math.MinInt64)
}

// rise records that reserved bytes increased to now. Its fast path (two
// atomic loads) is small enough to inline into every pool's grow.
func (m *meter) rise(now int64) {
	if m.risesPast(now) {
		m.riseSlow(now)
	}
}

// risesPast reports whether reserved bytes at now need the slow path: a new
// high-water mark or an upward threshold. Inlined into the pools' grows.
func (m *meter) risesPast(now int64) bool {
	return now > m.peak.Load() || now >= m.nextUp.Load()
}

// riseOrUndo is riseSlow for a grow the pool has booked but whose caller
// has not yet seen it succeed: if a threshold callback panics, undo takes
// the grow back out of the pool's books before the panic goes on, unchanged,
// to the caller (which then never adds the bytes to the reservation).
func (m *meter) riseOrUndo(now int64, undo func()) {
	ok := false
	defer func() {
		if !ok {
			undo()
		}
	}()
	m.riseSlow(now)
	ok = true
}

// riseSlow lifts the high-water mark to now (unless another goroutine lifted
// it higher) and evaluates the thresholds if an upward level was reached.
func (m *meter) riseSlow(now int64) {
	for {
		p := m.peak.Load()
		if now <= p || m.peak.CompareAndSwap(p, now) {
			break
		}
	}
	if now >= m.nextUp.Load() {
		m.evaluate()
	}
}

// fall records that reserved bytes decreased to now.
func (m *meter) fall(now int64) {
	if now < m.nextDown.Load() {
		m.evaluate()
	}
}

// Peak implements Watcher.
func (m *meter) Peak() int64 { return m.peak.Load() }

// OnThreshold implements Watcher.
func (m *meter) OnThreshold(t Threshold, fn func(Crossing)) (stop func()) {
	if t.Level <= 0 {
		panic(fmt.Sprintf("pool: OnThreshold(level %d): level must be positive", t.Level))
	}
	if t.Hysteresis <= 0 {
		t.Hysteresis = t.Level / 16
	}
	if t.Hysteresis > t.Level {
		t.Hysteresis = t.Level
	}
	w := &watch{t: t, fn: fn}
	m.mu.Lock()
	m.mu.watches = append(m.mu.watches, w)
	m.mu.Unlock()
	m.evaluate()
	return func() {
		m.mu.Lock()
		for i, x := range m.mu.watches {
			if x == w {
				m.mu.watches = append(m.mu.watches[:i:i], m.mu.watches[i+1:]...)
				break
			}
		}
		m.rearmLocked()
		m.mu.Unlock()
	}
}

// evaluate compares the current reserved bytes (read under mu, so that
// concurrent evaluations agree on the order of states) with every threshold
// and delivers the crossings after unlocking. After re-arming it reads the
// bytes again: a concurrent change that checked nextUp/nextDown before they
// were re-armed is then evaluated here instead of being missed.
func (m *meter) evaluate() {
	var fired []Crossing
	var fns []func(Crossing)
	var ws []*watch
	m.mu.Lock()
	for now := m.load(); ; {
		for _, w := range m.mu.watches {
			switch {
			case !w.above && now >= w.t.Level:
				w.above = true
			case w.above && now < w.t.Level-w.t.Hysteresis:
				w.above = false
			default:
				continue
			}
			fired = append(fired, Crossing{Pool: m.name, Level: w.t.Level, Reserved: now, Up: w.above})
			fns = append(fns, w.fn)
			ws = append(ws, w)
		}
		m.rearmLocked()
		again := m.load()
		if again == now || (again < m.nextUp.Load() && again >= m.nextDown.Load()) {
			break
		}
		now = again
	}
	m.mu.Unlock()
	delivered := 0
	defer func() {
		if delivered < len(fired) {
			m.undeliver(ws[delivered:], fired[delivered:])
		}
	}()
	for i, c := range fired {
		fns[i](c)
		delivered++
	}
}

// undeliver puts back the state of watches whose crossings were not
// delivered because a callback panicked (the panicking one included): the
// crossing did not happen as far as they are concerned, so the same change
// fires them again, and a grow that the pool took back does not leave a
// watch believing the level is still exceeded.
func (m *meter) undeliver(ws []*watch, cs []Crossing) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, w := range ws {
		w.above = !cs[i].Up
	}
	m.rearmLocked()
}

// rearmLocked recomputes nextUp and nextDown. The caller holds m.mu.
func (m *meter) rearmLocked() {
	up, down := int64(math.MaxInt64), int64(math.MinInt64)
	for _, w := range m.mu.watches {
		if w.above {
			down = max(down, w.t.Level-w.t.Hysteresis)
		} else {
			up = min(up, w.t.Level)
		}
	}
	m.nextUp.Store(up)
	m.nextDown.Store(down)
}
