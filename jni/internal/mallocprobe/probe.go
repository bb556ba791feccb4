// Package mallocprobe observes glibc's malloc from Go tests (cgo is not
// allowed in _test.go files): whether a block of a given size is served by
// mmap, and whether freeing it returns it to the OS. It is test scaffolding
// for jni's mallopt policy and is linked into no library.
package mallocprobe

/*
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

// np_probe first mallocs, touches and frees a 4 MiB block (glibc serves it
// with mmap and, with its dynamic threshold on, raises M_MMAP_THRESHOLD to
// 4 MiB on the free), then mallocs and touches `size` bytes: *held is how
// much mmapped memory (mallinfo2.hblkhd) grew while the block is held,
// *after how much is left of that growth once it is freed.
// np_sink keeps the compiler from eliding a malloc/memset/free pair whose
// memory nobody reads (GCC does at -O2).
static void *volatile np_sink;

static void np_probe(size_t size, long *held, long *after) {
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
