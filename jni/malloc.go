package jni

/*
#include <errno.h>
#include <malloc.h>

// np_set_mmap_threshold is mallopt(M_MMAP_THRESHOLD, n): glibc serves
// blocks of n bytes or more with mmap and unmaps them on free, and stops
// raising the threshold (and M_TRIM_THRESHOLD) when such a block is freed,
// exactly as MALLOC_MMAP_THRESHOLD_ would. Returns 1 on success, 0 if glibc
// refused the value (above its maximum, 32 MiB on 64-bit).
static int np_set_mmap_threshold(int n) {
	return mallopt(M_MMAP_THRESHOLD, n);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"

	"github.com/nativepool/nativepool/internal/bridge"
)

// errMallopt is a value glibc's mallopt refused.
var errMallopt = errors.New("mallopt refused the value")

// setMallocMmapThreshold is bridge.ProcessRuntime.SetMallocMmapThreshold on
// glibc (jni/doc.go "Process rules").
func setMallocMmapThreshold(n int64) error {
	if n <= 0 || n > math.MaxInt32 {
		return fmt.Errorf("M_MMAP_THRESHOLD %d: %w", n, errMallopt)
	}
	if C.np_set_mmap_threshold(C.int(n)) != 1 {
		return fmt.Errorf("M_MMAP_THRESHOLD %d (glibc's maximum is 32 MiB): %w", n, errMallopt)
	}
	return nil
}

// processRuntime is the process's ProcessRuntime: the pure-Go default plus
// glibc's mallopt.
func processRuntime() bridge.ProcessRuntime {
	rt := bridge.DefaultProcessRuntime()
	rt.SetMallocMmapThreshold = setMallocMmapThreshold
	return rt
}
