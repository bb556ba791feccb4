package arbiter_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/nativepool/nativepool/arbiter"
	"github.com/nativepool/nativepool/pool"
)

// mutexUpstream is the floor: a budget behind one mutex, no per-task rules.
type mutexUpstream struct {
	mu         sync.Mutex
	used, size int64
}

func (m *mutexUpstream) Acquire(n int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := min(n, m.size-m.used)
	m.used += g
	return g, nil
}

func (m *mutexUpstream) Release(n int64) error {
	m.mu.Lock()
	m.used -= n
	m.mu.Unlock()
	return nil
}

// BenchmarkArbiterAcquireRelease times one Acquire+Release pair of 8 MiB (a
// unified pool's chunk) per iteration, against a mutex-guarded counter, with
// one task per goroutine and never short of memory.
func BenchmarkArbiterAcquireRelease(b *testing.B) {
	const chunk = 8 << 20
	for _, tasks := range []int{1, 8, 64} {
		impls := []struct {
			name string
			up   func(i int) pool.Upstream
		}{
			{"impl=arbiter", func() func(int) pool.Upstream {
				a := arbiter.New(1<<40, arbQuiet)
				return func(i int) pool.Upstream {
					return a.NewTask(context.Background(), strconv.Itoa(i)).NewConsumer("c", nil)
				}
			}()},
			{"impl=mutex_counter", func() func(int) pool.Upstream {
				m := &mutexUpstream{size: 1 << 40}
				return func(int) pool.Upstream { return m }
			}()},
		}
		for _, impl := range impls {
			b.Run(impl.name+"/tasks="+strconv.Itoa(tasks), func(b *testing.B) {
				b.ReportAllocs()
				var wg sync.WaitGroup
				per := b.N / tasks
				for i := range tasks {
					up := impl.up(i)
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range per {
							if _, err := up.Acquire(chunk); err != nil {
								b.Error(err)
								return
							}
							if err := up.Release(chunk); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
			})
		}
	}
}
