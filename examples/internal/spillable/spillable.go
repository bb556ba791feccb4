// Package spillable is the discipline the examples' spillable operators
// share (the external sort of examples/sort, the streaming aggregation of
// examples/spark/native) to stay correct while a pool re-enters them. It
// is demo engine code, not part of nativepool's API.
//
// A spillable operator is driven by one goroutine at a time (Push, Finish,
// Next, Close), and asked to spill by its pool from any goroutine at any
// moment, including from inside an allocation of the driving goroutine:
// the pool asks its upstream for memory, and Spark (or the arbiter) spills
// the requester itself, on the same goroutine. The operator keeps its state
// under one Mutex and never holds it across an allocation, so such a Spill
// just takes the lock. As a last guard, Mutex knows which goroutine holds
// it, and Spills.Requested answers 0 to a Spill from that goroutine instead
// of deadlocking. Driver turns a second concurrent driver call into a panic
// naming the call, and Spills counts the spills of both kinds.
package spillable

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/timandy/routine"
)

// Mutex is an operator's state lock. It records the goroutine that holds
// it, so that a Spill can tell a re-entrant call, and keeps the operator's
// sticky failure. It is a sync.Locker. The zero Mutex is unlocked and
// holds no failure; it must not be copied after first use.
type Mutex struct {
	mu sync.Mutex
	// owner is the id (routine.Goid) of the goroutine holding mu, 0 when
	// free: written by Lock and Unlock, read by HeldByCaller without mu.
	owner atomic.Uint64
	// err is the first failure (FailLocked); guarded by mu.
	err error
}

// Lock locks m.
func (m *Mutex) Lock() {
	m.mu.Lock()
	m.owner.Store(routine.Goid())
}

// Unlock unlocks m.
func (m *Mutex) Unlock() {
	m.owner.Store(0)
	m.mu.Unlock()
}

// HeldByCaller reports whether the calling goroutine holds m.
func (m *Mutex) HeldByCaller() bool { return m.owner.Load() == routine.Goid() }

// FailLocked records err as the operator's failure unless one is recorded
// already, and returns err. The caller holds m.
func (m *Mutex) FailLocked(err error) error {
	if m.err == nil {
		m.err = err
	}
	return err
}

// Fail is FailLocked for a caller that does not hold m.
func (m *Mutex) Fail(err error) error {
	m.Lock()
	defer m.Unlock()
	return m.FailLocked(err)
}

// ErrLocked is the operator's failure, nil while it has none. The caller
// holds m.
func (m *Mutex) ErrLocked() error { return m.err }

// Driver catches concurrent driver calls: an operator's Push, Finish, Next
// and Close belong to one goroutine at a time. The zero Driver is idle; it
// is safe for concurrent use.
type Driver struct {
	busy atomic.Bool
}

// Begin marks the start of driver call op (for example "extsort: Push").
// It panics, naming op, when another driver call is running: that is a
// caller bug.
func (d *Driver) Begin(op string) {
	if !d.busy.CompareAndSwap(false, true) {
		panic(fmt.Sprintf("%s: called concurrently with another Push, Finish, Next or Close", op))
	}
}

// End marks the end of the driver call Begin started.
func (d *Driver) End() { d.busy.Store(false) }

// Counts are a Spills' figures.
type Counts struct {
	// Self are the self-initiated spills that freed bytes, SelfBytes the
	// bytes they freed.
	Self, SelfBytes int64
	// Requested are the spills the pool asked for that freed bytes;
	// Requests counts every such request, including those that freed
	// nothing.
	Requested, Requests int64
}

// Spills runs an operator's spills under its Mutex and counts them. It is
// safe for concurrent use by multiple goroutines. The zero Spills is not
// usable; build one with NewSpills.
type Spills struct {
	mu  *Mutex
	log *slog.Logger
	op  string // the log records' prefix

	self, selfBytes, requested, requests atomic.Int64
}

// NewSpills returns the spills of the operator whose state mu guards. op
// prefixes its log records (for example "extsort"); log should name the
// operator's consumer. A nil log means slog.Default().
func NewSpills(mu *Mutex, log *slog.Logger, op string) *Spills {
	if log == nil {
		log = slog.Default()
	}
	return &Spills{mu: mu, log: log, op: op}
}

// Requested runs spill, the spill the pool asked for with target (the
// operator's pool.Spiller.Spill), under the operator's lock, and returns
// what it returns. Called by the goroutine that holds the lock, it logs a
// warning and returns 0 without calling spill.
func (s *Spills) Requested(target int64, spill func() (int64, error)) (int64, error) {
	s.requests.Add(1)
	if s.mu.HeldByCaller() {
		s.log.Warn(s.op+": re-entrant Spill while the operator holds its lock; nothing spilled", "target", target)
		return 0, nil
	}
	s.mu.Lock()
	freed, err := spill()
	s.mu.Unlock()
	if freed > 0 {
		s.requested.Add(1)
	}
	s.log.Debug(s.op+": requested spill", "target", target, "freed", freed, "err", err)
	return freed, err
}

// Self runs spill, a spill the operator starts itself when the pool
// refuses it memory, under the operator's lock, counts it and returns what
// it returns. The caller does not hold the lock.
func (s *Spills) Self(spill func() (int64, error)) (int64, error) {
	s.mu.Lock()
	freed, err := spill()
	s.mu.Unlock()
	s.NoteSelf(freed)
	s.log.Debug(s.op+": self-initiated spill", "freed", freed, "err", err)
	return freed, err
}

// NoteSelf counts a self-initiated spill the operator made on its own
// (under its lock, inside a driver call) that freed freed bytes; one that
// freed nothing is not counted.
func (s *Spills) NoteSelf(freed int64) {
	if freed > 0 {
		s.self.Add(1)
		s.selfBytes.Add(freed)
	}
}

// Counts returns the spills counted so far.
func (s *Spills) Counts() Counts {
	return Counts{
		Self:      s.self.Load(),
		SelfBytes: s.selfBytes.Load(),
		Requested: s.requested.Load(),
		Requests:  s.requests.Load(),
	}
}

var _ sync.Locker = (*Mutex)(nil)
