package pool

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnboundedNeverRefuses, however large the request.
func TestUnboundedNeverRefuses(t *testing.T) {
	p := NewUnbounded()
	r := NewConsumer("u").Register(p)
	require.NoError(t, r.TryGrow(math.MaxInt64/2))
	require.NoError(t, r.TryGrow(math.MaxInt64/2))
	assert.Equal(t, int64(math.MaxInt64/2)*2, p.Reserved())
	r.Close()
	assert.Equal(t, int64(0), p.Reserved())
	assert.Equal(t, Limit{Kind: Infinite}, p.Limit())
	assert.Equal(t, "unbounded", p.Name())
}

// TestUnboundedStringShowsUsage in DataFusion's form.
func TestUnboundedStringShowsUsage(t *testing.T) {
	p := NewUnbounded()
	assert.Equal(t, "unbounded(used: 0.0 B)", p.String())
	r := NewConsumer("u").Register(p)
	r.Grow(2048)
	assert.Equal(t, "unbounded(used: 2.0 KB)", p.String())
}

// TestUnboundedTracksPeak although it never limits.
func TestUnboundedTracksPeak(t *testing.T) {
	p := NewUnbounded()
	w, ok := As[Watcher](p)
	require.True(t, ok)
	r := NewConsumer("u").Register(p)
	r.Grow(300)
	r.Shrink(200)
	require.NoError(t, r.TryGrow(50))
	assert.Equal(t, int64(300), w.Peak())
	assert.Equal(t, int64(150), p.Reserved())
}
