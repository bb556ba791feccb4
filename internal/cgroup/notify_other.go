//go:build !linux

package cgroup

import (
	"errors"
	"fmt"
)

// NotifyAbove is Linux's usage-threshold wake-up; elsewhere it returns an
// error wrapping errors.ErrUnsupported, so the caller samples at a fixed
// pace.
func (g Group) NotifyAbove(usageBytes int64) (*Watch, error) {
	return nil, fmt.Errorf("cgroup: usage threshold: %w", errors.ErrUnsupported)
}

// NotifyPressure is Linux's PSI-trigger wake-up; elsewhere it returns an
// error wrapping errors.ErrUnsupported, so the caller samples at a fixed
// pace.
func (g Group) NotifyPressure(stallMicros, windowMicros int64) (*Watch, error) {
	return nil, fmt.Errorf("cgroup: pressure trigger: %w", errors.ErrUnsupported)
}
