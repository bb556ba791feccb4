package pool_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/nativepool/nativepool/internal/proptest"
	"github.com/nativepool/nativepool/pool"
)

const (
	acctPropLimit = 2000 // the greedy pool's size
	acctPropMaxN  = 700  // largest n a command uses
	acctPropKinds = 10
)

// acctOp is one command on an account (or on a second consumer of the
// same pool, which makes the account's grows meet refusals).
type acctOp struct {
	Kind int
	N    int64
}

func (o acctOp) String() string {
	names := [...]string{"try_grow", "grow", "shrink", "try_resize", "resize", "clear",
		"release_slack", "spill", "other_try_grow", "other_shrink"}
	return fmt.Sprintf("%s(%d)", names[o.Kind], o.N)
}

// acctModel is what the account must agree with: the bytes the operator
// uses, and the greedy pool's rule (a grow that crosses for need bytes
// succeeds iff need fits in what the pool has left).
type acctModel struct {
	q     int64
	p     pool.Pool
	a     *pool.Account
	other *pool.Reservation
	used  int64
}

// apply runs op on the account and the model; it returns a disagreement,
// or "".
func (m *acctModel) apply(op acctOp) string {
	n := op.N
	switch op.Kind {
	case 0: // try_grow
		need := n - m.a.Slack()
		fits := need <= 0 || m.p.Reserved()+need <= acctPropLimit
		err := m.a.TryGrow(n)
		if (err == nil) != fits {
			return fmt.Sprintf("TryGrow(%d) returned %v; the model says fits=%t", n, err, fits)
		}
		if err == nil {
			m.used += n
		}
	case 1: // grow
		m.a.Grow(n)
		m.used += n
	case 2: // shrink, of at most what is used
		n %= m.used + 1
		m.a.Shrink(n)
		m.used -= n
	case 3: // try_resize
		need := n - m.used - m.a.Slack()
		fits := n <= m.used || need <= 0 || m.p.Reserved()+need <= acctPropLimit
		err := m.a.TryResize(n)
		if (err == nil) != fits {
			return fmt.Sprintf("TryResize(%d) returned %v; the model says fits=%t", n, err, fits)
		}
		if err == nil {
			m.used = n
		}
	case 4: // resize
		m.a.Resize(n)
		m.used = n
	case 5: // clear
		held := m.a.Reservation().Size()
		if got := m.a.Clear(); got != held {
			return fmt.Sprintf("Clear returned %d; the reservation held %d", got, held)
		}
		m.used = 0
	case 6: // release_slack
		slack := m.a.Slack()
		if got := m.a.ReleaseSlack(); got != slack {
			return fmt.Sprintf("ReleaseSlack returned %d; the slack was %d", got, slack)
		}
	case 7: // spill: the operator's spill frees half of what it uses
		before := m.a.Reservation().Size()
		slack := m.a.Slack()
		called := false
		freed, err := m.a.Spill(n, func(int64) error {
			called = true
			m.a.Shrink(m.used / 2)
			m.used -= m.used / 2
			return nil
		})
		if err != nil {
			return fmt.Sprintf("Spill(%d): %v", n, err)
		}
		if called != (slack < n) {
			return fmt.Sprintf("Spill(%d) with slack %d called the operator: %t", n, slack, called)
		}
		if got := before - m.a.Reservation().Size(); got != freed {
			return fmt.Sprintf("Spill(%d) returned %d; the reservation shrank by %d", n, freed, got)
		}
	case 8: // other_try_grow
		_ = m.other.TryGrow(n)
	case 9: // other_shrink
		m.other.Shrink(n % (m.other.Size() + 1))
	}
	return ""
}

// checkInvariants: the account's size plus its local slack equals what
// its reservation holds; the account's size is the model's; the slack is
// never negative nor above twice the quantum; the pool's reserved bytes
// are the two reservations' sizes.
func (m *acctModel) checkInvariants() string {
	a, r := m.a, m.a.Reservation()
	switch {
	case a.Used()+a.Slack() != r.Size():
		return fmt.Sprintf("used %d + slack %d != reservation %d", a.Used(), a.Slack(), r.Size())
	case a.Used() != m.used:
		return fmt.Sprintf("used %d, model %d", a.Used(), m.used)
	case a.Slack() < 0 || a.Slack() > 2*m.q:
		return fmt.Sprintf("slack %d outside [0, 2Q=%d]", a.Slack(), 2*m.q)
	case m.p.Reserved() != r.Size()+m.other.Size():
		return fmt.Sprintf("pool reserved %d != %d + %d", m.p.Reserved(), r.Size(), m.other.Size())
	}
	return ""
}

// TestAccountAgreesWithItsModel runs random command sequences on an
// account over a greedy pool shared with a second consumer, for several
// quanta, and checks after every step the invariant the account exists
// for: its size plus its local slack equals what its reservation holds
// (and the other invariants of acctModel.checkInvariants); TryGrow and
// TryResize succeed exactly when the model's pool has room for what the
// slack does not cover; Spill reports what the reservation shrank by and
// calls the operator only when the slack falls short. After Close the pool
// holds only the other consumer's bytes.
func TestAccountAgreesWithItsModel(t *testing.T) {
	seed := proptest.Seed(t)
	opGen := gen.Struct(reflect.TypeOf(acctOp{}), map[string]gopter.Gen{
		"Kind": gen.IntRange(0, acctPropKinds-1),
		"N":    gen.Int64Range(0, acctPropMaxN),
	})
	for _, q := range []int64{1, 7, 100, 1000} {
		t.Run(fmt.Sprintf("quantum=%d", q), func(t *testing.T) {
			params := gopter.DefaultTestParametersWithSeed(seed)
			params.MinSuccessfulTests = 200
			params.MaxSize = 120
			props := gopter.NewProperties(params)
			props.Property("matches model", prop.ForAll(func(ops []acctOp) string {
				p := pool.NewGreedy(acctPropLimit)
				m := &acctModel{q: q, p: p, other: pool.NewConsumer("other").Register(p)}
				m.a = pool.NewAccount(pool.NewConsumer("op").Register(p), q)
				for i, op := range ops {
					if v := m.apply(op); v != "" {
						return fmt.Sprintf("command %d %s: %s", i, op, v)
					}
					if v := m.checkInvariants(); v != "" {
						return fmt.Sprintf("after command %d %s: %s", i, op, v)
					}
				}
				m.a.Close()
				if p.Reserved() != m.other.Size() {
					return fmt.Sprintf("after Close the pool holds %d, the other consumer %d", p.Reserved(), m.other.Size())
				}
				m.other.Close()
				return ""
			}, gen.SliceOf(opGen)))
			props.TestingRun(t)
		})
	}
}
