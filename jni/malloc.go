package jni

/*
#include <errno.h>
#include <malloc.h>

// np_set_mmap_threshold is mallopt(M_MMAP_THRESHOLD, n): glibc serves
// blocks of n bytes or more with mmap and unmaps them on free, and stops
// raising the threshold (and M_TRIM_THRESHOLD) when such a block is freed.
// It then sets M_TRIM_THRESHOLD back to glibc's default (128 KiB), which
// the dynamic adjustment may have raised (to twice the mmap threshold, up
// to 64 MiB) before the plugin started: the state MALLOC_MMAP_THRESHOLD_
// gives a process from its start. Returns 1 on success, 0 if glibc refused
// a value (the threshold above its maximum, 32 MiB on 64-bit).
static int np_set_mmap_threshold(int n) {
	if (mallopt(M_MMAP_THRESHOLD, n) != 1) {
		return 0;
	}
	return mallopt(M_TRIM_THRESHOLD, 128 * 1024);
}

// np_malloc_retained is glibc's mallinfo2().fordblks: the free bytes in
// every arena (top chunk, bins and fastbins), which malloc keeps for reuse
// instead of returning them to the OS. -1 before glibc 2.33 (mallinfo's
// int fields wrap above 2 GiB, so they are not used).
static long long np_malloc_retained(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
	struct mallinfo2 mi = mallinfo2();
	return (long long)mi.fordblks;
#else
	return -1;
#endif
}

// np_malloc_trim is glibc's malloc_trim(0): free memory at the top of the
// heap and whole free pages inside every arena go back to the OS.
static void np_malloc_trim(void) {
#if defined(__GLIBC__)
	malloc_trim(0);
#endif
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

// mallocRetained is bridge.ProcessRuntime.MallocRetained on glibc.
func mallocRetained() int64 {
	return int64(C.np_malloc_retained())
}

// mallocTrim is bridge.ProcessRuntime.MallocTrim on glibc.
func mallocTrim() { C.np_malloc_trim() }

// processRuntime is the process's ProcessRuntime: the pure-Go default plus
// glibc's mallopt, mallinfo2 and malloc_trim.
func processRuntime() bridge.ProcessRuntime {
	rt := bridge.DefaultProcessRuntime()
	rt.SetMallocMmapThreshold = setMallocMmapThreshold
	rt.MallocRetained = mallocRetained
	rt.MallocTrim = mallocTrim
	return rt
}
