package pool

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// TrackConsumers is DataFusion's TrackConsumersPool: a decorator that keeps
// each consumer's reserved and peak bytes and, when the inner pool refuses a
// TryGrow, names the top consumers in the refusal. Build one with
// NewTrackConsumers; the zero TrackConsumers is not valid.
//
// A TrackConsumers is safe for concurrent use. Grow, Shrink and TryGrow find
// the consumer's entry without a lock (one sync.Map load and atomic adds);
// only Register and Unregister take a mutex. Metrics and ReportTop read the
// entries one by one, so under concurrent changes the snapshot is not of a
// single instant.
type TrackConsumers struct {
	watchThrough
	inner Pool
	// top is how many consumers a refusal names; immutable.
	top int

	// regMu serialises Register and Unregister, which store and delete
	// entries of consumers and change trackedConsumer.registrations.
	regMu sync.Mutex
	// consumers maps *Consumer to *trackedConsumer. Read without regMu;
	// written only under it.
	consumers sync.Map
}

// trackedConsumer is one consumer's figures.
type trackedConsumer struct {
	consumer *Consumer
	// registrations counts live Register calls for the consumer; guarded by
	// TrackConsumers.regMu. The entry is removed when it reaches zero.
	registrations int64
	// reserved is the consumer's bytes over all its reservations.
	reserved atomic.Int64
	// peak is the highest reserved seen since the consumer was registered.
	peak atomic.Int64
}

// ConsumerMetrics is a snapshot of one tracked consumer (DataFusion's
// MemoryConsumerMetrics plus the consumer's ID).
type ConsumerMetrics struct {
	Name     string
	ID       uint64
	CanSpill bool
	Reserved int64 // bytes currently reserved, summed over the consumer's reservations
	Peak     int64 // highest Reserved since the consumer was registered
}

// NewTrackConsumers wraps inner so that each consumer's reserved and peak
// bytes are tracked, and a refusal of inner (an error wrapping
// ErrResourcesExhausted) is replaced by one naming the top consumers, in
// DataFusion's words:
//
//	Resources exhausted: Additional allocation failed for r5 with top memory consumers (across reservations) as:
//	  r1#3(can spill: false) consumed 50.0 B, peak 70.0 B,
//	  r3#5(can spill: false) consumed 20.0 B, peak 25.0 B.
//	Error: Failed to allocate additional 150.0 B for r5 with …
//
// The new refusal wraps the inner one, so errors.Is and errors.As see
// both. Other errors (an upstream failure) pass through unchanged. Unlike
// DataFusion, whose order for equal sizes depends on a hash map, consumers
// with equal reserved bytes are listed by ascending ID. Registering one
// consumer twice is allowed; it keeps one entry until its last Unregister.
//
// The decorator forwards Peak and OnThreshold to inner. It panics if inner
// is nil or top is not positive.
func NewTrackConsumers(inner Pool, top int) *TrackConsumers {
	if inner == nil {
		panic("pool: NewTrackConsumers(nil): nil inner pool")
	}
	if top <= 0 {
		panic(fmt.Sprintf("pool: NewTrackConsumers(top %d): top must be positive", top))
	}
	t := &TrackConsumers{inner: inner, top: top}
	t.watchThrough.init("track_consumers", inner)
	return t
}

// Unwrap returns the pool this one decorates.
func (t *TrackConsumers) Unwrap() Pool { return t.inner }

// Name implements Pool.
func (t *TrackConsumers) Name() string { return "track_consumers" }

// Register implements Pool: it registers c with the inner pool, then starts
// tracking it with zero bytes.
func (t *TrackConsumers) Register(c *Consumer) {
	t.inner.Register(c)
	t.regMu.Lock()
	defer t.regMu.Unlock()
	if v, ok := t.consumers.Load(c); ok {
		v.(*trackedConsumer).registrations++
		return
	}
	t.consumers.Store(c, &trackedConsumer{consumer: c, registrations: 1})
}

// Unregister implements Pool: it unregisters c from the inner pool, then
// stops tracking it (after its last registration).
func (t *TrackConsumers) Unregister(c *Consumer) {
	t.inner.Unregister(c)
	t.regMu.Lock()
	defer t.regMu.Unlock()
	v, ok := t.consumers.Load(c)
	if !ok {
		return
	}
	tc := v.(*trackedConsumer)
	if tc.registrations--; tc.registrations <= 0 {
		t.consumers.Delete(c)
	}
}

// Grow implements Pool.
func (t *TrackConsumers) Grow(r *Reservation, n int64) {
	t.inner.Grow(r, n)
	t.track(r.Consumer(), n)
	t.afterIncrease()
}

// Shrink implements Pool.
func (t *TrackConsumers) Shrink(r *Reservation, n int64) {
	t.inner.Shrink(r, n)
	t.untrack(r.Consumer(), n)
	t.afterDecrease()
}

// TryGrow implements Pool. If the inner pool refuses, the refusal is
// decorated with the top consumers (see NewTrackConsumers) and nothing is
// tracked; other errors are returned unchanged.
func (t *TrackConsumers) TryGrow(r *Reservation, n int64) error {
	if err := t.inner.TryGrow(r, n); err != nil {
		if !errors.Is(err, ErrResourcesExhausted) {
			return err
		}
		inner := strings.TrimPrefix(err.Error(), "Resources exhausted: ")
		if e := (*ExhaustedError)(nil); errors.As(err, &e) {
			inner = e.Msg
		}
		return &ExhaustedError{
			Msg: "Additional allocation failed for " + r.Consumer().Name() +
				" with top memory consumers (across reservations) as:\n" +
				t.ReportTop(t.top) + "\nError: " + inner,
			Err: err,
		}
	}
	t.track(r.Consumer(), n)
	t.afterIncrease()
	return nil
}

// track adds n to c's reserved bytes and raises its peak; untracked
// consumers (never registered through t) are ignored, as in DataFusion.
func (t *TrackConsumers) track(c *Consumer, n int64) {
	v, ok := t.consumers.Load(c)
	if !ok {
		return
	}
	tc := v.(*trackedConsumer)
	now := tc.reserved.Add(n)
	for {
		p := tc.peak.Load()
		if now <= p || tc.peak.CompareAndSwap(p, now) {
			return
		}
	}
}

// untrack takes n off c's reserved bytes; untracked consumers are ignored.
func (t *TrackConsumers) untrack(c *Consumer, n int64) {
	if v, ok := t.consumers.Load(c); ok {
		v.(*trackedConsumer).reserved.Add(-n)
	}
}

// Reserved implements Pool by delegation.
func (t *TrackConsumers) Reserved() int64 { return t.inner.Reserved() }

// Limit implements Pool by delegation.
func (t *TrackConsumers) Limit() Limit { return t.inner.Limit() }

// String implements Pool in DataFusion's form:
// "track_consumers(inner_pool: greedy(…), num_of_top_consumers: 5)".
func (t *TrackConsumers) String() string {
	return "track_consumers(inner_pool: " + t.inner.String() +
		", num_of_top_consumers: " + strconv.Itoa(t.top) + ")"
}

// Metrics returns a snapshot of every tracked consumer, largest reserved
// first (ties by ascending ID). Consumers disappear from it when their last
// registration is unregistered.
func (t *TrackConsumers) Metrics() []ConsumerMetrics {
	var out []ConsumerMetrics
	t.consumers.Range(func(_, v any) bool {
		tc := v.(*trackedConsumer)
		out = append(out, ConsumerMetrics{
			Name:     tc.consumer.Name(),
			ID:       tc.consumer.ID(),
			CanSpill: tc.consumer.CanSpill(),
			Reserved: tc.reserved.Load(),
			Peak:     tc.peak.Load(),
		})
		return true
	})
	slices.SortFunc(out, func(a, b ConsumerMetrics) int {
		return cmp.Or(cmp.Compare(b.Reserved, a.Reserved), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// ReportTop renders the k largest consumers as DataFusion's report_top
// does: one line per consumer,
//
//	name#id(can spill: false) consumed 50.0 B, peak 70.0 B
//
// joined with ",\n" and ended with ".". With no consumers (or k ≤ 0) it
// is ".".
func (t *TrackConsumers) ReportTop(k int) string {
	ms := t.Metrics()
	ms = ms[:max(min(k, len(ms)), 0)]
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "  %s#%d(can spill: %t) consumed %s, peak %s",
			m.Name, m.ID, m.CanSpill, HumanReadableSize(m.Reserved), HumanReadableSize(m.Peak))
	}
	b.WriteString(".")
	return b.String()
}

// watchThrough gives a decorator the Watcher methods. When the decorated
// pool is a Watcher (every pool in this package is), Peak and OnThreshold
// are forwarded to it and the hooks do nothing. Otherwise the decorator
// keeps its own meter, fed with the inner pool's Reserved after each of its
// own grows and shrinks. Shared by TrackConsumers and the Logging pool.
type watchThrough struct {
	// to is the inner Watcher, or nil when own is in use.
	to Watcher
	// own is the fallback meter, which reads the inner pool's Reserved;
	// nil when to is set.
	own *meter
}

func (w *watchThrough) init(name string, inner Pool) {
	if iw, ok := As[Watcher](inner); ok {
		w.to = iw
		return
	}
	w.own = &meter{}
	w.own.init(name, inner.Reserved)
}

// Peak implements Watcher: the inner pool's high-water mark.
func (w *watchThrough) Peak() int64 {
	if w.to != nil {
		return w.to.Peak()
	}
	return w.own.Peak()
}

// OnThreshold implements Watcher on the inner pool's reserved bytes.
func (w *watchThrough) OnThreshold(t Threshold, fn func(Crossing)) (stop func()) {
	if w.to != nil {
		return w.to.OnThreshold(t, fn)
	}
	return w.own.OnThreshold(t, fn)
}

func (w *watchThrough) afterIncrease() {
	if w.own != nil {
		w.own.rise(w.own.load())
	}
}

func (w *watchThrough) afterDecrease() {
	if w.own != nil {
		w.own.fall(w.own.load())
	}
}

var (
	_ Pool         = (*TrackConsumers)(nil)
	_ Watcher      = (*TrackConsumers)(nil)
	_ Unwrapper    = (*TrackConsumers)(nil)
	_ fmt.Stringer = (*TrackConsumers)(nil)
)
