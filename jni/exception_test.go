package jni

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJavaExceptionErrorText(t *testing.T) {
	for _, tc := range []struct {
		e    *JavaException
		want string
	}{
		{newJavaException("java.lang.InterruptedException", "", "acquireMemory", 1, nil), "java.lang.InterruptedException (in acquireMemory)"},
		{newJavaException("java.lang.IllegalStateException", "task 3 completed", "releaseMemory", 1, nil), "java.lang.IllegalStateException: task 3 completed (in releaseMemory)"},
		{&JavaException{}, "java exception"},
	} {
		assert.Equal(t, tc.want, tc.e.Error())
	}
}

func TestJavaExceptionRefIsTakenOrDeletedExactlyOnce(t *testing.T) {
	refs := &refLog{}
	e := newJavaException("X", "", "spill", 0x10, refs.delete)
	assert.Equal(t, uintptr(0x10), e.take())
	e.discard()
	assert.Empty(t, refs.list(), "a taken ref is the taker's to delete")

	e = newJavaException("X", "", "spill", 0x20, refs.delete)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); e.discard() }()
	}
	wg.Wait()
	assert.Equal(t, []uintptr{0x20}, refs.list())
	assert.Zero(t, e.take())
}

func TestCurrentGoroutineIDDiffersAcrossGoroutinesAndIsStable(t *testing.T) {
	id := currentGoroutineID()
	require.Positive(t, id)
	assert.Equal(t, id, currentGoroutineID())
	other := make(chan int64)
	go func() { other <- currentGoroutineID() }()
	assert.NotEqual(t, id, <-other)
}

func TestExceptionRouterClaimsOnlyTheCallersOwnExceptions(t *testing.T) {
	var r exceptionRouter
	mark := r.mark()
	assert.Nil(t, r.claim(mark), "nothing recorded: the fast path")

	mine := newJavaException("Mine", "", "acquireMemory", 1, nil)
	theirs := newJavaException("Theirs", "", "acquireMemory", 2, nil)
	recorded, proceed := make(chan struct{}), make(chan struct{})
	theirClaim := make(chan []*JavaException)
	go func() { // another JVM thread's export
		m := r.mark()
		r.record(theirs)
		close(recorded)
		<-proceed
		theirClaim <- r.claim(m)
	}()
	<-recorded
	r.record(mine)
	assert.Equal(t, []*JavaException{mine}, r.claim(mark))
	assert.Nil(t, r.claim(mark), "claimed once")
	assert.Equal(t, 1, r.unclaimed(), "another goroutine's exception stays for it")
	close(proceed)
	assert.Equal(t, []*JavaException{theirs}, <-theirClaim)
	assert.Zero(t, r.unclaimed())
}

// TestExceptionRouterNestedCallsClaimTheirOwnLevel models Spark's spill
// re-entering Go: an outer export (grow0) records an exception, then a
// nested export on the same goroutine (reclaim0, called from Spark's spill
// inside acquireMemory) records another; each level claims only what was
// raised after its own mark.
func TestExceptionRouterNestedCallsClaimTheirOwnLevel(t *testing.T) {
	var r exceptionRouter
	outer := r.mark()
	early := newJavaException("Early", "", "releaseMemory", 1, nil)
	r.record(early)
	inner := r.mark()
	spill := newJavaException("Spill", "", "spill", 2, nil)
	r.record(spill)
	assert.Equal(t, []*JavaException{spill}, r.claim(inner))
	late := newJavaException("Late", "", "acquireMemory", 3, nil)
	r.record(late)
	assert.Equal(t, []*JavaException{early, late}, r.claim(outer))
	assert.Zero(t, r.unclaimed())
}

func TestExceptionRouterDiscardsTheOldestUnclaimedBeyondTheBound(t *testing.T) {
	var r exceptionRouter
	refs := &refLog{}
	done := make(chan struct{})
	go func() { // a goroutine that is not an export: nobody claims
		for i := range maxUnclaimed + 3 {
			r.record(newJavaException("X", "", "acquireMemory", uintptr(i+1), refs.delete))
		}
		close(done)
	}()
	<-done
	assert.Equal(t, maxUnclaimed, r.unclaimed())
	assert.Equal(t, []uintptr{1, 2, 3}, refs.list())
}
