package pool

import (
	"fmt"
	"sync/atomic"
)

// consumerIDs hands out Consumer IDs: a process-wide counter, like
// DataFusion's static atomic, so IDs are unique across every pool in the
// process and never reused. It is this package's only global state.
var consumerIDs atomic.Uint64

// Consumer names a memory user (an operator, a buffer cache) and says whether
// it can spill. It is identified by a process-unique ID that is never reused:
// two consumers with the same name are different consumers.
//
// Configure a Consumer (WithCanSpill, WithSpiller) before the first Register;
// afterwards those methods panic, because pools have already counted it.
// Once registered, a Consumer is safe for concurrent use. Build one with
// NewConsumer; the zero Consumer is not valid.
type Consumer struct {
	id       uint64
	name     string
	canSpill bool
	spiller  Spiller
	// registered is set by the first Register; it freezes canSpill and
	// spiller so pools never see them change.
	registered atomic.Bool
}

// NewConsumer returns an unspillable consumer named name with a fresh ID.
func NewConsumer(name string) *Consumer {
	return &Consumer{id: consumerIDs.Add(1), name: name}
}

// ID is the consumer's process-unique identifier.
func (c *Consumer) ID() uint64 { return c.id }

// Name is the name given to NewConsumer.
func (c *Consumer) Name() string { return c.name }

// CanSpill reports whether the consumer may be asked to spill; fair pools
// divide the spillable share among such consumers only.
func (c *Consumer) CanSpill() bool { return c.canSpill }

// Spiller is the consumer's spill callback, or nil.
func (c *Consumer) Spiller() Spiller { return c.spiller }

// WithCanSpill sets whether the consumer can spill and returns the same
// consumer. It panics after the consumer has been registered.
func (c *Consumer) WithCanSpill(canSpill bool) *Consumer {
	c.mustBeUnregistered("WithCanSpill")
	c.canSpill = canSpill
	return c
}

// WithSpiller sets the consumer's spill callback (which implies CanSpill) and
// returns the same consumer. It panics after the consumer has been registered.
func (c *Consumer) WithSpiller(s Spiller) *Consumer {
	c.mustBeUnregistered("WithSpiller")
	c.spiller = s
	c.canSpill = s != nil || c.canSpill
	return c
}

func (c *Consumer) mustBeUnregistered(op string) {
	if c.registered.Load() {
		panic(fmt.Sprintf("pool: %s on consumer %s#%d after Register", op, c.name, c.id))
	}
}

// Register registers the consumer with p and returns an empty reservation.
// Each call is one registration: p sees one Register now and one Unregister
// when the last reservation derived from this one (by Split, Take or
// NewEmpty) is closed.
func (c *Consumer) Register(p Pool) *Reservation {
	c.registered.Store(true)
	p.Register(c)
	reg := &registration{consumer: c}
	reg.bindEntries(p)
	reg.live.Store(1)
	return &Reservation{reg: reg, pool: p}
}

// bindEntries keeps in reg the consumer's entries in the pools of p's stack
// that have one, right after p.Register: see registration.tracked.
func (reg *registration) bindEntries(p Pool) {
	c := reg.consumer
	if t, ok := As[*TrackConsumers](p); ok {
		reg.tracked = t.lookup(c)
	}
	if f, ok := As[*fairPool](p); ok {
		reg.fair = f.entryOf(c)
	}
	if u, ok := As[*unifiedPool](p); ok {
		reg.unified = u.entryOf(c)
	}
}

// String renders the consumer as DataFusion's reports do: name#id.
func (c *Consumer) String() string { return fmt.Sprintf("%s#%d", c.name, c.id) }
