package pool

import (
	"cmp"
	"container/heap"
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
// A TrackConsumers is safe for concurrent use. Grow, Shrink and TryGrow
// reach the consumer's counters through the reservation's registration,
// which Consumer.Register points at them, so the hot path touches no map
// and takes no lock: atomic adds only (a reservation registered through a
// decorator above this one falls back to one sync.Map load). Register and
// Unregister take a mutex. Metrics and ReportTop scan the consumers under
// that mutex and read each one's counters once, so under concurrent grows
// the snapshot is not of a single instant; ReportTop keeps only its top k
// while it scans (a refusal with 10,000 consumers costs tens of
// microseconds and allocates only the k lines it prints).
type TrackConsumers struct {
	watchThrough
	inner Pool
	// top is how many consumers a refusal names; immutable.
	top int

	// regMu serialises Register and Unregister, which store and delete
	// entries of consumers and change trackedConsumer.registrations, and
	// the scans of Metrics and ReportTop.
	regMu sync.Mutex
	// list holds every tracked consumer, in no order (removal swaps the
	// last one in); guarded by regMu.
	list []*trackedConsumer
	// retiredPeaks keeps, by consumer name, the highest peak of consumers
	// no longer tracked, for PeaksByName; guarded by regMu. One entry per
	// name, so it is bounded by the names the pool has seen.
	retiredPeaks map[string]int64
	// consumers maps *Consumer to *trackedConsumer, for reservations that
	// do not carry their counters. Read without regMu; written only under
	// it.
	consumers sync.Map
}

// trackedConsumer is one consumer's figures.
type trackedConsumer struct {
	consumer *Consumer
	// id is consumer.ID(), kept here so that a report's scan reads one
	// cache line per consumer.
	id uint64
	// owner is the TrackConsumers that tracks it: a registration's pointer
	// to these counters is used only by that pool.
	owner *TrackConsumers
	// registrations counts live Register calls for the consumer, and index
	// is its place in owner.list; both guarded by TrackConsumers.regMu. The
	// entry is removed when registrations reaches zero.
	registrations int64
	index         int
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
	tc := &trackedConsumer{consumer: c, id: c.ID(), owner: t, registrations: 1, index: len(t.list)}
	t.list = append(t.list, tc)
	t.consumers.Store(c, tc)
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
	if tc.registrations--; tc.registrations > 0 {
		return
	}
	t.consumers.Delete(c)
	if t.retiredPeaks == nil {
		t.retiredPeaks = make(map[string]int64)
	}
	if p := tc.peak.Load(); p > t.retiredPeaks[c.Name()] {
		t.retiredPeaks[c.Name()] = p
	} else if _, seen := t.retiredPeaks[c.Name()]; !seen {
		t.retiredPeaks[c.Name()] = p
	}
	last := len(t.list) - 1
	moved := t.list[last]
	t.list[tc.index], moved.index = moved, tc.index
	t.list[last] = nil
	t.list = t.list[:last]
}

// entry returns r's consumer's counters: the registration's pointer when
// it was registered on t, else the map's entry (nil if untracked).
func (t *TrackConsumers) entry(r *Reservation) *trackedConsumer {
	if tc := r.reg.tracked; tc != nil && tc.owner == t {
		return tc // inlined: the common case
	}
	return t.lookup(r.reg.consumer)
}

// lookup is entry's slow path, and what Consumer.Register keeps in a new
// registration made on t: the map's entry for c, or nil.
func (t *TrackConsumers) lookup(c *Consumer) *trackedConsumer {
	if v, ok := t.consumers.Load(c); ok {
		return v.(*trackedConsumer)
	}
	return nil
}

// Grow implements Pool.
func (t *TrackConsumers) Grow(r *Reservation, n int64) {
	t.inner.Grow(r, n)
	t.entry(r).add(n)
	t.afterIncrease()
}

// Shrink implements Pool.
func (t *TrackConsumers) Shrink(r *Reservation, n int64) {
	t.inner.Shrink(r, n)
	t.entry(r).sub(n)
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
	t.entry(r).add(n)
	t.afterIncrease()
	return nil
}

// add adds n to the consumer's reserved bytes and raises its peak; a nil
// entry (a consumer never registered through this pool) is ignored, as in
// DataFusion.
func (tc *trackedConsumer) add(n int64) {
	if tc == nil {
		return
	}
	now := tc.reserved.Add(n)
	for {
		p := tc.peak.Load()
		if now <= p || tc.peak.CompareAndSwap(p, now) {
			return
		}
	}
}

// sub takes n off the consumer's reserved bytes; nil is ignored.
func (tc *trackedConsumer) sub(n int64) {
	if tc != nil {
		tc.reserved.Add(-n)
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
	t.regMu.Lock()
	out := make([]ConsumerMetrics, 0, len(t.list))
	for _, tc := range t.list {
		out = append(out, tc.metrics(tc.reserved.Load()))
	}
	t.regMu.Unlock()
	slices.SortFunc(out, before)
	return out
}

// PeaksByName returns, by consumer name, the highest peak of every
// consumer the pool has tracked, those still registered and those gone:
// the high-water mark per consumer that the executor memory ledger keeps.
// Consumers sharing a name share an entry (the highest).
func (t *TrackConsumers) PeaksByName() map[string]int64 {
	t.regMu.Lock()
	defer t.regMu.Unlock()
	out := make(map[string]int64, len(t.retiredPeaks)+len(t.list))
	for n, p := range t.retiredPeaks {
		out[n] = p
	}
	for _, tc := range t.list {
		n := tc.consumer.Name()
		if p := tc.peak.Load(); p > out[n] {
			out[n] = p
		} else if _, seen := out[n]; !seen {
			out[n] = p
		}
	}
	return out
}

// metrics is tc's snapshot with reserved as read by the caller.
func (tc *trackedConsumer) metrics(reserved int64) ConsumerMetrics {
	c := tc.consumer
	return ConsumerMetrics{Name: c.Name(), ID: c.ID(), CanSpill: c.CanSpill(), Reserved: reserved, Peak: tc.peak.Load()}
}

// before orders consumer snapshots as reports list them: largest reserved
// first, ties by ascending ID.
func before(a, b ConsumerMetrics) int {
	return cmp.Or(cmp.Compare(b.Reserved, a.Reserved), cmp.Compare(a.ID, b.ID))
}

// ReportTop renders the k largest consumers as DataFusion's report_top
// does: one line per consumer,
//
//	name#id(can spill: false) consumed 50.0 B, peak 70.0 B
//
// joined with ",\n" and ended with ".". With no consumers (or k ≤ 0) it
// is ".". It keeps the k largest in a heap while it scans: O(n log k) time
// and O(k) space, whatever the number of consumers.
func (t *TrackConsumers) ReportTop(k int) string {
	var b strings.Builder
	for i, m := range t.largest(k) {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "  %s#%d(can spill: %t) consumed %s, peak %s",
			m.Name, m.ID, m.CanSpill, HumanReadableSize(m.Reserved), HumanReadableSize(m.Peak))
	}
	b.WriteString(".")
	return b.String()
}

// largest returns the k largest consumers in report order (see before).
func (t *TrackConsumers) largest(k int) []ConsumerMetrics {
	if k <= 0 {
		return nil
	}
	t.regMu.Lock()
	h := make(topHeap, 0, min(k, len(t.list)))
	for _, tc := range t.list {
		r := tc.reserved.Load()
		if len(h) < cap(h) {
			heap.Push(&h, tc.metrics(r))
			continue
		}
		// Not before the last kept in report order (smaller, or equal with a
		// larger ID): the common case, decided without building a snapshot.
		if last := &h[0]; r < last.Reserved || r == last.Reserved && tc.id > last.ID {
			continue
		}
		h[0] = tc.metrics(r)
		heap.Fix(&h, 0)
	}
	t.regMu.Unlock()
	slices.SortFunc(h, before)
	return h
}

// topHeap is a container/heap of the consumers kept by largest, whose root
// is the one that comes last in report order (the first to be dropped).
type topHeap []ConsumerMetrics

func (h topHeap) Len() int           { return len(h) }
func (h topHeap) Less(i, j int) bool { return before(h[i], h[j]) > 0 }
func (h topHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *topHeap) Push(x any)        { *h = append(*h, x.(ConsumerMetrics)) }
func (h *topHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
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
