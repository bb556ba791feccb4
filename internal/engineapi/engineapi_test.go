package engineapi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/bridge"
	"github.com/nativepool/nativepool/pool"
)

func TestJoinTaskPoolSharesTheJavaOpenedPoolAndKeepsItOpenUntilReleased(t *testing.T) {
	b, _ := newTestBridge(t)
	up := newFakeUpstream(1 << 20)
	ph := mustOpen(t, b, 11, bridge.KindFairUnified, 1<<20, 0, up)

	h, err := JoinTaskPool(b, 11)
	require.NoError(t, err)
	res := pool.NewConsumer("engine-sort").Register(h.Pool())
	require.NoError(t, res.TryGrow(4096))
	assert.Equal(t, int64(4096), up.Held(), "the engine's consumer borrows from the task's upstream")
	stats, err := b.PoolStats(ph)
	require.NoError(t, err)
	assert.Equal(t, int64(4096), stats[bridge.StatReserved], "poolStats0 counts the engine's consumer")

	require.NoError(t, b.ClosePool(ph))
	assert.Zero(t, up.Closes(), "the engine's reference keeps the pool open after Java closed its handle")
	res.Shrink(4096)
	assert.Zero(t, up.Held())
	res.Close()
	h.Close()
	assert.Equal(t, int64(1), up.Closes(), "the last reference closes the pool and its upstream")
	assert.Zero(t, b.LiveTasks())
	up.requireSane(t)
}

func TestJoinTaskPoolWithoutAnOpenPoolIsIllegalStateAndCreatesNothing(t *testing.T) {
	b, _ := newTestBridge(t)
	_, err := JoinTaskPool(b, 5)
	require.ErrorIs(t, err, ErrIllegalState)
	assert.Equal(t, "jni: JoinTaskPool(task 5): the task has no open pool (open it from Java with TaskPool first): illegal state", err.Error())
	assert.Equal(t, bridge.ThrowIllegalState, bridge.Settle(BridgeError(err)).Kind)
	assert.Zero(t, b.LiveTasks(), "a failed join leaves no entry behind")

	// After the task's last handle closed, a join fails the same way: it
	// never revives the closed pool.
	up := newFakeUpstream(1 << 20)
	ph := mustOpen(t, b, 5, bridge.KindGreedyUnified, 0, 0, up)
	require.NoError(t, b.ClosePool(ph))
	_, err = JoinTaskPool(b, 5)
	require.ErrorIs(t, err, ErrIllegalState)
	assert.Equal(t, int64(1), up.Closes())
	assert.Zero(t, b.LiveTasks())
}

// engineSpiller frees its whole reservation when asked.
type engineSpiller struct {
	res   *pool.Reservation
	calls int
}

func (s *engineSpiller) Spill(int64) (int64, error) {
	s.calls++
	return s.res.Free(), nil
}

func TestSparkSpillOfTheTaskReachesAnEngineConsumersSpiller(t *testing.T) {
	b, _ := newTestBridge(t)
	up := newFakeUpstream(1 << 20)
	ph := mustOpen(t, b, 21, bridge.KindFairUnified, 1<<20, 0, up)
	h, err := JoinTaskPool(b, 21)
	require.NoError(t, err)
	defer h.Close()
	sp := &engineSpiller{}
	sp.res = pool.NewConsumer("engine-sort").WithSpiller(sp).Register(h.Pool())
	defer sp.res.Close()
	require.NoError(t, sp.res.TryGrow(10_000))

	freed, err := b.Reclaim(ph, 10_000) // what the task owner's spill calls
	require.NoError(t, err)
	assert.Equal(t, int64(10_000), freed)
	assert.Equal(t, 1, sp.calls)
	assert.Zero(t, up.Held())
	require.NoError(t, b.ClosePool(ph))
	up.requireSane(t)
}

func TestEngineErrorsThrowTheirJavaExceptionWithTheErrorText(t *testing.T) {
	refs := &refLog{}
	java := bridge.NewJavaException("java.lang.InterruptedException", "", "acquireMemory", 0x30, refs.delete)
	defer java.Discard()
	for _, tc := range []struct {
		name string
		err  error
		kind bridge.ThrowKind
		msg  string
	}{
		{"nil", nil, bridge.ThrowNone, ""},
		{"illegal argument", fmt.Errorf("sort: push0: bad handle 0x1: %w", ErrIllegalArgument), bridge.ThrowIllegalArgument, "sort: push0: bad handle 0x1: illegal argument"},
		{"illegal state", fmt.Errorf("sort: next0 before finish0: %w", ErrIllegalState), bridge.ThrowIllegalState, "sort: next0 before finish0: illegal state"},
		{"pool's invalid size", fmt.Errorf("sort: %w", pool.ErrInvalidSize), bridge.ThrowIllegalArgument, "sort: invalid size"},
		{"pool closed", fmt.Errorf("sort: %w", pool.ErrClosed), bridge.ThrowIllegalState, "sort: " + pool.ErrClosed.Error()},
		{"plain", errors.New("sort: disk full"), bridge.ThrowRuntime, "sort: disk full"},
		{"java exception wins over the sentinel", fmt.Errorf("sort: %w: %w", ErrIllegalState, java), bridge.ThrowJava, java.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := bridge.Settle(BridgeError(tc.err))
			assert.Equal(t, tc.kind, f.Kind)
			assert.Equal(t, tc.msg, f.Msg)
		})
	}
	assert.Empty(t, refs.list(), "settling does not delete the ref it rethrows")
}

// An engine's table tells closed handles from forged ones under its own tag,
// even after the slot was reused, and refuses jni's own tags.
func TestEngineHandleTableTellsClosedFromForgedUnderItsOwnTag(t *testing.T) {
	tab := NewHandleTable[string]('S', "engine", "operator")
	h, err := tab.Insert("a")
	require.NoError(t, err)
	_, err = tab.Remove(h)
	require.NoError(t, err)
	h2, err := tab.Insert("b") // reuses the slot under the next generation
	require.NoError(t, err)

	_, err = tab.Get(h)
	require.ErrorIs(t, err, ErrIllegalState)
	require.EqualError(t, err, fmt.Sprintf("engine: operator handle 0x%x is closed: illegal state", h))
	_, err = tab.Get(h2 + 1)
	require.ErrorIs(t, err, ErrIllegalArgument)
	_, err = tab.Get(int64(0x50)<<56 | 1) // a pool handle (tag 'P')
	require.ErrorIs(t, err, ErrIllegalArgument)

	var seen []string
	tab.Each(func(v string) { seen = append(seen, v); _, _ = tab.Remove(h2) })
	require.Equal(t, []string{"b"}, seen)
	require.Zero(t, tab.Len())
	require.Panics(t, func() { NewHandleTable[int]('P', "engine", "operator") })
}
