package jni

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

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

func TestSettlePrefersTheJavaExceptionAndDiscardsTheRest(t *testing.T) {
	refs := &refLog{}
	a := newJavaException("A", "first", "releaseMemory", 0xa, refs.delete)
	b := newJavaException("B", "second", "acquireMemory", 0xb, refs.delete)
	c := newJavaException("C", "third", "spill", 0xc, refs.delete)

	// The error's own exception wins over earlier swallowed ones.
	f := settle(fmt.Errorf("wrapped: %w", b), []*JavaException{a, b, c})
	assert.Equal(t, failure{kind: throwJava, msg: "B: second (in acquireMemory)", java: b}, f)
	assert.ElementsMatch(t, []uintptr{0xa, 0xc}, refs.list())
	assert.Equal(t, uintptr(0xb), b.take(), "the chosen ref is left for the export")
}

func TestSettleRethrowsASwallowedExceptionOverAGoError(t *testing.T) {
	refs := &refLog{}
	a := newJavaException("A", "", "releaseMemory", 0xa, refs.delete)
	f := settle(fmt.Errorf("x: %w", pool.ErrInvalidSize), []*JavaException{a})
	assert.Same(t, a, f.java)
	assert.Empty(t, refs.list())
}

func TestSettleWithoutExceptionsClassifiesTheError(t *testing.T) {
	assert.Equal(t, failure{}, settle(nil, nil))
	err := fmt.Errorf("nativepool: reservation handle 0x5 is closed: %w", errStaleHandle)
	assert.Equal(t, failure{kind: throwIllegalState, msg: "nativepool: reservation handle 0x5 is closed: stale handle"}, settle(err, nil))
}
