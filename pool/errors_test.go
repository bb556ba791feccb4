package pool

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInsufficientCapacityUsesDataFusionWording: the whole message, with
// the pool's String inside it.
func TestInsufficientCapacityUsesDataFusionWording(t *testing.T) {
	p := NewGreedy(100)
	r := NewConsumer("r1").Register(p)
	r.Grow(95)
	err := insufficientCapacity(r, 150, 5, p)
	assert.EqualError(t, err, "Resources exhausted: Failed to allocate additional 150.0 B for r1 with 95.0 B already allocated for this reservation - 5.0 B remain available for the total memory pool: greedy(used: 95.0 B, pool_size: 100.0 B)")
	require.ErrorIs(t, err, ErrResourcesExhausted)
	var ex *ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Nil(t, ex.Unwrap())
}

// TestSentinelsMatchThroughEveryDecorator: refusals from any pool, under
// any stack of decorators, match ErrResourcesExhausted; bad sizes match
// ErrInvalidSize; neither matches the other.
func TestSentinelsMatchThroughEveryDecorator(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	stacks := map[string]func() Pool{
		"greedy":                   func() Pool { return NewGreedy(10) },
		"fair":                     func() Pool { return NewFair(10) },
		"track(greedy)":            func() Pool { return NewTrackConsumers(NewGreedy(10), 3) },
		"logging(fair)":            func() Pool { return NewLogging(NewFair(10), logger) },
		"track(logging(greedy))":   func() Pool { return NewTrackConsumers(NewLogging(NewGreedy(10), logger), 3) },
		"logging(track(fair))":     func() Pool { return NewLogging(NewTrackConsumers(NewFair(10), 3), logger) },
		"track(track(greedy))":     func() Pool { return NewTrackConsumers(NewTrackConsumers(NewGreedy(10), 3), 3) },
		"logging(logging(greedy))": func() Pool { return NewLogging(NewLogging(NewGreedy(10), logger), logger) },
	}
	for name, mk := range stacks {
		t.Run(name, func(t *testing.T) {
			r := NewConsumer("c").WithCanSpill(true).Register(mk())
			defer r.Close()
			err := r.TryGrow(11)
			require.ErrorIs(t, err, ErrResourcesExhausted)
			assert.NotErrorIs(t, err, ErrInvalidSize)
			var ex *ExhaustedError
			require.ErrorAs(t, err, &ex)

			err = r.TryGrow(-1)
			require.ErrorIs(t, err, ErrInvalidSize)
			assert.NotErrorIs(t, err, ErrResourcesExhausted)
			_, err = r.TryShrink(1)
			require.ErrorIs(t, err, ErrInvalidSize)
		})
	}
}

// TestExhaustedErrorPrefixesAndUnwraps.
func TestExhaustedErrorPrefixesAndUnwraps(t *testing.T) {
	inner := &ExhaustedError{Msg: "inner"}
	outer := &ExhaustedError{Msg: "outer", Err: inner}
	assert.EqualError(t, outer, "Resources exhausted: outer")
	assert.Same(t, inner, errors.Unwrap(outer))
	assert.ErrorIs(t, fmt.Errorf("ctx: %w", outer), ErrResourcesExhausted)
	assert.NotErrorIs(t, outer, ErrClosed)
}

// TestLimitStringsFollowDataFusionsMemoryLimit.
func TestLimitStringsFollowDataFusionsMemoryLimit(t *testing.T) {
	assert.Equal(t, "Unknown", Limit{}.String())
	assert.Equal(t, "Infinite", NewUnbounded().Limit().String())
	assert.Equal(t, "Finite(100)", NewGreedy(100).Limit().String())
	assert.Equal(t, Limit{Kind: Finite, Bytes: 7}, NewFair(7).Limit())
	assert.Equal(t, Limit{Kind: Finite, Bytes: 7}, NewTrackConsumers(NewFair(7), 1).Limit())
	assert.Equal(t, Limit{Kind: Infinite}, NewLogging(NewUnbounded(), slog.New(slog.DiscardHandler)).Limit())
}
