package ffi

import (
	"sync"
)

// liveBuf is what the allocator remembers about one live buffer. It holds no
// Go pointer, so the maps that store it are never scanned by the GC.
type liveBuf struct {
	// n is the charge of the buffer: its capacity in bytes.
	n int64
	// site identifies the buffer's allocation stack in the allocator's
	// siteTable; 0 when allocation sites are off.
	site uint32
	// off is the distance from libc's pointer to the buffer (C memory only).
	off uint32
}

// liveShardBits sets the number of shards of a liveTable: 32, enough that
// two cores rarely meet on one mutex, small enough (2 KiB) for an allocator
// per operator.
const liveShardBits = 5

// liveTable is the set of live buffers of one allocator, keyed by the
// address of their first byte. It is a map split into shards chosen by a
// hash of the address, each behind its own mutex. For this insert-once,
// delete-once pattern it measured about 1.7× cheaper than sync.Map (which
// allocates a node per Store), and level with a single mutex-guarded map on
// a 2-core machine; the shards are for executors with many more cores (see
// bench/RESULTS.md, BenchmarkLiveSet). It is safe for concurrent use; the
// zero value is not usable, call init.
type liveTable struct {
	shards [1 << liveShardBits]liveShard
}

type liveShard struct {
	mu sync.Mutex
	// m is guarded by mu.
	m map[uintptr]liveBuf
	// keep shards on separate cache lines: the mutex is written by every
	// insert and remove.
	_ [64 - 16]byte
}

func (t *liveTable) init() {
	for i := range t.shards {
		t.shards[i].m = make(map[uintptr]liveBuf)
	}
}

// shard picks the shard of address p. Buffers are 64-byte aligned, so the
// low six bits carry nothing; a Fibonacci hash spreads the rest.
func (t *liveTable) shard(p uintptr) *liveShard {
	return &t.shards[(uint64(p>>6)*0x9E3779B97F4A7C15)>>(64-liveShardBits)]
}

// insert records p; if p was already recorded (only possible for Go memory
// that the GC reclaimed without a Free), it returns the stale record.
func (t *liveTable) insert(p uintptr, b liveBuf) (stale liveBuf, replaced bool) {
	s := t.shard(p)
	s.mu.Lock()
	stale, replaced = s.m[p]
	s.m[p] = b
	s.mu.Unlock()
	return stale, replaced
}

// remove forgets p and returns its record; ok is false if p is not live.
func (t *liveTable) remove(p uintptr) (b liveBuf, ok bool) {
	s := t.shard(p)
	s.mu.Lock()
	b, ok = s.m[p]
	if ok {
		delete(s.m, p)
	}
	s.mu.Unlock()
	return b, ok
}

// lookup returns p's record; ok is false if p is not live.
func (t *liveTable) lookup(p uintptr) (b liveBuf, ok bool) {
	s := t.shard(p)
	s.mu.Lock()
	b, ok = s.m[p]
	s.mu.Unlock()
	return b, ok
}

// each calls fn for every live buffer, one shard at a time under that
// shard's lock: fn must not call back into the table. Buffers inserted or
// removed meanwhile may or may not be seen.
func (t *liveTable) each(fn func(p uintptr, b liveBuf)) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for p, b := range s.m {
			fn(p, b)
		}
		s.mu.Unlock()
	}
}

// len is the number of live buffers.
func (t *liveTable) len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
