package pool

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTrackConsumersNamesTopThreeInRefusal ports test_tracked_consumers_pool:
// every way of changing a size is tracked, peaks are kept, the fourth
// consumer is left out.
func TestTrackConsumersNamesTopThreeInRefusal(t *testing.T) {
	p := NewTrackConsumers(NewGreedy(100), 3)

	r1 := NewConsumer("r1").Register(p)
	r1.Grow(50)
	r1.Grow(20)
	r1.Shrink(20)

	r2 := NewConsumer("r2").Register(p)
	require.NoError(t, r2.TryGrow(15))

	r3 := NewConsumer("r3").Register(p)
	require.NoError(t, r3.TryResize(25))
	require.NoError(t, r3.TryResize(20))

	r4 := NewConsumer("r4").Register(p)
	r4.Grow(10)

	r5 := NewConsumer("r5").Register(p)
	err := r5.TryGrow(150)
	require.ErrorIs(t, err, ErrResourcesExhausted)
	assert.Equal(t, `Resources exhausted: Additional allocation failed for r5 with top memory consumers (across reservations) as:
  r1#[ID](can spill: false) consumed 50.0 B, peak 70.0 B,
  r3#[ID](can spill: false) consumed 20.0 B, peak 25.0 B,
  r2#[ID](can spill: false) consumed 15.0 B, peak 15.0 B.
Error: Failed to allocate additional 150.0 B for r5 with 0.0 B already allocated for this reservation - 5.0 B remain available for the total memory pool: greedy(used: 95.0 B, pool_size: 100.0 B)`,
		maskConsumerIDs(err.Error()))
}

// TestTrackConsumersTracksByConsumerNotName ports
// test_tracked_consumers_pool_register: the report with nothing reserved,
// two consumers with one name kept apart, and a spillable one distinct.
func TestTrackConsumersTracksByConsumerNotName(t *testing.T) {
	p := NewTrackConsumers(NewGreedy(100), 3)

	r0 := NewConsumer("foo").Register(p)
	err := r0.TryGrow(150)
	assert.Equal(t, `Resources exhausted: Additional allocation failed for foo with top memory consumers (across reservations) as:
  foo#[ID](can spill: false) consumed 0.0 B, peak 0.0 B.
Error: Failed to allocate additional 150.0 B for foo with 0.0 B already allocated for this reservation - 100.0 B remain available for the total memory pool: greedy(used: 0.0 B, pool_size: 100.0 B)`,
		maskConsumerIDs(err.Error()))

	r0.Grow(10)
	r1 := NewConsumer("foo").Register(p)
	err = r1.TryGrow(150)
	assert.Equal(t, `Resources exhausted: Additional allocation failed for foo with top memory consumers (across reservations) as:
  foo#[ID](can spill: false) consumed 10.0 B, peak 10.0 B,
  foo#[ID](can spill: false) consumed 0.0 B, peak 0.0 B.
Error: Failed to allocate additional 150.0 B for foo with 0.0 B already allocated for this reservation - 90.0 B remain available for the total memory pool: greedy(used: 10.0 B, pool_size: 100.0 B)`,
		maskConsumerIDs(err.Error()))

	r1.Grow(20)
	err = r1.TryGrow(150)
	assert.Equal(t, `Resources exhausted: Additional allocation failed for foo with top memory consumers (across reservations) as:
  foo#[ID](can spill: false) consumed 20.0 B, peak 20.0 B,
  foo#[ID](can spill: false) consumed 10.0 B, peak 10.0 B.
Error: Failed to allocate additional 150.0 B for foo with 20.0 B already allocated for this reservation - 70.0 B remain available for the total memory pool: greedy(used: 30.0 B, pool_size: 100.0 B)`,
		maskConsumerIDs(err.Error()))

	r2 := NewConsumer("foo").WithCanSpill(true).Register(p)
	err = r2.TryGrow(150)
	assert.Equal(t, `Resources exhausted: Additional allocation failed for foo with top memory consumers (across reservations) as:
  foo#[ID](can spill: false) consumed 20.0 B, peak 20.0 B,
  foo#[ID](can spill: false) consumed 10.0 B, peak 10.0 B,
  foo#[ID](can spill: true) consumed 0.0 B, peak 0.0 B.
Error: Failed to allocate additional 150.0 B for foo with 0.0 B already allocated for this reservation - 70.0 B remain available for the total memory pool: greedy(used: 30.0 B, pool_size: 100.0 B)`,
		maskConsumerIDs(err.Error()))
}

// TestTrackConsumersDropsClosedConsumersFromReport ports
// test_tracked_consumers_pool_deregister over both inner pools.
func TestTrackConsumersDropsClosedConsumersFromReport(t *testing.T) {
	for _, inner := range []func() Pool{
		func() Pool { return NewFair(100) },
		func() Pool { return NewGreedy(100) },
	} {
		p := NewTrackConsumers(inner(), 3)
		t.Run(p.Unwrap().Name(), func(t *testing.T) {
			r0 := NewConsumer("r0").Register(p)
			r0.Grow(10)
			r1 := NewConsumer("r1").Register(p)
			r1.Grow(20)

			err := r0.TryGrow(150)
			assert.Equal(t, `Resources exhausted: Additional allocation failed for r0 with top memory consumers (across reservations) as:
  r1#[ID](can spill: false) consumed 20.0 B, peak 20.0 B,
  r0#[ID](can spill: false) consumed 10.0 B, peak 10.0 B.
Error: Failed to allocate additional 150.0 B for r0 with 10.0 B already allocated for this reservation - 70.0 B remain available for the total memory pool: `+p.Unwrap().String(),
				maskConsumerIDs(err.Error()))

			r1.Close()
			for range 3 { // DataFusion asserts the same text three times
				err = r0.TryGrow(150)
				assert.Equal(t, `Resources exhausted: Additional allocation failed for r0 with top memory consumers (across reservations) as:
  r0#[ID](can spill: false) consumed 10.0 B, peak 10.0 B.
Error: Failed to allocate additional 150.0 B for r0 with 10.0 B already allocated for this reservation - 90.0 B remain available for the total memory pool: `+p.Unwrap().String(),
					maskConsumerIDs(err.Error()))
			}
		})
	}
}

// TestTrackConsumersMetricsSnapshot ports test_track_consumers_pool_metrics.
func TestTrackConsumersMetricsSnapshot(t *testing.T) {
	p := NewTrackConsumers(NewGreedy(1000), 3)
	assert.Empty(t, p.Metrics())

	spilling := NewConsumer("spilling").WithCanSpill(true)
	r1 := spilling.Register(p)
	nonSpilling := NewConsumer("non-spilling")
	r2 := nonSpilling.Register(p)

	r1.Grow(100)
	r1.Grow(50)
	r1.Shrink(50)
	r2.Grow(200)

	assert.Equal(t, []ConsumerMetrics{
		{Name: "non-spilling", ID: nonSpilling.ID(), CanSpill: false, Reserved: 200, Peak: 200},
		{Name: "spilling", ID: spilling.ID(), CanSpill: true, Reserved: 100, Peak: 150},
	}, p.Metrics())

	r2.Close()
	ms := p.Metrics()
	require.Len(t, ms, 1)
	assert.Equal(t, "spilling", ms[0].Name)
}

// TestTrackConsumersReportTopWithoutError ports
// test_tracked_consumers_pool_use_beyond_errors.
func TestTrackConsumersReportTopWithoutError(t *testing.T) {
	p := NewTrackConsumers(NewGreedy(100), 3)
	NewConsumer("r1").Register(p).Grow(20)
	NewConsumer("r2").Register(p).Grow(15)
	NewConsumer("r3").Register(p).Grow(45)
	assert.Equal(t, `  r3#[ID](can spill: false) consumed 45.0 B, peak 45.0 B,
  r1#[ID](can spill: false) consumed 20.0 B, peak 20.0 B.`, maskConsumerIDs(p.ReportTop(2)))
	assert.Equal(t, ".", p.ReportTop(0))
	assert.Equal(t, ".", NewTrackConsumers(NewGreedy(1), 1).ReportTop(5))
}

// TestPoolStringsMatchDataFusionDisplay ports test_memory_pool_display_fmt.
func TestPoolStringsMatchDataFusionDisplay(t *testing.T) {
	assert.Equal(t, "unbounded(used: 0.0 B)", NewUnbounded().String())
	u := NewUnbounded()
	NewConsumer("u").Register(u).Grow(2048)
	assert.Equal(t, "unbounded(used: 2.0 KB)", u.String())

	assert.Equal(t, "greedy(used: 0.0 B, pool_size: 100.0 B)", NewGreedy(100).String())
	g := NewGreedy(100)
	NewConsumer("g").Register(g).Grow(50)
	assert.Equal(t, "greedy(used: 50.0 B, pool_size: 100.0 B)", g.String())

	assert.Equal(t, "fair(pool_size: 4.0 KB)", NewFair(4096).String())
	assert.Equal(t, "track_consumers(inner_pool: greedy(used: 0.0 B, pool_size: 128.0 B), num_of_top_consumers: 5)",
		NewTrackConsumers(NewGreedy(128), 5).String())
	assert.Equal(t, "track_consumers(inner_pool: fair(pool_size: 256.0 B), num_of_top_consumers: 5)",
		NewTrackConsumers(NewFair(256), 5).String())
	assert.Equal(t, "track_consumers(inner_pool: unbounded(used: 0.0 B), num_of_top_consumers: 5)",
		NewTrackConsumers(NewUnbounded(), 5).String())
	assert.Equal(t, "logging(inner_pool: fair(pool_size: 256.0 B))",
		NewLogging(NewFair(256), slog.New(slog.DiscardHandler)).String())
}

// --- Beyond the DataFusion tests ------------------------------------------

// failingPool refuses nothing but fails every TryGrow with a non-refusal
// error, like a pool whose upstream threw a Java exception.
type failingPool struct{ Pool }

var errUpstream = errors.New("upstream: java.lang.IllegalStateException: boom")

func (failingPool) TryGrow(*Reservation, int64) error { return fmt.Errorf("acquire: %w", errUpstream) }

// TestTrackConsumersPassesOtherErrorsThroughUndecorated (reference §7):
// only refusals get the top-consumers preamble, and nothing is tracked.
func TestTrackConsumersPassesOtherErrorsThroughUndecorated(t *testing.T) {
	p := NewTrackConsumers(failingPool{NewGreedy(100)}, 3)
	r := NewConsumer("c").Register(p)
	err := r.TryGrow(1)
	assert.EqualError(t, err, "acquire: upstream: java.lang.IllegalStateException: boom")
	assert.ErrorIs(t, err, errUpstream)
	assert.NotErrorIs(t, err, ErrResourcesExhausted)
	assert.Equal(t, int64(0), p.Metrics()[0].Reserved)
}

// TestTrackConsumersRefusalWrapsInnerRefusal: errors.As reaches both the
// decorated refusal and the inner pool's own.
func TestTrackConsumersRefusalWrapsInnerRefusal(t *testing.T) {
	p := NewTrackConsumers(NewGreedy(10), 1)
	err := NewConsumer("c").Register(p).TryGrow(11)
	var outer *ExhaustedError
	require.ErrorAs(t, err, &outer)
	var inner *ExhaustedError
	require.ErrorAs(t, outer.Unwrap(), &inner)
	assert.Equal(t, "Failed to allocate additional 11.0 B for c with 0.0 B already allocated for this reservation - 10.0 B remain available for the total memory pool: greedy(used: 0.0 B, pool_size: 10.0 B)", inner.Msg)
}

// TestTrackConsumersSumsSiblingsAndSurvivesDoubleRegister: figures are per
// consumer across all its reservations and registrations, and the entry
// lives until the last registration is closed.
func TestTrackConsumersSumsSiblingsAndSurvivesDoubleRegister(t *testing.T) {
	p := NewTrackConsumers(NewGreedy(1000), 3)
	c := NewConsumer("c")
	a, b := c.Register(p), c.Register(p)
	a.Grow(10)
	s := a.Split(4)
	require.NoError(t, s.TryGrow(6))
	b.Grow(5)
	assert.Equal(t, []ConsumerMetrics{{Name: "c", ID: c.ID(), Reserved: 21, Peak: 21}}, p.Metrics())
	a.Close()
	s.Close()
	assert.Equal(t, []ConsumerMetrics{{Name: "c", ID: c.ID(), Reserved: 5, Peak: 21}}, p.Metrics())
	b.Close()
	assert.Empty(t, p.Metrics())
}

// TestTrackConsumersOrdersTiesByID: DataFusion's tie order depends on a
// hash map; ours is by ascending ID, so reports are reproducible.
func TestTrackConsumersOrdersTiesByID(t *testing.T) {
	p := NewTrackConsumers(NewGreedy(1000), 3)
	var want []string
	for i := range 3 {
		c := NewConsumer(fmt.Sprintf("t%d", i))
		c.Register(p).Grow(7)
		want = append(want, c.Name())
	}
	var got []string
	for _, m := range p.Metrics() {
		got = append(got, m.Name)
	}
	assert.Equal(t, want, got)
}

// TestTrackConsumersIgnoresConsumersItDidNotRegister, as DataFusion does
// (and_modify on a missing entry).
func TestTrackConsumersIgnoresConsumersItDidNotRegister(t *testing.T) {
	inner := NewGreedy(100)
	p := NewTrackConsumers(inner, 3)
	r := NewConsumer("direct").Register(inner)
	p.Grow(r, 10)
	require.NoError(t, p.TryGrow(r, 10))
	p.Shrink(r, 5)
	assert.Empty(t, p.Metrics())
	assert.Equal(t, int64(15), p.Reserved())
}

// TestNewTrackConsumersRejectsBadArguments.
func TestNewTrackConsumersRejectsBadArguments(t *testing.T) {
	assert.PanicsWithValue(t, "pool: NewTrackConsumers(top 0): top must be positive",
		func() { NewTrackConsumers(NewGreedy(1), 0) })
	assert.PanicsWithValue(t, "pool: NewTrackConsumers(nil): nil inner pool",
		func() { NewTrackConsumers(nil, 1) })
	assert.PanicsWithValue(t, "pool: NewLogging(nil): nil inner pool",
		func() { NewLogging(nil, nil) })
}

// TestDecoratorsUnwrapToInnerPool: As finds the inner pool through any
// stack of decorators.
func TestDecoratorsUnwrapToInnerPool(t *testing.T) {
	fair := NewFair(10)
	p := NewLogging(NewTrackConsumers(fair, 2), slog.New(slog.DiscardHandler))
	tc, ok := As[*TrackConsumers](p)
	require.True(t, ok)
	assert.Same(t, fair, tc.Unwrap())
	got, ok := As[*fairPool](p)
	require.True(t, ok)
	assert.Same(t, fair, Pool(got))
	_, ok = As[*greedyPool](p)
	assert.False(t, ok)
}

// PeaksByName keeps the high-water mark of consumers after they leave, so
// that the executor memory ledger can report per-consumer peaks when the
// pool closes.
func TestPeaksByNameKeepsConsumersThatUnregistered(t *testing.T) {
	tc := NewTrackConsumers(NewUnbounded(), 5)
	a := NewConsumer("sort").Register(tc)
	b := NewConsumer("agg").Register(tc)
	a.Grow(700)
	a.Shrink(600)
	b.Grow(300)
	a.Free()
	a.Close()
	a2 := NewConsumer("sort").Register(tc)
	a2.Grow(200)
	assert.Equal(t, map[string]int64{"sort": 700, "agg": 300}, tc.PeaksByName())
	b.Grow(900)
	assert.Equal(t, map[string]int64{"sort": 700, "agg": 1200}, tc.PeaksByName())
	b.Free()
	b.Close()
	a2.Free()
	a2.Close()
	assert.Equal(t, map[string]int64{"sort": 700, "agg": 1200}, tc.PeaksByName())
}
