package cgroup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// NotifyAbove returns a Watch woken when the v1 group's usage
// (memory.usage_in_bytes) crosses usageBytes, upwards or downwards: an
// eventfd registered through cgroup.event_control. Usage includes page
// cache, so a wake-up only says it is time to sample, never that memory is
// short. The kernel checks thresholds once per 128 pages charged or
// uncharged on a CPU, so a crossing is seen within about 512 KiB per CPU.
//
// The error wraps errors.ErrUnsupported when the group is not v1, a file
// is missing or the kernel refuses the registration, so the caller falls
// back to sampling at a fixed pace.
func (g Group) NotifyAbove(usageBytes int64) (*Watch, error) {
	if g.Version != V1 {
		return nil, fmt.Errorf("cgroup: usage threshold: %v has no cgroup.event_control: %w", g.Version, errors.ErrUnsupported)
	}
	if usageBytes < 0 {
		return nil, fmt.Errorf("cgroup: usage threshold %d is negative", usageBytes)
	}
	usage := g.Dir + "/memory.usage_in_bytes"
	ufd, err := unix.Open(usage, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, unsupported("usage threshold", usage, err)
	}
	defer unix.Close(ufd) // the registration holds what it needs of it
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("cgroup: usage threshold: eventfd: %w", err)
	}
	control := g.Dir + "/cgroup.event_control"
	if err := writeFile(control, unix.O_WRONLY, fmt.Sprintf("%d %d %d", efd, ufd, usageBytes)); err != nil {
		unix.Close(efd)
		return nil, unsupported("usage threshold", control, err)
	}
	w, err := startWatch(efd, unix.POLLIN, true)
	if err != nil {
		unix.Close(efd) // closing the eventfd also ends the registration
		return nil, err
	}
	return w, nil
}

// NotifyPressure returns a Watch woken when the v2 group's tasks together
// stall on memory for stallMicros within any windowMicros (a PSI "some"
// trigger on memory.pressure): reclaim has started to cost time, which is
// when a watcher should sample fast. The kernel wakes it at most once per
// window; it requires the window to be between 500 ms and 10 s, a
// multiple of 2 s unless the process has CAP_SYS_RESOURCE (an executor in
// a pod usually has not), and the stall to be at most the window.
//
// The error wraps errors.ErrUnsupported when the group is not v2,
// memory.pressure is missing or the kernel refuses the trigger, so the
// caller falls back to sampling at a fixed pace.
func (g Group) NotifyPressure(stallMicros, windowMicros int64) (*Watch, error) {
	if g.Version != V2 {
		return nil, fmt.Errorf("cgroup: pressure trigger: %v has no memory.pressure: %w", g.Version, errors.ErrUnsupported)
	}
	return notifyPressure(g.Dir+"/memory.pressure", stallMicros, windowMicros)
}

// notifyPressure registers a PSI "some" trigger on the pressure file name
// and watches it.
func notifyPressure(name string, stallMicros, windowMicros int64) (*Watch, error) {
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, unsupported("pressure trigger", name, err)
	}
	// The kernel's documented form, with its terminating NUL.
	trigger := "some " + strconv.FormatInt(stallMicros, 10) + " " + strconv.FormatInt(windowMicros, 10) + "\x00"
	if _, err := unix.Write(fd, []byte(trigger)); err != nil {
		unix.Close(fd)
		return nil, unsupported("pressure trigger", name, err)
	}
	w, err := startWatch(fd, unix.POLLPRI, false)
	if err != nil {
		unix.Close(fd) // closing the file removes the trigger
		return nil, err
	}
	return w, nil
}

// unsupported wraps an open or write failure on a group's file as
// errors.ErrUnsupported, with its cause.
func unsupported(what, name string, err error) error {
	return fmt.Errorf("cgroup: %s: %s: %w (%w)", what, name, errors.ErrUnsupported, err)
}

// writeFile writes s to name in one write.
func writeFile(name string, flags int, s string) error {
	fd, err := unix.Open(name, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	_, err = unix.Write(fd, []byte(s))
	return errors.Join(err, unix.Close(fd))
}

// startWatch starts the goroutine that polls fd for events and delivers
// each to the Watch's channel, and a second eventfd that Close writes to
// end it. drain reads the eventfd counter back to zero after each event
// (an eventfd stays readable until read; a PSI file's event is consumed by
// the poll itself). The Watch owns fd from then on, and closes it.
func startWatch(fd int, events int16, drain bool) (*Watch, error) {
	stopFD, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("cgroup: watch: eventfd: %w", err)
	}
	c := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() { done <- pollLoop(fd, events, stopFD, drain, c) }()
	stop := func() error {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		if _, err := unix.Write(stopFD, one[:]); err != nil {
			// Unreachable short of a counter overflow; the goroutine may
			// still be polling the descriptors, so they stay open.
			return fmt.Errorf("cgroup: watch: stop: %w", err)
		}
		loopErr := <-done
		return errors.Join(loopErr, unix.Close(fd), unix.Close(stopFD))
	}
	return newWatch(c, stop), nil
}

// pollLoop waits for events on fd until stopFD becomes readable, sending
// one value to c per event without blocking. It returns nil when stopped,
// and an error, after one last wake-up, when fd fails (POLLERR, POLLHUP,
// POLLNVAL: the group was removed), since polling it again would return at
// once, forever.
func pollLoop(fd int, events int16, stopFD int, drain bool, c chan<- struct{}) error {
	fds := []unix.PollFd{{Fd: int32(fd), Events: events}, {Fd: int32(stopFD), Events: unix.POLLIN}}
	var counter [8]byte
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("cgroup: watch: poll: %w", err)
		}
		if fds[1].Revents != 0 {
			return nil
		}
		re := fds[0].Revents
		if re&events != 0 && drain {
			unix.Read(fd, counter[:]) // EAGAIN when already drained: nothing to do
		}
		if re != 0 {
			select {
			case c <- struct{}{}:
			default:
			}
		}
		if re&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
			return fmt.Errorf("cgroup: watch: the group's file reported poll events %#x: it no longer signals", re)
		}
	}
}
