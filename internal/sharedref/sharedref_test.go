package sharedref_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/nativepool/nativepool/internal/sharedref"
)

func TestSharedRefDeletesAtCloseWhenUnused(t *testing.T) {
	refs := &refLog{}
	s := sharedref.New(0x42, refs.delete)
	ref, ok := s.Use()
	require.True(t, ok)
	assert.Equal(t, uintptr(0x42), ref)
	s.Done()
	assert.Empty(t, refs.list())
	s.Close()
	s.Close()
	assert.Equal(t, []uintptr{0x42}, refs.list())
	_, ok = s.Use()
	assert.False(t, ok, "no use after close")
}

func TestSharedRefDefersTheDeleteToTheLastUse(t *testing.T) {
	refs := &refLog{}
	s := sharedref.New(0x42, refs.delete)
	_, ok1 := s.Use()
	_, ok2 := s.Use()
	require.True(t, ok1 && ok2)
	s.Close() // e.g. closeReservation0 from inside the spiller's own upcall
	assert.Empty(t, refs.list(), "still in use")
	s.Done()
	assert.Empty(t, refs.list())
	s.Done()
	assert.Equal(t, []uintptr{0x42}, refs.list())
}

func TestSharedRefZeroAndNilAreClosed(t *testing.T) {
	var zero sharedref.Ref
	_, ok := zero.Use()
	assert.False(t, ok)
	var nilRef *sharedref.Ref
	_, ok = nilRef.Use()
	assert.False(t, ok)
	nilRef.Close()
}

// TestSharedRefConcurrentUseAndCloseDeletesExactlyOnce races users against
// close; it checks that the ref is deleted once, never while a use that
// succeeded is still running. Run with -race.
func TestSharedRefConcurrentUseAndCloseDeletesExactlyOnce(t *testing.T) {
	for range 200 {
		refs := &refLog{}
		s := sharedref.New(0x7, refs.delete)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		g, ctx := errgroup.WithContext(ctx)
		for range 4 {
			g.Go(func() error {
				for range 50 {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					if _, ok := s.Use(); ok {
						if len(refs.list()) != 0 {
							t.Error("ref deleted while in use")
						}
						s.Done()
					}
				}
				return nil
			})
		}
		g.Go(func() error { s.Close(); return nil })
		require.NoError(t, g.Wait())
		cancel()
		assert.Equal(t, []uintptr{0x7}, refs.list())
	}
}

// refLog records the references a Ref deletes, standing in for the JVM's
// DeleteGlobalRef.
type refLog struct {
	mu      sync.Mutex
	deleted []uintptr
}

func (l *refLog) delete(ref uintptr) {
	l.mu.Lock()
	l.deleted = append(l.deleted, ref)
	l.mu.Unlock()
}

func (l *refLog) list() []uintptr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]uintptr(nil), l.deleted...)
}
