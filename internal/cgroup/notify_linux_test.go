package cgroup

import (
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// signalEventfd adds one to an eventfd's counter, as the kernel does for
// a threshold crossing.
func signalEventfd(t *testing.T, fd int) {
	t.Helper()
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, err := unix.Write(fd, one[:])
	require.NoError(t, err)
}

// received reports whether c delivers within d.
func received(c <-chan struct{}, d time.Duration) bool {
	select {
	case <-c:
		return true
	case <-time.After(d):
		return false
	}
}

// settledGoroutines waits up to 5 s for the goroutine count to come down
// to at most n (polled here, not in require.Eventually, whose own
// goroutines would count).
func settledGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), n, "goroutines left running")
}

// eventfdWatch is a Watch over a plain eventfd, which the test signals as
// the kernel would signal a registered one. The second result is a
// duplicate of the eventfd the test can write to after the Watch closed its
// own.
func eventfdWatch(t *testing.T) (*Watch, int) {
	t.Helper()
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	require.NoError(t, err)
	dup, err := unix.Dup(efd)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(dup) })
	w, err := startWatch(efd, unix.POLLIN, true)
	require.NoError(t, err)
	return w, dup
}

func TestWatchDeliversCoalescedEventsAndClosesWithoutLeaks(t *testing.T) {
	base := runtime.NumGoroutine()
	w, efd := eventfdWatch(t)

	signalEventfd(t, efd)
	require.True(t, received(w.C(), 5*time.Second), "one event, one value")
	assert.False(t, received(w.C(), 50*time.Millisecond), "the counter was drained: no second value")

	// Three events with nobody receiving: one value waits, the rest are
	// dropped.
	for range 3 {
		signalEventfd(t, efd)
		time.Sleep(20 * time.Millisecond)
	}
	assert.Len(t, w.C(), 1)
	<-w.C()
	assert.False(t, received(w.C(), 50*time.Millisecond))

	require.NoError(t, w.Close())
	require.NoError(t, w.Close(), "Close is idempotent")
	settledGoroutines(t, base)
	signalEventfd(t, efd)
	assert.False(t, received(w.C(), 50*time.Millisecond), "nothing delivers after Close")
}

func TestWatchCloseFromManyGoroutines(t *testing.T) {
	base := runtime.NumGoroutine()
	for range 20 {
		w, efd := eventfdWatch(t)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { assert.NoError(t, w.Close()) })
		}
		signalEventfd(t, efd)
		wg.Wait()
	}
	settledGoroutines(t, base)
}

func TestWatchEndsWhenItsFileFails(t *testing.T) {
	// A pipe whose writer closes polls as POLLHUP for ever, as a removed
	// group's file polls as POLLERR: the goroutine must end, not spin.
	base := runtime.NumGoroutine()
	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK))
	w, err := startWatch(p[0], unix.POLLIN, false)
	require.NoError(t, err)
	require.NoError(t, unix.Close(p[1]))
	require.True(t, received(w.C(), 5*time.Second), "a last wake-up, so the watcher samples")
	settledGoroutines(t, base)
	err = w.Close()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no longer signals")
	assert.Equal(t, err, w.Close())
}

func TestNotifyUnsupported(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		notify func() (*Watch, error)
	}{
		{"usage threshold on a v2 group", func() (*Watch, error) { return Group{Version: V2, Dir: dir}.NotifyAbove(1 << 30) }},
		{"usage threshold without memory.usage_in_bytes", func() (*Watch, error) { return Group{Version: V1, Dir: dir}.NotifyAbove(1 << 30) }},
		{"usage threshold without cgroup.event_control", func() (*Watch, error) {
			require.NoError(t, os.WriteFile(dir+"/memory.usage_in_bytes", []byte("0\n"), 0o644))
			return Group{Version: V1, Dir: dir}.NotifyAbove(1 << 30)
		}},
		{"pressure trigger on a v1 group", func() (*Watch, error) { return Group{Version: V1, Dir: dir}.NotifyPressure(100_000, 1_000_000) }},
		{"pressure trigger without memory.pressure (no v2 memory controller here, or PSI off)", func() (*Watch, error) {
			return Group{Version: V2, Dir: dir}.NotifyPressure(100_000, 1_000_000)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := tt.notify()
			require.ErrorIs(t, err, errors.ErrUnsupported)
			assert.Nil(t, w)
		})
	}
	t.Run("negative threshold", func(t *testing.T) {
		_, err := Group{Version: V1, Dir: dir}.NotifyAbove(-1)
		require.Error(t, err)
		assert.NotErrorIs(t, err, errors.ErrUnsupported)
	})
}
