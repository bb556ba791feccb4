package pool

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/nativepool/nativepool/internal/proptest"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
)

// Property tests: random command sequences run against each pool and
// against a simple model of it, with poolModel.checkInvariants after every
// command. Set NATIVEPOOL_PROP_SEED to replay a logged seed.

const (
	propLimit     = 200 // size of the finite pools
	propLevel     = 100 // threshold level watched
	propHyst      = 10  // threshold hysteresis
	propMaxBytes  = 60  // largest n a command uses
	propNumOpKind = 14
)

// propOp is one command. Kind selects the operation, Idx the reservation
// (or consumer) it applies to, modulo what exists.
type propOp struct {
	Kind  int
	Idx   int
	N     int64
	Spill bool
}

func (o propOp) String() string {
	names := [...]string{"register", "reregister", "try_grow", "try_grow", "grow", "shrink",
		"try_shrink", "free", "split", "new_empty", "take", "close", "try_resize", "resize"}
	return fmt.Sprintf("%s(idx=%d, n=%d, spill=%t)", names[o.Kind], o.Idx, o.N, o.Spill)
}

// propPoolKind says how to build a pool and which refusal rule models it.
type propPoolKind struct {
	name  string
	rule  string // "unbounded", "greedy" or "fair"
	build func(logger *slog.Logger) Pool
}

func propPoolKinds() []propPoolKind {
	return []propPoolKind{
		{"unbounded", "unbounded", func(*slog.Logger) Pool { return NewUnbounded() }},
		{"greedy", "greedy", func(*slog.Logger) Pool { return NewGreedy(propLimit) }},
		{"fair", "fair", func(*slog.Logger) Pool { return NewFair(propLimit) }},
		{"track_consumers(greedy)", "greedy", func(*slog.Logger) Pool { return NewTrackConsumers(NewGreedy(propLimit), 3) }},
		{"logging(fair)", "fair", func(l *slog.Logger) Pool { return NewLogging(NewFair(propLimit), l) }},
	}
}

// countingHandler counts the records a Logging pool emits.
type countingHandler struct{ n atomic.Int64 }

func (h *countingHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (h *countingHandler) Handle(context.Context, slog.Record) error { h.n.Add(1); return nil }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h *countingHandler) WithGroup(string) slog.Handler             { return h }

type modelConsumer struct {
	c     *Consumer
	regs  int   // live registrations
	peak  int64 // TrackConsumers' peak since the consumer was (re)registered
	spill bool
}

type modelRegistration struct {
	c    *modelConsumer
	live int // open reservations
}

type modelReservation struct {
	r    *Reservation
	reg  *modelRegistration
	size int64
}

// poolModel is the expected state of a pool under test.
type poolModel struct {
	kind      propPoolKind
	pool      Pool
	watcher   Watcher
	track     *TrackConsumers // set when the pool is (or wraps) TrackConsumers
	fair      *fairPool       // set when the pool is (or wraps) the fair pool
	records   *countingHandler
	consumers []*modelConsumer
	live      []*modelReservation

	peak     int64
	above    bool
	crossed  []Crossing // delivered by the pool
	expected []Crossing // predicted by the model
	calls    int64      // pool calls made: one log record each
}

func newPoolModel(kind propPoolKind) *poolModel {
	h := &countingHandler{}
	p := kind.build(slog.New(h))
	m := &poolModel{kind: kind, pool: p, records: h}
	m.watcher, _ = As[Watcher](p)
	m.track, _ = As[*TrackConsumers](p)
	m.fair, _ = As[*fairPool](p)
	m.watcher.OnThreshold(Threshold{Level: propLevel, Hysteresis: propHyst}, func(c Crossing) {
		m.crossed = append(m.crossed, c)
	})
	return m
}

func (m *poolModel) reserved() (total, spillable, unspillable int64) {
	for _, r := range m.live {
		total += r.size
		if r.reg.c.spill {
			spillable += r.size
		} else {
			unspillable += r.size
		}
	}
	return
}

func (m *poolModel) consumerBytes(c *modelConsumer) int64 {
	var n int64
	for _, r := range m.live {
		if r.reg.c == c {
			n += r.size
		}
	}
	return n
}

// tryGrowAllowed is the model of each pool's refusal rule; it returns
// whether TryGrow(n) on r must succeed, and the limit it was checked
// against (for the "never past the limit" invariant).
func (m *poolModel) tryGrowAllowed(r *modelReservation, n int64) bool {
	total, _, unspillable := m.reserved()
	switch m.kind.rule {
	case "greedy":
		return total+n <= propLimit
	case "fair":
		if !r.reg.c.spill {
			return n <= max(propLimit-total, 0)
		}
		share := max(propLimit-unspillable, 0)
		numSpill := 0
		for _, c := range m.consumers {
			if c.spill && c.regs > 0 {
				numSpill++
			}
		}
		if numSpill > 0 {
			share /= int64(numSpill)
		}
		return m.consumerBytes(r.reg.c)+n <= share
	}
	return true
}

func (m *poolModel) register(c *modelConsumer) {
	if c.regs == 0 {
		c.peak = 0
	}
	c.regs++
	reg := &modelRegistration{c: c, live: 1}
	m.live = append(m.live, &modelReservation{r: c.c.Register(m.pool), reg: reg})
	m.calls++
}

func (m *poolModel) grew(r *modelReservation, n int64) {
	r.size += n
	r.reg.c.peak = max(r.reg.c.peak, m.consumerBytes(r.reg.c))
}

// apply runs one command on the pool and the model; it returns a
// violation, or "".
func (m *poolModel) apply(op propOp) string {
	if op.Kind == 0 || len(m.live) == 0 {
		c := &modelConsumer{c: NewConsumer("c" + strconv.Itoa(len(m.consumers))).WithCanSpill(op.Spill), spill: op.Spill}
		m.consumers = append(m.consumers, c)
		m.register(c)
		return ""
	}
	if op.Kind == 1 {
		m.register(m.consumers[op.Idx%len(m.consumers)])
		return ""
	}
	i := op.Idx % len(m.live)
	r := m.live[i]
	n := op.N
	switch op.Kind {
	case 2, 3:
		want := m.tryGrowAllowed(r, n)
		err := r.r.TryGrow(n)
		m.calls++
		if (err == nil) != want {
			return fmt.Sprintf("TryGrow(%d) on %s: err=%v, model expected success=%t", n, r.r, err, want)
		}
		if err == nil {
			m.grew(r, n)
			if v := m.tryGrowPastLimit(r, n); v != "" {
				return v
			}
		}
	case 4:
		r.r.Grow(n)
		m.calls++
		m.grew(r, n)
	case 5:
		n %= r.size + 1
		r.r.Shrink(n)
		m.calls++
		r.size -= n
	case 6:
		got, err := r.r.TryShrink(n)
		if n <= r.size {
			if err != nil || got != r.size-n {
				return fmt.Sprintf("TryShrink(%d) of %d = %d, %v", n, r.size, got, err)
			}
			r.size -= n
			m.calls++
		} else if err == nil {
			return fmt.Sprintf("TryShrink(%d) of %d succeeded", n, r.size)
		}
	case 7:
		if got := r.r.Free(); got != r.size {
			return fmt.Sprintf("Free() = %d, model %d", got, r.size)
		}
		if r.size > 0 {
			m.calls++
		}
		r.size = 0
	case 8:
		n %= r.size + 1
		s := r.r.Split(n)
		r.size -= n
		r.reg.live++
		m.live = append(m.live, &modelReservation{r: s, reg: r.reg, size: n})
	case 9:
		r.reg.live++
		m.live = append(m.live, &modelReservation{r: r.r.NewEmpty(), reg: r.reg})
	case 10:
		r.reg.live++
		m.live = append(m.live, &modelReservation{r: r.r.Take(), reg: r.reg, size: r.size})
		r.size = 0
	case 11:
		m.close(i)
	case 12, 13:
		target := n
		if target > r.size {
			if op.Kind == 13 {
				r.r.Resize(target)
			} else {
				want := m.tryGrowAllowed(r, target-r.size)
				err := r.r.TryResize(target)
				if (err == nil) != want {
					return fmt.Sprintf("TryResize(%d) from %d: err=%v, model expected success=%t", target, r.size, err, want)
				}
				if err != nil {
					m.calls++
					break
				}
			}
			m.calls++
			m.grew(r, target-r.size)
		} else if target < r.size {
			if op.Kind == 13 {
				r.r.Resize(target)
			} else if err := r.r.TryResize(target); err != nil {
				return fmt.Sprintf("TryResize(%d) from %d: %v", target, r.size, err)
			}
			m.calls++
			r.size = target
		}
	}
	return ""
}

// tryGrowPastLimit checks, after a successful TryGrow, that the pool's
// rule held: a greedy pool's total stays within its size; in a fair pool
// an unspillable grant keeps the total within size and a spillable grant
// keeps the consumer within its share (DataFusion's fair pool may still
// pass its size when a new spiller registers after others took their
// share: see TestFairDivisorChangesOnlyOnRegisterAndUnregister). A
// zero-byte grant changes nothing and is exempt: the fair pool grants an
// unspillable TryGrow(0) even when Grow has taken it past its size.
func (m *poolModel) tryGrowPastLimit(r *modelReservation, n int64) string {
	total, _, _ := m.reserved()
	switch {
	case n == 0:
	case m.kind.rule == "greedy" && total > propLimit:
		return fmt.Sprintf("TryGrow took the pool to %d > %d", total, propLimit)
	case m.kind.rule == "fair" && !r.reg.c.spill && total > propLimit:
		return fmt.Sprintf("unspillable TryGrow took the pool to %d > %d", total, propLimit)
	}
	return ""
}

func (m *poolModel) close(i int) {
	r := m.live[i]
	if r.size > 0 {
		m.calls++
	}
	r.r.Close()
	r.size = 0
	m.live = slices.Delete(m.live, i, i+1)
	if r.reg.live--; r.reg.live == 0 {
		r.reg.c.regs--
		m.calls++
	}
}

// checkInvariants compares the pool with the model after a command:
//
//  1. every open reservation's Size() equals the model's, and is ≥ 0;
//  2. Reserved() equals the sum of the open reservations' sizes;
//  3. Peak() equals the highest Reserved() seen after any command;
//  4. threshold callbacks fired exactly at the crossings the model
//     predicts: up when reserved reaches the level from below, down when
//     it falls below level-hysteresis after an up, never otherwise;
//  5. TrackConsumers tracks exactly the consumers with a live
//     registration, with reserved equal to the sum over their open
//     reservations and peak equal to the model's peak since registration;
//  6. the fair pool's divisor counts the spillable consumers with a live
//     registration;
//  7. a Logging pool emitted one record per pool call.
//
// (That TryGrow never takes a finite pool past its limit is checked after
// each successful TryGrow, by tryGrowPastLimit.)
func (m *poolModel) checkInvariants() string {
	total, _, _ := m.reserved()
	for _, r := range m.live {
		if r.r.Size() != r.size || r.size < 0 {
			return fmt.Sprintf("%s: model size %d", r.r, r.size)
		}
	}
	if got := m.pool.Reserved(); got != total {
		return fmt.Sprintf("Reserved() = %d, sum of reservations %d", got, total)
	}
	m.peak = max(m.peak, total)
	if got := m.watcher.Peak(); got != m.peak {
		return fmt.Sprintf("Peak() = %d, model %d", got, m.peak)
	}
	switch {
	case !m.above && total >= propLevel:
		m.above = true
	case m.above && total < propLevel-propHyst:
		m.above = false
	default:
		goto crossingsDone
	}
	m.expected = append(m.expected, Crossing{Pool: m.watcherName(), Level: propLevel, Reserved: total, Up: m.above})
crossingsDone:
	if !reflect.DeepEqual(m.crossed, m.expected) {
		return fmt.Sprintf("crossings %v, model %v", m.crossed, m.expected)
	}
	if m.track != nil {
		var want []ConsumerMetrics
		for _, c := range m.consumers {
			if c.regs > 0 {
				want = append(want, ConsumerMetrics{Name: c.c.Name(), ID: c.c.ID(), CanSpill: c.spill,
					Reserved: m.consumerBytes(c), Peak: c.peak})
			}
		}
		got := m.track.Metrics()
		slices.SortFunc(got, func(a, b ConsumerMetrics) int { return int(a.ID) - int(b.ID) })
		if !(len(got) == 0 && len(want) == 0) && !reflect.DeepEqual(got, want) {
			return fmt.Sprintf("Metrics() = %+v, model %+v", got, want)
		}
	}
	if m.fair != nil {
		numSpill := int64(0)
		for _, c := range m.consumers {
			if c.spill && c.regs > 0 {
				numSpill++
			}
		}
		m.fair.mu.Lock()
		got := m.fair.mu.numSpill
		m.fair.mu.Unlock()
		if got != numSpill {
			return fmt.Sprintf("fair numSpill = %d, model %d", got, numSpill)
		}
	}
	if _, ok := m.pool.(*loggingPool); ok {
		if got := m.records.n.Load(); got != m.calls {
			return fmt.Sprintf("%d log records, %d pool calls", got, m.calls)
		}
	}
	return ""
}

func (m *poolModel) watcherName() string {
	p := m.pool
	for {
		u, ok := p.(Unwrapper)
		if !ok {
			return p.Name()
		}
		p = u.Unwrap()
	}
}

// closeAll closes every reservation and checks that nothing is left: the
// pool is at 0, TrackConsumers tracks nobody, the fair pool has forgotten
// every consumer.
func (m *poolModel) closeAll() string {
	for len(m.live) > 0 {
		m.close(len(m.live) - 1)
		if v := m.checkInvariants(); v != "" {
			return "closing: " + v
		}
	}
	if got := m.pool.Reserved(); got != 0 {
		return fmt.Sprintf("Reserved() = %d after closing everything", got)
	}
	if m.track != nil && len(m.track.Metrics()) != 0 {
		return fmt.Sprintf("TrackConsumers still tracks %+v", m.track.Metrics())
	}
	if m.fair != nil {
		m.fair.mu.Lock()
		defer m.fair.mu.Unlock()
		if len(m.fair.mu.spillers) != 0 || m.fair.mu.numSpill != 0 {
			return fmt.Sprintf("fair pool keeps %d consumers, numSpill %d", len(m.fair.mu.spillers), m.fair.mu.numSpill)
		}
	}
	return ""
}

// TestPoolsAgreeWithTheirModel runs random command sequences (register,
// re-register, TryGrow, Grow, Shrink, TryShrink, Free, Split, NewEmpty,
// Take, Close, TryResize, Resize) on each pool and checks the invariants
// of poolModel.checkInvariants after every command, TryGrow's outcome
// against the pool's refusal rule, and after closing every reservation
// that Reserved() is 0 and no per-consumer state is left.
func TestPoolsAgreeWithTheirModel(t *testing.T) {
	seed := proptest.Seed(t)
	opGen := gen.Struct(reflect.TypeOf(propOp{}), map[string]gopter.Gen{
		"Kind":  gen.IntRange(0, propNumOpKind-1),
		"Idx":   gen.IntRange(0, 1<<10),
		"N":     gen.Int64Range(0, propMaxBytes),
		"Spill": gen.Bool(),
	})
	for _, kind := range propPoolKinds() {
		t.Run(kind.name, func(t *testing.T) {
			params := gopter.DefaultTestParametersWithSeed(seed)
			params.MinSuccessfulTests = 150
			params.MaxSize = 150
			props := gopter.NewProperties(params)
			props.Property("matches model", prop.ForAll(func(ops []propOp) string {
				m := newPoolModel(kind)
				for i, op := range ops {
					if v := m.apply(op); v != "" {
						return fmt.Sprintf("command %d %s: %s", i, op, v)
					}
					if v := m.checkInvariants(); v != "" {
						return fmt.Sprintf("after command %d %s: %s", i, op, v)
					}
				}
				return m.closeAll()
			}, gen.SliceOf(opGen)))
			props.TestingRun(t)
		})
	}
}
