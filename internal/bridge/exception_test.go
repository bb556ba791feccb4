package bridge

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestJavaExceptionErrorText(t *testing.T) {
	for _, tc := range []struct {
		e    *JavaException
		want string
	}{
		{NewJavaException("java.lang.InterruptedException", "", "acquireMemory", 1, nil), "java.lang.InterruptedException (in acquireMemory)"},
		{NewJavaException("java.lang.IllegalStateException", "task 3 completed", "releaseMemory", 1, nil), "java.lang.IllegalStateException: task 3 completed (in releaseMemory)"},
		{&JavaException{}, "java exception"},
	} {
		assert.Equal(t, tc.want, tc.e.Error())
	}
}

func TestJavaExceptionRefIsTakenOrDeletedExactlyOnce(t *testing.T) {
	refs := &refLog{}
	e := NewJavaException("X", "", "spill", 0x10, refs.delete)
	assert.Equal(t, uintptr(0x10), e.Take())
	e.Discard()
	assert.Empty(t, refs.list(), "a taken ref is the taker's to delete")

	e = NewJavaException("X", "", "spill", 0x20, refs.delete)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); e.Discard() }()
	}
	wg.Wait()
	assert.Equal(t, []uintptr{0x20}, refs.list())
	assert.Zero(t, e.Take())
}
