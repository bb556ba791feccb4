package pool_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/nativepool/nativepool/internal/fakeupstream"
	"github.com/nativepool/nativepool/internal/proptest"
	"github.com/nativepool/nativepool/pool"
)

// exOp is one step of TestUnifiedBooksStayExactUnderPanicsSplitsAndCloses.
type exOp struct {
	kind int   // see exOpNames
	res  int   // which reservation (modulo the open ones)
	n    int64 // bytes, or a per-mille fraction of a size
}

var exOpNames = [...]string{"Grow", "TryGrow", "Shrink", "Split", "Close", "Reclaim", "PanicAcquire", "PanicRelease", "PanicSpill", "SetLimit"}

func (o exOp) String() string { return fmt.Sprintf("%s(r%d, %d)", exOpNames[o.kind], o.res, o.n) }

// errPlanted is the value every planted panic raises.
var errPlanted = errors.New("planted panic")

// Invariant checked: over random sequences of Grow, TryGrow, Shrink, Split,
// Close and Reclaim on both unified pools, with panics planted in the next
// Acquire, the next Release or the next Spiller call, after every step
// (whether it panicked or not) the books are exact — upstream's figure
// equals Held; Held = Reserved − Overcommit + Slack + Owed; nothing is in
// flight; slack ≤ 2 chunks; every open reservation's size equals a simple
// model's (a panicked grow adds nothing, a shrink whose Release panicked
// still gave its bytes back, a Split moves bytes) and they sum to Reserved —
// after every reservation is closed the pool holds nothing but bytes whose
// last release panicked (owed), and after the pool's Close every figure is
// 0 and upstream holds nothing.
func TestUnifiedBooksStayExactUnderPanicsSplitsAndCloses(t *testing.T) {
	for _, kind := range []string{"greedy", "fair"} {
		for _, chunk := range []int64{0, 1024} {
			t.Run(fmt.Sprintf("%s/chunk=%d", kind, chunk), func(t *testing.T) {
				runExactnessProperty(t, kind, chunk)
			})
		}
	}
}

func runExactnessProperty(t *testing.T, kind string, chunk int64) {
	params := gopter.DefaultTestParametersWithSeed(proptest.Seed(t))
	params.MinSuccessfulTests = 150
	params.MaxSize = 120
	opGen := gopter.CombineGens(gen.IntRange(0, 14), gen.IntRange(0, 63), gen.Int64Range(0, 4000)).
		Map(func(v []any) exOp {
			// Weights: 3 Grow, 3 TryGrow, 2 Shrink, 1 each for the rest.
			k := [...]int{0, 0, 0, 1, 1, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9}[v[0].(int)]
			return exOp{kind: k, res: v[1].(int), n: v[2].(int64)}
		})

	props := gopter.NewProperties(params)
	props.Property("books stay exact", prop.ForAll(func(ops []exOp) string {
		up := fakeupstream.New()
		p := unified(t, kind, up, 30_000, pool.WithChunkSize(chunk))
		var (
			open                                      []*pool.Reservation
			sizes                                     = map[*pool.Reservation]int64{}
			panicAcquire, panicRelease, panicSpill    bool
			byConsumer                                = map[*pool.Consumer][]*pool.Reservation{}
			plantedAcquire, plantedRelease, plantedSp int
		)
		up.OnAcquire(func(int64) {
			if panicAcquire {
				panicAcquire = false
				plantedAcquire++
				panic(errPlanted)
			}
		})
		up.OnRelease(func(int64) {
			if panicRelease {
				panicRelease = false
				plantedRelease++
				panic(errPlanted)
			}
		})
		spiller := func(c **pool.Consumer) pool.Spiller {
			return pool.SpillerFunc(func(int64) (int64, error) {
				if panicSpill {
					panicSpill = false
					plantedSp++
					panic(errPlanted)
				}
				var freed int64
				for _, r := range byConsumer[*c] {
					if !r.Closed() {
						freed += r.Free()
						sizes[r] = 0
					}
				}
				return freed, nil
			})
		}
		var c0, c1 *pool.Consumer
		c0 = pool.NewConsumer("c0").WithSpiller(spiller(&c0))
		c1 = pool.NewConsumer("c1").WithSpiller(spiller(&c1))
		c2 := pool.NewConsumer("c2")
		for _, c := range []*pool.Consumer{c0, c1, c2} {
			r := c.Register(p)
			open = append(open, r)
			byConsumer[c] = append(byConsumer[c], r)
		}

		// step runs one op; a planted panic must come out as the planted
		// value, unchanged.
		step := func(o exOp) (msg string) {
			defer func() {
				if v := recover(); v != nil && v != errPlanted {
					msg = fmt.Sprintf("%v panicked with %v", o, v)
				}
			}()
			if len(open) == 0 && o.kind <= 4 {
				return ""
			}
			var r *pool.Reservation
			if len(open) > 0 {
				r = open[o.res%len(open)]
			}
			switch exOpNames[o.kind] {
			case "Grow":
				r.Grow(o.n)
				sizes[r] += o.n
			case "TryGrow":
				if r.TryGrow(o.n) == nil {
					sizes[r] += o.n
				}
			case "Shrink":
				n := r.Size() * (o.n % 1001) / 1000
				sizes[r] -= n // given back even if Release panics
				r.Shrink(n)
			case "Split":
				n := r.Size() * (o.n % 1001) / 1000
				s := r.Split(n)
				sizes[r] -= n
				sizes[s] = n
				open = append(open, s)
				byConsumer[s.Consumer()] = append(byConsumer[s.Consumer()], s)
			case "Close":
				open = append(open[:o.res%len(open)], open[o.res%len(open)+1:]...)
				delete(sizes, r)
				r.Close()
			case "Reclaim":
				before := up.Held()
				freed, err := p.Reclaim(o.n)
				if err == nil && freed != before-up.Held() {
					return fmt.Sprintf("%v: Reclaim says %d freed, upstream dropped %d", o, freed, before-up.Held())
				}
			case "PanicAcquire":
				panicAcquire = true
			case "PanicRelease":
				panicRelease = true
			case "PanicSpill":
				panicSpill = true
			case "SetLimit":
				up.SetLimit(o.n * 8)
			}
			return ""
		}

		for i, o := range ops {
			if msg := step(o); msg != "" {
				return fmt.Sprintf("step %d: %s", i, msg)
			}
			for _, r := range open {
				if r.Size() != sizes[r] {
					return fmt.Sprintf("step %d %v: %s has %d, model %d", i, o, r, r.Size(), sizes[r])
				}
			}
			if msg := unifiedInvariantViolation(p, up.Held(), chunk, open...); msg != "" {
				return fmt.Sprintf("step %d %v: %s", i, o, msg)
			}
		}
		panicAcquire, panicRelease, panicSpill = false, false, false
		for _, r := range open {
			r.Close()
		}
		// An idle pool holds nothing but what upstream refused to take
		// back (a planted panic in the last consumer's final release).
		if s := zeroCounters(p.Stats()); s != (pool.UnifiedStats{Held: s.Owed, Owed: s.Owed}) || up.Held() != s.Held {
			return fmt.Sprintf("after every reservation's Close: %+v, upstream %d", s, up.Held())
		}
		if err := p.Close(); err != nil {
			return fmt.Sprintf("pool Close: %v", err)
		}
		if s := zeroCounters(p.Stats()); s != (pool.UnifiedStats{}) || up.Held() != 0 {
			return fmt.Sprintf("after the pool's Close: %+v, upstream %d", s, up.Held())
		}
		return ""
	}, gen.SliceOf(opGen)))
	props.TestingRun(t)
}
