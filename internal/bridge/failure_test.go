package bridge

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/pool"
	"github.com/nativepool/nativepool/taskshared"
)

func TestClassifyFollowsTheExceptionTableOfAPIMD(t *testing.T) {
	je := NewJavaException("java.lang.InterruptedException", "", "acquireMemory", 1, nil)
	for _, tc := range []struct {
		err  error
		want ThrowKind
	}{
		{nil, ThrowNone},
		{je, ThrowJava},
		{fmt.Errorf("pool: fair_unified: acquiring 8 bytes upstream for x#1: %w", je), ThrowJava},
		{fmt.Errorf("pool: TryGrow(-1): negative size: %w", pool.ErrInvalidSize), ThrowIllegalArgument},
		{fmt.Errorf("nativepool: invalid pool handle 0x0: %w", ErrInvalidHandle), ThrowIllegalArgument},
		{fmt.Errorf("nativepool: unknown Kind: %w", ErrInvalidArgument), ThrowIllegalArgument},
		{fmt.Errorf("nativepool: pool handle 0x1 is closed: %w", ErrStaleHandle), ThrowIllegalState},
		{fmt.Errorf("pool: TryGrow(1) after Close: %w", pool.ErrClosed), ThrowIllegalState},
		{fmt.Errorf("taskshared: task 1: %w", taskshared.ErrSpecMismatch), ThrowIllegalState},
		{&pool.ExhaustedError{Msg: "no"}, ThrowRuntime},
		{errors.New("boom"), ThrowRuntime},
	} {
		assert.Equal(t, tc.want, Classify(tc.err), "%v", tc.err)
	}
}

func TestSettleRethrowsTheFirstJavaExceptionInTheErrorAndDiscardsTheRest(t *testing.T) {
	refs := &refLog{}
	a := NewJavaException("A", "first", "spill", 0xa, refs.delete)
	b := NewJavaException("B", "second", "releaseMemory", 0xb, refs.delete)
	c := NewJavaException("C", "third", "spill", 0xc, refs.delete)

	// What a reclaim returns: failed spillers and a failed release, joined.
	err := fmt.Errorf("reclaim: %w", errors.Join(fmt.Errorf("spiller: %w", a), b, errors.Join(c)))
	f := Settle(err)
	assert.Equal(t, Failure{Kind: ThrowJava, Msg: "A: first (in spill)", Java: a}, f)
	assert.ElementsMatch(t, []uintptr{0xb, 0xc}, refs.list())
	assert.Equal(t, uintptr(0xa), a.Take(), "the chosen ref is left for the export")
}

func TestSettlePrefersAJavaExceptionOverTheGoErrorItCaused(t *testing.T) {
	refs := &refLog{}
	a := NewJavaException("A", "", "releaseMemory", 0xa, refs.delete)
	f := Settle(errors.Join(fmt.Errorf("x: %w", pool.ErrClosed), a))
	assert.Same(t, a, f.Java)
	assert.Empty(t, refs.list())
}

func TestSettleWithoutExceptionsClassifiesTheError(t *testing.T) {
	assert.Equal(t, Failure{}, Settle(nil))
	err := fmt.Errorf("nativepool: reservation handle 0x5 is closed: %w", ErrStaleHandle)
	assert.Equal(t, Failure{Kind: ThrowIllegalState, Msg: "nativepool: reservation handle 0x5 is closed: stale handle"}, Settle(err))
}

// A JavaException dropped on the way (the pool only logs some failures,
// such as a failed release of surplus slack after a successful TryGrow)
// does not keep its global ref: a cleanup deletes it once the exception is
// unreachable.
func TestADroppedJavaExceptionDeletesItsGlobalRefAfterGC(t *testing.T) {
	refs := &refLog{}
	func() {
		_ = NewJavaException("A", "dropped", "releaseMemory", 0x77, refs.delete)
	}()
	require.Eventually(t, func() bool {
		runtime.GC()
		return slices.Contains(refs.list(), uintptr(0x77))
	}, 5*time.Second, 10*time.Millisecond)
}
