package pool_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nativepool/nativepool/internal/proptest"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/nativepool/nativepool/arbiter"
	"github.com/nativepool/nativepool/internal/fakeupstream"
	"github.com/nativepool/nativepool/pool"
)

// uniOp is one step of a random sequence against a unified pool.
type uniOp struct {
	kind int   // 0 Grow, 1 TryGrow, 2 Shrink, 3 Reclaim, 4 change upstream limit, 5 ReclaimToBallast, 6 ReleaseBallast
	res  int   // which of the 8 reservations
	n    int64 // bytes (Shrink: a fraction of the size, see below)
}

func (o uniOp) String() string {
	return fmt.Sprintf("%s(r%d, %d)", [...]string{"Grow", "TryGrow", "Shrink", "Reclaim", "SetLimit", "ReclaimToBallast", "ReleaseBallast"}[o.kind], o.res, o.n)
}

// uniModel is an independent model of what the reservations hold: four
// consumers c0..c3 with two reservations each (a registration and a
// NewEmpty sibling). c0 and c1 are spillable with spillers (c0 frees both
// its reservations, c1 half of its first), c2 is spillable without a
// spiller, c3 is unspillable. The spillers update the model as they free.
type uniModel struct {
	size  int64   // fair_unified pool size (unused for greedy)
	sizes []int64 // per reservation, index = 2·consumer + k
	peak  int64
}

func (m *uniModel) consumerBytes(c int) int64 { return m.sizes[2*c] + m.sizes[2*c+1] }

func (m *uniModel) total() int64 {
	var s int64
	for _, v := range m.sizes {
		s += v
	}
	return s
}

// admits is fair_unified's admission rule: the per-consumer share among the
// 3 spillable consumers of what the unspillable c3 leaves, then the pool
// total.
func (m *uniModel) admits(c int, n int64) bool {
	if c != 3 {
		share := max(m.size-m.consumerBytes(3), 0) / 3
		if n > share-m.consumerBytes(c) {
			return false
		}
	}
	return n <= m.size-m.total()
}

// uniUpstream abstracts the two upstreams the model tests run over.
type uniUpstream struct {
	up       pool.Upstream
	held     func() int64         // what upstream says the pool holds
	setLimit func(int64)          // nil: no limit to change
	predict  bool                 // upstream grants are predictable (the fake)
	limit    func() int64         // the fake's limit
	wire     func(pool.Reclaimer) // nil, or: make the pool upstream's spill callback
}

// runUnifiedModel runs a gopter property: random sequences of grows,
// try-grows, shrinks, reclaims and upstream-limit changes against a unified
// pool (kind "greedy" or "fair", chunk bytes). After every step it checks
// requireUnifiedInvariants' list (nothing negative; Held = Reserved −
// Overcommit + Slack; upstream's figure = Held; overcommit ⇒ no slack; slack
// ≤ 2·chunk; the reservations sum to Reserved), that every reservation's
// size equals the model's, that Peak is the model's high-water mark, that a
// TryGrow the fair rule refuses is refused without an upstream call, that
// (over the fake) a TryGrow succeeds exactly when slack covers it or
// upstream has the missing bytes plus the debt, and that Reclaim returns
// exactly the drop in upstream's figure. At the end it closes the pool
// (before or after the reservations, at random) and checks that a leak is
// reported with exactly the model's bytes per consumer, that upstream holds
// 0 and that the books are all 0.
func runUnifiedModel(t *testing.T, kind string, chunk int64, newUp func() uniUpstream) {
	const size = 20_000
	seed := proptest.Seed(t)
	params := gopter.DefaultTestParametersWithSeed(seed)
	params.MinSuccessfulTests = 150
	params.MaxSize = 150

	opGen := gopter.CombineGens(gen.IntRange(0, 11), gen.IntRange(0, 7), gen.Int64Range(0, 6000)).
		Map(func(v []any) uniOp {
			k := v[0].(int)
			// Weights: 3 Grow, 3 TryGrow, 2 Shrink, 1 Reclaim, 1 SetLimit, 1
			// ReclaimToBallast, 1 ReleaseBallast.
			kind := [...]int{0, 0, 0, 1, 1, 1, 2, 2, 3, 4, 5, 6}[k]
			return uniOp{kind: kind, res: v[1].(int), n: v[2].(int64)}
		})

	var reclaimedTotal, spillerCalls, refusals, leaks int64
	props := gopter.NewProperties(params)
	props.Property(fmt.Sprintf("%s_unified chunk=%d keeps exact accounting", kind, chunk), prop.ForAll(func(ops []uniOp, closeFirst bool) string {
		u := newUp()
		p := unified(t, kind, u.up, size, pool.WithChunkSize(chunk))
		if u.wire != nil {
			u.wire(p)
		}
		m := &uniModel{size: size, sizes: make([]int64, 8)}
		rs := make([]*pool.Reservation, 8)
		cs := make([]*pool.Consumer, 4)
		for c := range 4 {
			switch c {
			case 0:
				cs[c] = pool.NewConsumer("c0").WithSpiller(pool.SpillerFunc(func(int64) (int64, error) {
					spillerCalls++
					f := rs[0].Free() + rs[1].Free()
					m.sizes[0], m.sizes[1] = 0, 0
					return f, nil
				}))
			case 1:
				cs[c] = pool.NewConsumer("c1").WithSpiller(pool.SpillerFunc(func(int64) (int64, error) {
					spillerCalls++
					h := rs[2].Size() / 2
					rs[2].Shrink(h)
					m.sizes[2] -= h
					return h, nil
				}))
			case 2:
				cs[c] = pool.NewConsumer("c2").WithCanSpill(true)
			case 3:
				cs[c] = pool.NewConsumer("c3")
			}
			rs[2*c] = cs[c].Register(p)
			rs[2*c+1] = rs[2*c].NewEmpty()
		}
		check := func(step int, op uniOp) string {
			if msg := unifiedInvariantViolation(p, u.held(), chunk, rs...); msg != "" {
				return fmt.Sprintf("step %d %v: %s", step, op, msg)
			}
			for i, r := range rs {
				if r.Size() != m.sizes[i] {
					return fmt.Sprintf("step %d %v: r%d size %d, model %d", step, op, i, r.Size(), m.sizes[i])
				}
			}
			if p.Peak() != m.peak {
				return fmt.Sprintf("step %d %v: peak %d, model %d", step, op, p.Peak(), m.peak)
			}
			return ""
		}
		for step, op := range ops {
			r := rs[op.res]
			c := op.res / 2
			before := p.Stats()
			upBefore := u.held()
			switch op.kind {
			case 0:
				// Grow records before it borrows, so the peak includes n
				// even if the borrow makes upstream spill us right away.
				m.peak = max(m.peak, m.total()+op.n)
				r.Grow(op.n)
				m.sizes[op.res] += op.n
			case 1:
				admitted := kind != "fair" || op.n == 0 || m.admits(c, op.n)
				err := r.TryGrow(op.n)
				after := p.Stats()
				if err != nil && !errors.Is(err, pool.ErrResourcesExhausted) {
					return fmt.Sprintf("step %d %v: unexpected error %v", step, op, err)
				}
				if !admitted {
					if err == nil || after.AcquireCalls != before.AcquireCalls {
						return fmt.Sprintf("step %d %v: fair rule refuses, got err %v and %d upstream calls", step, op, err, after.AcquireCalls-before.AcquireCalls)
					}
					refusals++
					break
				}
				if u.predict {
					// What slack does not cover, plus the overcommit debt, comes
					// from the pool's ballast when it covers it all (no upstream
					// call), else from upstream.
					need := op.n - before.Slack + before.Overcommit
					fromBallast := before.Slack < op.n && before.Ballast >= need
					want := before.Slack >= op.n || fromBallast || u.limit()-upBefore >= need
					if (err == nil) != want {
						return fmt.Sprintf("step %d %v: success %v, predicted %v (slack %d, overcommit %d, ballast %d, upstream held %d of %d): %v",
							step, op, err == nil, want, before.Slack, before.Overcommit, before.Ballast, upBefore, u.limit(), err)
					}
					wantCalls := int64(b2i(before.Slack < op.n && !fromBallast))
					if calls := after.AcquireCalls - before.AcquireCalls; calls != wantCalls {
						return fmt.Sprintf("step %d %v: %d upstream calls with slack %d and ballast %d", step, op, calls, before.Slack, before.Ballast)
					}
					if fromBallast && after.Ballast != before.Ballast-need {
						return fmt.Sprintf("step %d %v: ballast %d → %d, spending %d", step, op, before.Ballast, after.Ballast, need)
					}
				}
				if err == nil {
					m.sizes[op.res] += op.n
				} else {
					refusals++
				}
			case 2:
				if s := r.Size(); s > 0 {
					n := op.n%s + 1
					r.Shrink(n)
					m.sizes[op.res] -= n
				}
			case 3:
				freed, err := p.Reclaim(op.n)
				if err != nil {
					return fmt.Sprintf("step %d %v: Reclaim: %v", step, op, err)
				}
				if drop := upBefore - u.held(); freed != drop {
					return fmt.Sprintf("step %d %v: Reclaim returned %d but upstream's figure dropped by %d", step, op, freed, drop)
				}
				if s := p.Stats(); op.n > 0 && (s.Slack != 0 || s.Ballast != 0) { // Reclaim(0) does nothing
					return fmt.Sprintf("step %d %v: slack %d, ballast %d left after Reclaim", step, op, s.Slack, s.Ballast)
				}
				reclaimedTotal += freed
			case 4:
				if u.setLimit != nil {
					u.setLimit(op.n * 4)
				}
			case 5:
				// Ballast: what the pool frees stays with it, so upstream's
				// figure does not move, and every freed byte is ballast.
				ballastBefore := p.Stats().Ballast
				moved, _, err := p.ReclaimToBallast(op.n)
				if err != nil {
					return fmt.Sprintf("step %d %v: ReclaimToBallast: %v", step, op, err)
				}
				if u.held() != upBefore {
					return fmt.Sprintf("step %d %v: upstream's figure moved from %d to %d", step, op, upBefore, u.held())
				}
				if s := p.Stats(); s.Ballast != ballastBefore+moved || (op.n > 0 && s.Slack != 0) {
					return fmt.Sprintf("step %d %v: ballast %d → %d after moving %d, slack %d", step, op, ballastBefore, s.Ballast, moved, s.Slack)
				}
			case 6:
				ballastBefore := p.Stats().Ballast
				released, err := p.ReleaseBallast(op.n)
				if err != nil {
					return fmt.Sprintf("step %d %v: ReleaseBallast: %v", step, op, err)
				}
				if drop := upBefore - u.held(); released != drop || released != min(op.n, ballastBefore) {
					return fmt.Sprintf("step %d %v: released %d of %d ballast, upstream dropped %d", step, op, released, ballastBefore, drop)
				}
			}
			m.peak = max(m.peak, m.total())
			if msg := check(step, op); msg != "" {
				return msg
			}
		}
		// Close, before or after the reservations.
		var want []pool.LeakedConsumer
		var wantBytes int64
		for ci, cons := range cs {
			if b := m.consumerBytes(ci); b > 0 {
				want = append(want, pool.LeakedConsumer{Name: cons.Name(), ID: cons.ID(), Bytes: b})
				wantBytes += b
			}
		}
		if !closeFirst {
			for _, r := range rs {
				r.Close()
			}
			want, wantBytes = nil, 0
		}
		err := p.Close()
		if wantBytes == 0 {
			if err != nil {
				return fmt.Sprintf("close: %v", err)
			}
		} else {
			var leak *pool.LeakError
			if !errors.As(err, &leak) || leak.Bytes != wantBytes || !sameLeaks(leak.Consumers, want) {
				return fmt.Sprintf("close: %v, want %d bytes from %v", err, wantBytes, want)
			}
			leaks++
		}
		if u.held() != 0 {
			return fmt.Sprintf("after Close upstream still holds %d", u.held())
		}
		for _, r := range rs {
			r.Close()
		}
		s := p.Stats()
		if s.Reserved != 0 || s.Held != 0 || s.Slack != 0 || s.Overcommit != 0 || p.Reserved() != 0 {
			return fmt.Sprintf("after Close: %+v", s)
		}
		if s.LateReleaseBytes != wantBytes {
			return fmt.Sprintf("late release bytes %d, want %d", s.LateReleaseBytes, wantBytes)
		}
		return ""
	}, gen.SliceOf(opGen), gen.Bool()))
	props.TestingRun(t)
	t.Logf("reclaimed %d bytes, %d spiller calls, %d refusals, %d leaking closes", reclaimedTotal, spillerCalls, refusals, leaks)
	if t.Failed() {
		return
	}
	require.Positive(t, spillerCalls, "no sequence reached the spillers")
	require.Positive(t, refusals, "no sequence reached a refusal")
	require.Positive(t, leaks, "no sequence closed with a leak")
}

func sameLeaks(got, want []pool.LeakedConsumer) bool {
	if len(got) != len(want) {
		return false
	}
	seen := map[uint64]int64{}
	for _, w := range want {
		seen[w.ID] = w.Bytes
	}
	for _, g := range got {
		if b, ok := seen[g.ID]; !ok || b != g.Bytes {
			return false
		}
	}
	return true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func fakeUpstream() uniUpstream {
	f := fakeupstream.New()
	f.SetLimit(30_000)
	var limit int64 = 30_000
	return uniUpstream{
		up:       f,
		held:     f.Held,
		setLimit: func(n int64) { limit = n; f.SetLimit(n) },
		limit:    func() int64 { return limit },
		predict:  true,
	}
}

// TestGreedyUnifiedMatchesModel and TestFairUnifiedMatchesModel: see
// runUnifiedModel for the invariants; over the programmable fake, in exact
// mode and with 1 KiB chunks.
func TestGreedyUnifiedMatchesModel(t *testing.T) {
	for _, chunk := range []int64{0, 1024} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) { runUnifiedModel(t, "greedy", chunk, fakeUpstream) })
	}
}

func TestFairUnifiedMatchesModel(t *testing.T) {
	for _, chunk := range []int64{0, 1024} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) { runUnifiedModel(t, "fair", chunk, fakeUpstream) })
	}
}

// arbiterUpstream puts the pool in a task of its own arbiter: the pool is
// the task's only Spark consumer and its own reclaimer, so a short acquire
// makes the arbiter call the pool's Reclaim on the acquiring goroutine
// (Spark's self-spill), which the model tests then exercise re-entrantly.
func arbiterUpstream(size int64) func() uniUpstream {
	return func() uniUpstream {
		a := arbiter.New(size, arbiter.WithLogger(quietLogger()))
		task := a.NewTask(context.Background(), "T")
		c := task.NewConsumer("native", nil)
		return uniUpstream{up: c, held: c.Used, wire: c.SetReclaimer}
	}
}

// TestGreedyUnifiedOverArbiterMatchesModel and
// TestFairUnifiedOverArbiterMatchesModel run the same property over the
// in-process arbiter.Arbiter (Spark's rules), where Reclaim is re-entered
// from inside Acquire whenever the arbiter runs short.
func TestGreedyUnifiedOverArbiterMatchesModel(t *testing.T) {
	for _, chunk := range []int64{0, 1024} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) {
			runUnifiedModel(t, "greedy", chunk, arbiterUpstream(25_000))
		})
	}
}

func TestFairUnifiedOverArbiterMatchesModel(t *testing.T) {
	for _, chunk := range []int64{0, 1024} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) {
			runUnifiedModel(t, "fair", chunk, arbiterUpstream(25_000))
		})
	}
}

// Two tasks, each with a unified pool over its own arbiter consumer, four
// goroutines per task doing random grows, try-grows and shrinks against a
// budget small enough that acquires run short, spill (the pools reclaim
// re-entrantly) and wait for 1/2N. Every call returns (checked with a
// timeout); at the end each pool closes without a leak, the arbiter holds
// nothing, no release was clamped (nobody handed back more than granted)
// and closing the tasks force-releases nothing.
func TestUnifiedPoolsOverTheArbiterHandBackExactlyWhatWasGranted(t *testing.T) {
	const budget = 512 << 10
	arbLogs := &uniLogs{}
	a := arbiter.New(budget, arbiter.WithLogger(arbLogs.logger()))
	defer func() {
		if t.Failed() {
			t.Log(arbLogs.String())
		}
	}()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	type taskPool struct {
		task  *arbiter.Task
		p     pool.Unified
		audit *fakeupstream.Spark
	}
	var tps []taskPool
	poolLogs := &uniLogs{}
	defer func() {
		if t.Failed() {
			t.Log(poolLogs.String())
		}
	}()
	for i, kind := range []string{"greedy", "fair"} {
		task := a.NewTask(context.Background(), fmt.Sprintf("task%d", i))
		c := task.NewConsumer("native", nil)
		audit := fakeupstream.Audit(c)
		p := unified(t, kind, audit, budget, pool.WithChunkSize(64<<10), pool.WithLogger(poolLogs.logger()))
		c.SetReclaimer(p)
		tps = append(tps, taskPool{task, p, audit})
	}
	within(t, 30*time.Second, "2 tasks × 4 goroutines over the arbiter", func() {
		var g errgroup.Group
		for ti, tp := range tps {
			for w := range 4 {
				g.Go(func() error {
					rng := rand.New(rand.NewPCG(seed, uint64(ti*10+w)))
					var rs []*pool.Reservation
					c := pool.NewConsumer(fmt.Sprintf("t%dw%d", ti, w))
					if w%2 == 0 {
						c = c.WithSpiller(pool.SpillerFunc(func(int64) (int64, error) {
							var f int64
							for _, r := range rs {
								f += r.Free()
							}
							return f, nil
						}))
					}
					r := c.Register(tp.p)
					rs = append(rs, r) // set before any grow; the spiller only reads it
					for range 2000 {
						n := rng.Int64N(64 << 10)
						switch rng.IntN(3) {
						case 0:
							r.Grow(n)
						case 1:
							if err := r.TryGrow(n); err != nil && !errors.Is(err, pool.ErrResourcesExhausted) {
								return err
							}
						case 2:
							if s := r.Size(); s > 0 {
								_, _ = r.TryShrink(rng.Int64N(s) + 1)
							}
						}
					}
					r.Close()
					return nil
				})
			}
		}
		if err := g.Wait(); err != nil {
			panic(err)
		}
	})
	for _, tp := range tps {
		require.NoError(t, tp.p.Close())
		s := tp.p.Stats()
		t.Logf("%s: %+v", tp.p.Name(), s)
		assert.Zero(t, s.Held+s.Reserved+s.Overcommit+s.Slack)
		assert.Zero(t, s.UpstreamErrors)
		assert.Zero(t, tp.audit.OverReturns(), "the pool handed back more than was outstanding")
	}
	st := a.Stats()
	t.Logf("arbiter: %+v", st)
	assert.Zero(t, st.Used)
	assert.Zero(t, st.OverReleases, "nobody handed back more than granted")
	assert.Positive(t, st.Spills, "the budget never ran short: the test exercised no spill")
	for _, tp := range tps {
		assert.Zero(t, tp.task.Close(), "nothing left for task cleanup to force-release")
	}
}
