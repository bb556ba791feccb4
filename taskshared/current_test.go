package taskshared

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seen is what a goroutine found as its current task.
type seen struct {
	h  *Handle
	ok bool
}

func currentIn(start func(func())) seen {
	ch := make(chan seen, 1)
	start(func() {
		h, ok := Current()
		ch <- seen{h, ok}
	})
	select {
	case s := <-ch:
		return s
	case <-time.After(testTimeout):
		panic("goroutine never reported")
	}
}

func TestCurrentTaskIsInheritedByGoButNotByPlainGo(t *testing.T) {
	r, f := NewRegistry(quiet), &factory{}
	h := mustAcquire(t, r, 21, f.create)
	defer h.Close()

	Run(h, func() {
		got, ok := Current()
		require.True(t, ok)
		assert.Same(t, h, got)

		assert.Equal(t, seen{h, true}, currentIn(Go))
		// A grandchild started by Go inherits it too.
		assert.Equal(t, seen{h, true}, currentIn(func(fn func()) { Go(func() { Go(fn) }) }))
		assert.Equal(t, seen{nil, false}, currentIn(func(fn func()) { go fn() }))
	})
	_, ok := Current()
	assert.False(t, ok, "Run removes the value on return")
}

func TestRunRestoresTheOuterTaskAlsoAfterAPanic(t *testing.T) {
	r, f := NewRegistry(quiet), &factory{}
	outer := mustAcquire(t, r, 1, f.create)
	inner := mustAcquire(t, r, 2, f.create)
	defer outer.Close()
	defer inner.Close()

	Run(outer, func() {
		assert.Panics(t, func() {
			Run(inner, func() {
				got, _ := Current()
				assert.Same(t, inner, got)
				panic("operator failed")
			})
		})
		got, ok := Current()
		assert.True(t, ok)
		assert.Same(t, outer, got)
	})
	_, ok := Current()
	assert.False(t, ok)
}
