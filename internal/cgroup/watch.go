package cgroup

import "sync"

// Watch delivers the kernel's wake-ups for a group (NotifyAbove,
// NotifyPressure) to a watcher that otherwise samples at its own pace: a
// wake-up says "sample now", never what the sample will show. One
// goroutine waits for the kernel until Close.
type Watch struct {
	c    chan struct{}
	stop func() error // ends the goroutine, waits for it, releases its files
	once sync.Once
	err  error
}

// newWatch returns a Watch whose stop ends what delivers to its channel.
func newWatch(c chan struct{}, stop func() error) *Watch {
	return &Watch{c: c, stop: stop}
}

// C returns the channel that receives one value per kernel event. Events
// are coalesced: the channel holds at most one, and an event that finds it
// full is dropped, since the watcher's next sample sees its cause anyway.
// The channel is never closed.
func (w *Watch) C() <-chan struct{} { return w.c }

// Close ends the watch: it stops the goroutine, waits for it to return and
// closes the file descriptors. It is idempotent and safe to call from
// several goroutines; every call returns the first call's result, which
// includes the error that ended the goroutine early if one did (the
// group's file failed, as when the group is removed).
func (w *Watch) Close() error {
	w.once.Do(func() { w.err = w.stop() })
	return w.err
}
