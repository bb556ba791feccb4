package bridge

import (
	"fmt"
	"sync"
	"testing"
)

// handleLookup is what BenchmarkHandleLookup compares: our table against the
// two obvious baselines, a sync.Map and a map behind a sync.RWMutex.
type handleLookup interface {
	insert(v *int) int64
	get(h int64) (*int, bool)
}

type tableLookup struct{ t *HandleTable[*int] }

func (l tableLookup) insert(v *int) int64 {
	h, err := l.t.Insert(v)
	if err != nil {
		panic(err)
	}
	return h
}

func (l tableLookup) get(h int64) (*int, bool) {
	v, err := l.t.Get(h)
	return v, err == nil
}

type syncMapLookup struct {
	m    *sync.Map
	next *int64
}

func (l syncMapLookup) insert(v *int) int64 { *l.next++; l.m.Store(*l.next, v); return *l.next }

func (l syncMapLookup) get(h int64) (*int, bool) {
	v, ok := l.m.Load(h)
	if !ok {
		return nil, false
	}
	return v.(*int), true
}

type rwMapLookup struct {
	mu   *sync.RWMutex
	m    map[int64]*int
	next *int64
}

func (l rwMapLookup) insert(v *int) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	*l.next++
	l.m[*l.next] = v
	return *l.next
}

func (l rwMapLookup) get(h int64) (*int, bool) {
	l.mu.RLock()
	v, ok := l.m[h]
	l.mu.RUnlock()
	return v, ok
}

// BenchmarkHandleLookup measures the lookup every export does, with 1000
// live handles, from parallel goroutines (JVM threads).
func BenchmarkHandleLookup(b *testing.B) {
	impls := []struct {
		name string
		new  func() handleLookup
	}{
		{"impl=HandleTable", func() handleLookup { return tableLookup{NewHandleTable[*int](tagReservation)} }},
		{"impl=syncMap", func() handleLookup { return syncMapLookup{&sync.Map{}, new(int64)} }},
		{"impl=rwMutexMap", func() handleLookup { return rwMapLookup{&sync.RWMutex{}, map[int64]*int{}, new(int64)} }},
	}
	for _, impl := range impls {
		for _, par := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", impl.name, par), func(b *testing.B) {
				l := impl.new()
				hs := make([]int64, 1000)
				for i := range hs {
					v := i
					hs[i] = l.insert(&v)
				}
				b.SetParallelism(par)
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						if _, ok := l.get(hs[i%len(hs)]); !ok {
							b.Fatal("lookup failed")
						}
						i++
					}
				})
			})
		}
	}
}
