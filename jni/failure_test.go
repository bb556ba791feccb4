package jni

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
	je := newJavaException("java.lang.InterruptedException", "", "acquireMemory", 1, nil)
	for _, tc := range []struct {
		err  error
		want throwKind
	}{
		{nil, throwNone},
		{je, throwJava},
		{fmt.Errorf("pool: fair_unified: acquiring 8 bytes upstream for x#1: %w", je), throwJava},
		{fmt.Errorf("pool: TryGrow(-1): negative size: %w", pool.ErrInvalidSize), throwIllegalArgument},
		{fmt.Errorf("nativepool: invalid pool handle 0x0: %w", errInvalidHandle), throwIllegalArgument},
		{fmt.Errorf("nativepool: unknown kind: %w", errInvalidArgument), throwIllegalArgument},
		{fmt.Errorf("nativepool: pool handle 0x1 is closed: %w", errStaleHandle), throwIllegalState},
		{fmt.Errorf("pool: TryGrow(1) after Close: %w", pool.ErrClosed), throwIllegalState},
		{fmt.Errorf("taskshared: task 1: %w", taskshared.ErrSpecMismatch), throwIllegalState},
		{&pool.ExhaustedError{Msg: "no"}, throwRuntime},
		{errors.New("boom"), throwRuntime},
	} {
		assert.Equal(t, tc.want, classify(tc.err), "%v", tc.err)
	}
}

func TestSettleRethrowsTheFirstJavaExceptionInTheErrorAndDiscardsTheRest(t *testing.T) {
	refs := &refLog{}
	a := newJavaException("A", "first", "spill", 0xa, refs.delete)
	b := newJavaException("B", "second", "releaseMemory", 0xb, refs.delete)
	c := newJavaException("C", "third", "spill", 0xc, refs.delete)

	// What a reclaim returns: failed spillers and a failed release, joined.
	err := fmt.Errorf("reclaim: %w", errors.Join(fmt.Errorf("spiller: %w", a), b, errors.Join(c)))
	f := settle(err)
	assert.Equal(t, failure{kind: throwJava, msg: "A: first (in spill)", java: a}, f)
	assert.ElementsMatch(t, []uintptr{0xb, 0xc}, refs.list())
	assert.Equal(t, uintptr(0xa), a.take(), "the chosen ref is left for the export")
}

func TestSettlePrefersAJavaExceptionOverTheGoErrorItCaused(t *testing.T) {
	refs := &refLog{}
	a := newJavaException("A", "", "releaseMemory", 0xa, refs.delete)
	f := settle(errors.Join(fmt.Errorf("x: %w", pool.ErrClosed), a))
	assert.Same(t, a, f.java)
	assert.Empty(t, refs.list())
}

func TestSettleWithoutExceptionsClassifiesTheError(t *testing.T) {
	assert.Equal(t, failure{}, settle(nil))
	err := fmt.Errorf("nativepool: reservation handle 0x5 is closed: %w", errStaleHandle)
	assert.Equal(t, failure{kind: throwIllegalState, msg: "nativepool: reservation handle 0x5 is closed: stale handle"}, settle(err))
}

// A JavaException dropped on the way (the pool only logs some failures,
// such as a failed release of surplus slack after a successful TryGrow)
// does not keep its global ref: a cleanup deletes it once the exception is
// unreachable.
func TestADroppedJavaExceptionDeletesItsGlobalRefAfterGC(t *testing.T) {
	refs := &refLog{}
	func() {
		_ = newJavaException("A", "dropped", "releaseMemory", 0x77, refs.delete)
	}()
	require.Eventually(t, func() bool {
		runtime.GC()
		return slices.Contains(refs.list(), uintptr(0x77))
	}, 5*time.Second, 10*time.Millisecond)
}
