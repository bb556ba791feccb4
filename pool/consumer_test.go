package pool

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConsumerIDsAreUnique ports test_id_uniqueness: 100 new consumers have
// distinct IDs, even with the same name.
func TestConsumerIDsAreUnique(t *testing.T) {
	ids := make(map[uint64]bool)
	for range 100 {
		c := NewConsumer("test")
		require.False(t, ids[c.ID()], "ID %d reused", c.ID())
		ids[c.ID()] = true
	}
}

// TestNewConsumerCannotSpillUntilConfigured.
func TestNewConsumerCannotSpillUntilConfigured(t *testing.T) {
	c := NewConsumer("sort")
	assert.Equal(t, "sort", c.Name())
	assert.False(t, c.CanSpill())
	assert.Nil(t, c.Spiller())
	assert.Same(t, c, c.WithCanSpill(true))
	assert.True(t, c.CanSpill())
	assert.Equal(t, "sort#"+uitoa(c.ID()), c.String())
}

// TestWithSpillerImpliesCanSpill.
func TestWithSpillerImpliesCanSpill(t *testing.T) {
	s := SpillerFunc(func(target int64) (int64, error) { return target, nil })
	c := NewConsumer("agg").WithSpiller(s)
	assert.True(t, c.CanSpill())
	freed, err := c.Spiller().Spill(7)
	require.NoError(t, err)
	assert.Equal(t, int64(7), freed)
}

// TestConsumerConfigurationPanicsAfterRegister: pools have already counted
// the consumer's spill flag, so it must not change.
func TestConsumerConfigurationPanicsAfterRegister(t *testing.T) {
	c := NewConsumer("late")
	r := c.Register(NewFair(100))
	defer r.Close()
	want := "pool: WithCanSpill on consumer " + c.String() + " after Register"
	assert.PanicsWithValue(t, want, func() { c.WithCanSpill(true) })
	assert.PanicsWithValue(t, "pool: WithSpiller on consumer "+c.String()+" after Register",
		func() { c.WithSpiller(SpillerFunc(func(int64) (int64, error) { return 0, nil })) })
	assert.False(t, c.CanSpill())
}

// TestEachRegisterIsOneRegistration: registering a consumer twice gives
// two registrations, each unregistered by its own last Close.
func TestEachRegisterIsOneRegistration(t *testing.T) {
	rec := &callRecordingPool{Pool: NewGreedy(100)}
	c := NewConsumer("twice")
	a, b := c.Register(rec), c.Register(rec)
	a.Close()
	b.Close()
	assert.Equal(t, []recordedCall{
		{op: "register", consumer: "twice"},
		{op: "register", consumer: "twice"},
		{op: "unregister", consumer: "twice"},
		{op: "unregister", consumer: "twice"},
	}, rec.take())
}

func uitoa(u uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			return string(b[i:])
		}
	}
}
