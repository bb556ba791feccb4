// Package mallocprobe observes glibc's malloc from Go tests (cgo is not
// allowed in _test.go files): whether a block of a given size is served by
// mmap, and whether freeing it returns it to the OS; and it drives malloc
// for benchmarks (Churn) and burns CPU beside it (Spin). It is test
// scaffolding for jni's mallopt policy and stats reads and is linked into
// no library.
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

// np_ring is each thread's live blocks for np_churn: a steady heap, so
// that the churn neither grows nor trims it.
static __thread char *np_ring[256];

// np_churn makes n malloc/free pairs on the calling thread: each frees a
// random block of the thread's 256 live ones and mallocs 1 to 32 KiB in its
// place (past the largest tcache bin, so that every malloc and free takes
// its arena's lock, as native code's buffers do), writing its first byte.
// It returns a sum of the bytes freed, so that nothing is elided.
static long np_churn(int n, unsigned seed) {
	long sum = 0;
	for (int k = 0; k < n; k++) {
		seed = seed * 1103515245u + 12345u;
		char **slot = &np_ring[(seed >> 4) % 256];
		if (*slot != NULL) {
			sum += (*slot)[0];
		}
		free(*slot);
		*slot = malloc(1024 + (seed >> 12) % (31 * 1024));
		if (*slot != NULL) {
			(*slot)[0] = 1;
		}
	}
	return sum;
}

// np_spin burns about as much CPU as n additions, touching no memory
// malloc owns: a reader that competes for the CPU only.
static long np_spin(long n) {
	volatile long x = 0;
	for (long i = 0; i < n; i++) {
		x += i;
	}
	return x;
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

// Churn makes n malloc/free pairs of 1 to 32 KiB on the calling thread,
// among 256 blocks the thread keeps live (each pair takes its arena's
// lock); seed picks the blocks and sizes.
func Churn(n int, seed uint32) int64 {
	return int64(C.np_churn(C.int(n), C.uint(seed)))
}

// Spin burns CPU for about n additions and touches no malloc memory.
func Spin(n int64) int64 { return int64(C.np_spin(C.long(n))) }
