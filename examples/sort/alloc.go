package extsort

import (
	"errors"
	"fmt"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/pool"
)

// recoverRefusal runs fn, which allocates through the sorter's
// ffi.Allocator, and turns the allocator's refusal panic back into an error
// (ffi.Catch): one wrapping pool.ErrResourcesExhausted when the pool said
// no, which the sorter answers by spilling and retrying; pool.ErrClosed
// after Close. Other panics propagate.
func recoverRefusal(fn func()) error {
	err := ffi.Catch(func() error { fn(); return nil })
	if err == nil {
		return nil
	}
	if errors.Is(err, pool.ErrResourcesExhausted) {
		return fmt.Errorf("extsort: allocation refused: %w", err)
	}
	return fmt.Errorf("extsort: allocation failed: %w", err)
}
