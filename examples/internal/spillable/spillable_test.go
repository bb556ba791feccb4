package spillable_test

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/examples/internal/spillable"
)

func TestHeldByCallerIsTrueOnlyOnTheHoldersGoroutine(t *testing.T) {
	var m spillable.Mutex
	assert.False(t, m.HeldByCaller())
	m.Lock()
	assert.True(t, m.HeldByCaller())
	other := make(chan bool)
	go func() { other <- m.HeldByCaller() }()
	assert.False(t, <-other, "another goroutine does not hold it")
	m.Unlock()
	assert.False(t, m.HeldByCaller())
}

func TestTheFirstFailureSticks(t *testing.T) {
	var m spillable.Mutex
	first, second := errors.New("first"), errors.New("second")
	require.Same(t, first, m.Fail(first))
	require.Same(t, second, m.Fail(second), "Fail returns its argument")
	m.Lock()
	defer m.Unlock()
	assert.Same(t, first, m.ErrLocked())
}

func TestASecondConcurrentDriverCallPanicsNamingIt(t *testing.T) {
	var d spillable.Driver
	d.Begin("op: Push")
	assert.PanicsWithValue(t, "op: Next: called concurrently with another Push, Finish, Next or Close", func() { d.Begin("op: Next") })
	d.End()
	assert.NotPanics(t, func() { d.Begin("op: Next") }, "a call after End is fine")
	d.End()
}

// TestARequestedSpillFromTheLockHoldersGoroutineAnswersZeroWithoutSpilling:
// returning at all means no deadlock.
func TestARequestedSpillFromTheLockHoldersGoroutineAnswersZeroWithoutSpilling(t *testing.T) {
	var m spillable.Mutex
	s := spillable.NewSpills(&m, slog.New(slog.DiscardHandler), "op")
	called := false
	m.Lock()
	freed, err := s.Requested(100, func() (int64, error) { called = true; return 100, nil })
	m.Unlock()
	require.NoError(t, err)
	assert.Zero(t, freed)
	assert.False(t, called)
	assert.Equal(t, spillable.Counts{Requests: 1}, s.Counts())
}

func TestSpillsRunUnderTheLockAndCountWhatFreedBytes(t *testing.T) {
	var m spillable.Mutex
	s := spillable.NewSpills(&m, slog.New(slog.DiscardHandler), "op")
	underLock := func(freed int64) func() (int64, error) {
		return func() (int64, error) {
			assert.True(t, m.HeldByCaller(), "the spill runs under the operator's lock")
			return freed, nil
		}
	}
	for _, freed := range []int64{300, 0} {
		got, err := s.Requested(1000, underLock(freed))
		require.NoError(t, err)
		assert.Equal(t, freed, got)
		got, err = s.Self(underLock(freed))
		require.NoError(t, err)
		assert.Equal(t, freed, got)
	}
	s.NoteSelf(50)
	s.NoteSelf(0)
	assert.Equal(t, spillable.Counts{Self: 2, SelfBytes: 350, Requested: 1, Requests: 2}, s.Counts())
	assert.False(t, m.HeldByCaller(), "the lock is released")
}

func TestASpillsErrorIsReturnedWithWhatItFreed(t *testing.T) {
	var m spillable.Mutex
	s := spillable.NewSpills(&m, nil, "op")
	boom := errors.New("disk full")
	freed, err := s.Requested(10, func() (int64, error) { return 7, boom })
	require.ErrorIs(t, err, boom)
	assert.Equal(t, int64(7), freed)
}
