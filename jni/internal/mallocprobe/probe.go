// Package mallocprobe observes glibc's malloc from Go tests (cgo is not
// allowed in _test.go files): whether a block of a given size is served by
// mmap, and whether freeing it returns it to the OS. It is test scaffolding
// for jni's mallopt policy and is linked into no library.
package mallocprobe

/*
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

// np_sink keeps the compiler from eliding a malloc/memset/free pair whose
// memory nobody reads (GCC does at -O2).
static void *volatile np_sink;

// np_raise_dynamic frees a mmapped 4 MiB block, so that glibc's dynamic
// adjustment (when on) raises M_MMAP_THRESHOLD to 4 MiB and
// M_TRIM_THRESHOLD to 8 MiB.
static void np_raise_dynamic(void) {
	// A small block first, so that this thread's arena exists before the
	// big one (a new thread arena is sized for its first request, which
	// would then come from its top instead of mmap).
	np_sink = malloc(64);
	free(np_sink);
	char *big = malloc(4 << 20);
	if (big != NULL) {
		memset(big, 1, 4 << 20);
	}
	np_sink = big;
	free(np_sink);
}

// np_probe first mallocs, touches and frees a 4 MiB block (glibc serves it
// with mmap and, with its dynamic threshold on, raises M_MMAP_THRESHOLD to
// 4 MiB on the free), then mallocs and touches `size` bytes: *held is how
// much mmapped memory (mallinfo2.hblkhd) grew while the block is held,
// *after how much is left of that growth once it is freed.
static void np_probe(size_t size, long *held, long *after) {
	np_raise_dynamic();
	struct mallinfo2 a = mallinfo2();
	char *p = malloc(size);
	if (p != NULL) {
		memset(p, 1, size);
	}
	np_sink = p;
	struct mallinfo2 b = mallinfo2();
	free(np_sink);
	struct mallinfo2 c = mallinfo2();
	*held = (long)b.hblkhd - (long)a.hblkhd;
	*after = (long)c.hblkhd - (long)a.hblkhd;
}

// np_trim_probe mallocs n blocks of 64 KiB (below any mmap threshold: from
// the heap, growing its top), touches and frees them all, and returns how
// much of the arenas' system memory (mallinfo2.arena) they grew by that
// stays after the frees.
static long np_trim_probe(int n) {
	struct mallinfo2 a = mallinfo2();
	void *blocks[256];
	if (n > 256) {
		n = 256;
	}
	for (int i = 0; i < n; i++) {
		blocks[i] = malloc(64 << 10);
		if (blocks[i] != NULL) {
			memset(blocks[i], 1, 64 << 10);
		}
	}
	for (int i = n - 1; i >= 0; i--) {
		np_sink = blocks[i];
		free(np_sink);
	}
	struct mallinfo2 c = mallinfo2();
	return (long)c.arena - (long)a.arena;
}
*/
import "C"

// Mmapped reports whether a malloc of size bytes, made right after a
// 4 MiB block was freed, is served by mmap (held: the mmapped bytes it
// added while held) and what of that stays mapped after its free (after).
// Under glibc's dynamic threshold a 256 KiB block then comes from the heap
// (held = 0); under a fixed 128 KiB threshold it is mmapped (held >= size)
// and unmapped on free (after = 0).
func Mmapped(size int) (held, after int64) {
	var h, a C.long
	C.np_probe(C.size_t(size), &h, &a)
	return int64(h), int64(a)
}

// RaiseDynamicThresholds frees a 4 MiB mmapped block: under glibc's
// dynamic adjustment this raises the mmap threshold to 4 MiB and the trim
// threshold to 8 MiB, as a JVM's large frees do before the plugin starts.
func RaiseDynamicThresholds() { C.np_raise_dynamic() }

// HeapKept mallocs n 64 KiB blocks from the heap, frees them all, and
// returns how many bytes of arena memory they added stay after the frees:
// about 0 when glibc trims at 128 KiB, up to n × 64 KiB when its trim
// threshold was raised.
func HeapKept(n int) int64 { return int64(C.np_trim_probe(C.int(n))) }
