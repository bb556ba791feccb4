package taskshared

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nativepool/nativepool/pool"
)

// benchRegistry is what the benchmarks drive: our Registry, or the baseline.
type benchRegistry interface {
	acquire(id int64, create func() (pool.Pool, error)) (release func(), err error)
}

type ours struct{ r *Registry }

func (o ours) acquire(id int64, create func() (pool.Pool, error)) (func(), error) {
	h, err := o.r.Acquire(id, create)
	if err != nil {
		return nil, err
	}
	return h.Close, nil
}

// cometBaseline is Comet's first task-shared registry (reference §3,
// "Baseline (refcount)"): one mutex over a map, create under the lock, a
// plain counter, no leak detection, no compare-and-delete. The floor our
// extra guarantees are measured against.
type cometBaseline struct {
	mu      sync.Mutex
	entries map[int64]*baselineEntry
}

type baselineEntry struct {
	p     pool.Pool
	plans int
}

func (c *cometBaseline) acquire(id int64, create func() (pool.Pool, error)) (func(), error) {
	c.mu.Lock()
	e := c.entries[id]
	if e == nil {
		p, err := create()
		if err != nil {
			c.mu.Unlock()
			return nil, err
		}
		e = &baselineEntry{p: p}
		c.entries[id] = e
	}
	e.plans++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		if e.plans--; e.plans == 0 {
			delete(c.entries, id)
		}
		c.mu.Unlock()
	}, nil
}

func benchRegistries() []struct {
	name string
	make func() benchRegistry
} {
	return []struct {
		name string
		make func() benchRegistry
	}{
		{"impl=registry", func() benchRegistry { return ours{NewRegistry(quiet)} }},
		{"impl=comet_baseline", func() benchRegistry {
			return &cometBaseline{entries: make(map[int64]*baselineEntry)}
		}},
	}
}

// sharedPool is what create returns in the benchmarks, so that they time
// the registry, not pool construction.
var sharedPool = pool.NewUnbounded()

func createShared() (pool.Pool, error) { return sharedPool, nil }

// BenchmarkRegistryTaskLifecycle times one task lifecycle: the first plan
// creates the task's entry, the plan closes, the entry goes away.
// "parallel" runs lifecycles of distinct tasks on every P.
func BenchmarkRegistryTaskLifecycle(b *testing.B) {
	for _, impl := range benchRegistries() {
		b.Run(impl.name+"/mode=single", func(b *testing.B) {
			r := impl.make()
			b.ReportAllocs()
			for i := range int64(b.N) {
				release, err := r.acquire(i, createShared)
				if err != nil {
					b.Fatal(err)
				}
				release()
			}
		})
		b.Run(impl.name+"/mode=parallel", func(b *testing.B) {
			r := impl.make()
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					release, err := r.acquire(next.Add(1), createShared)
					if err != nil {
						b.Error(err)
						return
					}
					release()
				}
			})
		})
	}
}

// BenchmarkRegistryJoinLiveTask times a further plan of a live task: it
// joins the existing entry and closes, while the first plan keeps it alive.
// "parallel" has every P join the same task, the contended case.
func BenchmarkRegistryJoinLiveTask(b *testing.B) {
	for _, impl := range benchRegistries() {
		for _, mode := range []string{"single", "parallel"} {
			b.Run(impl.name+"/mode="+mode, func(b *testing.B) {
				r := impl.make()
				keep, err := r.acquire(1, createShared)
				if err != nil {
					b.Fatal(err)
				}
				defer keep()
				b.ReportAllocs()
				join := func() {
					release, err := r.acquire(1, createShared)
					if err != nil {
						b.Error(err)
						return
					}
					release()
				}
				if mode == "single" {
					for range b.N {
						join()
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						join()
					}
				})
			})
		}
	}
}

// BenchmarkRegistryLifecycleAmongLiveTasks is one task lifecycle (create,
// close, removal) while 1 to 10,000 other tasks stay live: the registry's
// cost must stay flat as the executor runs more tasks.
func BenchmarkRegistryLifecycleAmongLiveTasks(b *testing.B) {
	for _, live := range []int{1, 10, 100, 1_000, 10_000} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			r := NewRegistry()
			for i := range live {
				h, err := r.Acquire(int64(-1-i), createShared)
				if err != nil {
					b.Fatal(err)
				}
				defer h.Close()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range int64(b.N) {
				h, err := r.Acquire(i, createShared)
				if err != nil {
					b.Fatal(err)
				}
				h.Close()
			}
		})
	}
}
