package ffi

import (
	"fmt"
	"sync"
	"testing"
)

// liveSet is the operation the allocator needs from its table of live
// buffers: record an address, then take it out.
type liveSet interface {
	insert(p uintptr)
	remove(p uintptr) bool
}

type shardedSet struct{ t liveTable }

func (s *shardedSet) insert(p uintptr) { s.t.insert(p, liveBuf{n: 1}) }
func (s *shardedSet) remove(p uintptr) bool {
	_, ok := s.t.remove(p)
	return ok
}

type syncMapSet struct{ m sync.Map }

func (s *syncMapSet) insert(p uintptr) { s.m.Store(p, liveBuf{n: 1}) }
func (s *syncMapSet) remove(p uintptr) bool {
	_, ok := s.m.LoadAndDelete(p)
	return ok
}

type mutexMapSet struct {
	mu sync.Mutex
	m  map[uintptr]liveBuf
}

func (s *mutexMapSet) insert(p uintptr) {
	s.mu.Lock()
	s.m[p] = liveBuf{n: 1}
	s.mu.Unlock()
}
func (s *mutexMapSet) remove(p uintptr) bool {
	s.mu.Lock()
	_, ok := s.m[p]
	delete(s.m, p)
	s.mu.Unlock()
	return ok
}

// BenchmarkLiveSet compares the sharded table with sync.Map (what arrow-go's
// Mallocator and CheckedAllocator use) and one mutex-guarded map, for one
// insert plus one remove of a 64-byte-aligned address, with a population of
// live entries around it.
func BenchmarkLiveSet(b *testing.B) {
	impls := []struct {
		name string
		make func() liveSet
	}{
		{"sharded", func() liveSet { s := &shardedSet{}; s.t.init(); return s }},
		{"syncmap", func() liveSet { return &syncMapSet{} }},
		{"mutexmap", func() liveSet { return &mutexMapSet{m: make(map[uintptr]liveBuf)} }},
	}
	for _, par := range []bool{false, true} {
		for _, im := range impls {
			b.Run(fmt.Sprintf("parallel=%t/set=%s", par, im.name), func(b *testing.B) {
				s := im.make()
				for i := range 1000 { // a realistic population of live buffers
					s.insert(uintptr(1<<40 + i*4096))
				}
				if !par {
					p := uintptr(1 << 41)
					for b.Loop() {
						s.insert(p)
						s.remove(p)
						p += 64
					}
					return
				}
				var next sync.Mutex
				base := uintptr(1 << 42)
				b.RunParallel(func(pb *testing.PB) {
					next.Lock()
					p := base
					base += 1 << 32
					next.Unlock()
					for pb.Next() {
						s.insert(p)
						s.remove(p)
						p += 64
					}
				})
			})
		}
	}
}
