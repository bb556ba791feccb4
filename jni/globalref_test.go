package jni

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
)

func TestSharedRefDeletesAtCloseWhenUnused(t *testing.T) {
	refs := &refLog{}
	s := newSharedRef(0x42, refs.delete)
	ref, ok := s.use()
	require.True(t, ok)
	assert.Equal(t, uintptr(0x42), ref)
	s.done()
	assert.Empty(t, refs.list())
	s.close()
	s.close()
	assert.Equal(t, []uintptr{0x42}, refs.list())
	_, ok = s.use()
	assert.False(t, ok, "no use after close")
}

func TestSharedRefDefersTheDeleteToTheLastUse(t *testing.T) {
	refs := &refLog{}
	s := newSharedRef(0x42, refs.delete)
	_, ok1 := s.use()
	_, ok2 := s.use()
	require.True(t, ok1 && ok2)
	s.close() // e.g. closeReservation0 from inside the spiller's own upcall
	assert.Empty(t, refs.list(), "still in use")
	s.done()
	assert.Empty(t, refs.list())
	s.done()
	assert.Equal(t, []uintptr{0x42}, refs.list())
}

func TestSharedRefZeroAndNilAreClosed(t *testing.T) {
	var zero sharedRef
	_, ok := zero.use()
	assert.False(t, ok)
	var nilRef *sharedRef
	_, ok = nilRef.use()
	assert.False(t, ok)
	nilRef.close()
}

// TestSharedRefConcurrentUseAndCloseDeletesExactlyOnce races users against
// close; it checks that the ref is deleted once, never while a use that
// succeeded is still running. Run with -race.
func TestSharedRefConcurrentUseAndCloseDeletesExactlyOnce(t *testing.T) {
	for range 200 {
		refs := &refLog{}
		s := newSharedRef(0x7, refs.delete)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		g, ctx := errgroup.WithContext(ctx)
		for range 4 {
			g.Go(func() error {
				for range 50 {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					if _, ok := s.use(); ok {
						if len(refs.list()) != 0 {
							t.Error("ref deleted while in use")
						}
						s.done()
					}
				}
				return nil
			})
		}
		g.Go(func() error { s.close(); return nil })
		require.NoError(t, g.Wait())
		cancel()
		assert.Equal(t, []uintptr{0x7}, refs.list())
	}
}
